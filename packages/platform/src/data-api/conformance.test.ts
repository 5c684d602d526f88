/**
 * PostgREST conformance of `{app_url}/rest/v1`: @supabase/postgrest-js (and raw fetch where
 * the client hides headers) against a deployed app with the library fixture, asserting the
 * data, statuses, counts and headers PostgREST 12 answers with.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { PostgrestClient } from '@supabase/postgrest-js'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { bearer, deployDataApp, expectJson, LIBRARY_SQL, rest, restClient, signIn } from '../../test/data-fixture.ts'

type Row = Record<string, any>
interface Answer {
  data: any
  error: any
  status: number
  count: number | null
}

/** Awaits a postgrest-js query, asserting it succeeded with `status`. */
async function ok(query: PromiseLike<Answer>, status = 200): Promise<Answer> {
  const answer = await query
  assert.equal(answer.error, null, JSON.stringify(answer.error))
  assert.equal(answer.status, status)
  return answer
}

/** Awaits a postgrest-js query, asserting PostgREST's error shape, status and code. */
async function fails(query: PromiseLike<Answer>, status: number, code: string): Promise<Row> {
  const answer = await query
  assert.equal(answer.status, status, JSON.stringify(answer.error))
  assert.equal(answer.error?.code, code, JSON.stringify(answer.error))
  assert.deepEqual(Object.keys(answer.error).sort(), ['code', 'details', 'hint', 'message'])
  return answer.error as Row
}

const ids = (rows: Row[]) => rows.map((row) => row.id)

describe(`data API conformance with postgrest-js (${backend})`, () => {
  let h: Harness
  let db: PostgrestClient
  let jwt: string
  let userId: string
  const slug = 'library'
  const get = (path: string, headers: Record<string, string> = {}) => rest(h, slug, path, { token: jwt, headers })

  before(async () => {
    h = await startHarness()
    const owner = await h.createOwner('owner@acme.test')
    await deployDataApp(h, owner.token, { slug, sql: LIBRARY_SQL })
    const reader = await signIn(h, slug, 'reader@acme.test')
    jwt = reader.accessToken
    userId = reader.userId
    db = restClient(h, slug, bearer(jwt))
  })
  after(() => h.close())

  describe('select', () => {
    test('select names the columns returned, in order', async () => {
      const { data } = await ok(db.from('authors').select('id,name').order('id'))
      assert.deepEqual(data, [{ id: 1, name: 'Ann' }, { id: 2, name: 'Bob' }, { id: 3, name: 'Cid' }, { id: 4, name: 'Dee' }])
    })

    test('select=* returns every column with arrays, jsonb, ranges and nulls as JSON', async () => {
      const { data } = await ok(db.from('books').select('*').eq('id', 1))
      assert.deepEqual(Object.keys(data[0]), ['id', 'title', 'author_id', 'editor_id', 'pages', 'price', 'period', 'summary', 'search'])
      assert.equal(data[0].period, '[2020-01-01,2020-06-30)')
      assert.equal(data[0].price, 19.99)
      const [ann] = (await ok(db.from('authors').select('*').eq('id', 1))).data
      assert.deepEqual(ann.tags, ['fiction', 'poetry'])
      assert.deepEqual(ann.profile, { city: 'Oslo', langs: ['no', 'en'], age: '40' })
      assert.equal((await ok(db.from('authors').select('email').eq('id', 2))).data[0].email, null)
    })

    test('an empty select returns one empty object per row', async () => {
      const res = await get('/authors?select=&id=lt.3')
      assert.deepEqual(await expectJson(res, 200), [{}, {}])
    })

    test('aliases rename columns', async () => {
      const { data } = await ok(db.from('authors').select('writer:name,key:id').eq('id', 1))
      assert.deepEqual(data, [{ writer: 'Ann', key: 1 }])
    })

    test('casts convert the selected value', async () => {
      const { data } = await ok(db.from('books').select('id::text,price::text,pages_text:pages::text').eq('id', 1))
      assert.deepEqual(data, [{ id: '1', price: '19.99', pages_text: '320' }])
    })

    test('JSON paths select into jsonb, named after the last key or the column for an index', async () => {
      const { data } = await ok(db.from('authors')
        .select('profile->city,city_text:profile->>city,profile->langs->0,second:profile->langs->>1,profile->>age::int').eq('id', 1))
      assert.deepEqual(data, [{ city: 'Oslo', city_text: 'Oslo', langs: 'no', second: 'en', age: 40 }])
      const missing = await ok(db.from('authors').select('profile->city').eq('id', 3))
      assert.deepEqual(missing.data, [{ city: null }])
    })

    test('JSON paths index into array columns', async () => {
      const { data } = await ok(db.from('authors').select('id,tags->0,last:tags->>-1').order('id').limit(2))
      assert.deepEqual(data, [{ id: 1, tags: 'fiction', last: 'poetry' }, { id: 2, tags: 'fiction', last: 'fiction' }])
    })

    test('views read like tables', async () => {
      const { data } = await ok(db.from('book_titles').select('title,author').eq('author', 'Ann').order('id'))
      assert.deepEqual(data, [{ title: 'The Silent Sea', author: 'Ann' }, { title: 'Winter Poems', author: 'Ann' }])
    })
  })

  describe('embedding', () => {
    test('many-to-one embeds an object, null when the foreign key is null', async () => {
      const { data } = await ok(db.from('books').select('title,author:authors!author_id(name)').order('id'))
      assert.deepEqual(data, [
        { title: 'The Silent Sea', author: { name: 'Ann' } },
        { title: 'Winter Poems', author: { name: 'Ann' } },
        { title: 'Roman Nights', author: { name: 'Bob' } },
        { title: 'Lost Pages', author: null },
        { title: 'Sea of Stars', author: { name: 'Cid' } },
      ])
    })

    test('a hint may name the foreign key constraint, and the foreign key column may name the embed', async () => {
      const byConstraint = await ok(db.from('books').select('title,editor:authors!books_editor_id_fkey(name)').eq('id', 1))
      assert.deepEqual(byConstraint.data, [{ title: 'The Silent Sea', editor: { name: 'Bob' } }])
      const byColumn = await ok(db.from('books').select('title,editor_id(name)').eq('id', 3))
      assert.deepEqual(byColumn.data, [{ title: 'Roman Nights', editor_id: { name: 'Ann' } }])
    })

    test('one-to-many embeds an array, empty when nothing matches, with its own order and limit', async () => {
      const { data } = await ok(db.from('authors').select('name,books!author_id(title)')
        .order('id').order('id', { referencedTable: 'books', ascending: false }))
      assert.deepEqual(data, [
        { name: 'Ann', books: [{ title: 'Winter Poems' }, { title: 'The Silent Sea' }] },
        { name: 'Bob', books: [{ title: 'Roman Nights' }] },
        { name: 'Cid', books: [{ title: 'Sea of Stars' }] },
        { name: 'Dee', books: [] },
      ])
      const limited = await ok(db.from('authors').select('name,books!author_id(title)').eq('id', 1)
        .order('id', { referencedTable: 'books' }).limit(1, { referencedTable: 'books' }))
      assert.deepEqual(limited.data, [{ name: 'Ann', books: [{ title: 'The Silent Sea' }] }])
    })

    test('a one-to-one relationship (a unique foreign key) embeds an object from both sides', async () => {
      const { data } = await ok(db.from('authors').select('name,author_stats(followers)').order('id').limit(3))
      assert.deepEqual(data, [
        { name: 'Ann', author_stats: { followers: 120 } },
        { name: 'Bob', author_stats: { followers: 7 } },
        { name: 'Cid', author_stats: null },
      ])
      const back = await ok(db.from('author_stats').select('followers,authors(name)').eq('author_id', 2))
      assert.deepEqual(back.data, [{ followers: 7, authors: { name: 'Bob' } }])
    })

    test('nested embeds go several levels deep', async () => {
      const { data } = await ok(db.from('reviews').select('stars,books(title,author:authors!author_id(name))').eq('id', 3))
      assert.deepEqual(data, [{ stars: 2, books: { title: 'Roman Nights', author: { name: 'Bob' } } }])
    })

    test('filters on an embed filter the embedded rows, not the parents', async () => {
      const { data } = await ok(db.from('authors').select('name,books!author_id(title)').gt('books.pages', 300).order('id'))
      assert.deepEqual(data, [
        { name: 'Ann', books: [{ title: 'The Silent Sea' }] },
        { name: 'Bob', books: [{ title: 'Roman Nights' }] },
        { name: 'Cid', books: [] },
        { name: 'Dee', books: [] },
      ])
    })

    test('!inner keeps only parents with matching embedded rows', async () => {
      const { data } = await ok(db.from('authors').select('name,books!author_id!inner(title)').gt('books.pages', 300).order('id'))
      assert.deepEqual(data.map((a: Row) => a.name), ['Ann', 'Bob'])
      const manyToOne = await ok(db.from('books').select('title,author:authors!author_id!inner(name)').eq('author.name', 'Cid'))
      assert.deepEqual(manyToOne.data, [{ title: 'Sea of Stars', author: { name: 'Cid' } }])
    })

    test('an embed can be filtered for null or not null, like a left or an anti join', async () => {
      const withAuthor = await ok(db.from('books').select('id,author:authors!author_id(name)').not('author', 'is', null).order('id'))
      assert.deepEqual(ids(withAuthor.data), [1, 2, 3, 5])
      const without = await ok(db.from('authors').select('id,books!author_id()').is('books', null))
      assert.deepEqual(ids(without.data), [4])
    })

    test('or and and trees apply to embedded resources', async () => {
      const { data } = await ok(db.from('authors').select('name,books!author_id(title)')
        .or('pages.lt.100,pages.gt.400', { referencedTable: 'books' }).in('id', [1, 2]).order('id'))
      assert.deepEqual(data, [{ name: 'Ann', books: [{ title: 'Winter Poems' }] }, { name: 'Bob', books: [{ title: 'Roman Nights' }] }])
      const res = await get('/authors?select=name,books!author_id(title)&books.and=(pages.gt.100,title.like.*Sea*)&id=eq.1')
      assert.deepEqual(await expectJson(res, 200), [{ name: 'Ann', books: [{ title: 'The Silent Sea' }] }])
    })

    test('a spread merges a to-one embed into the parent', async () => {
      const { data } = await ok(db.from('books').select('title,...authors!author_id(author_name:name)').eq('id', 3))
      assert.deepEqual(data, [{ title: 'Roman Nights', author_name: 'Bob' }])
    })

    test('ordering by an embed not in select is PGRST108, by a to-many embed PGRST118', async () => {
      const missing = await expectJson(await get('/books?select=id&order=author(name)'), 400)
      assert.equal(missing.code, 'PGRST108')
      const toMany = await expectJson(await get('/authors?select=id,books!author_id(title)&order=books(title)'), 400)
      assert.equal(toMany.code, 'PGRST118')
    })

    test('an ambiguous embed is PGRST201 (300) and an unrelated one PGRST200 (400)', async () => {
      const ambiguous = await fails(db.from('books').select('authors(name)'), 300, 'PGRST201')
      assert.match(ambiguous.hint, /books_author_id_fkey|books_editor_id_fkey/)
      await fails(db.from('authors').select('reviews(stars)'), 400, 'PGRST200')
    })
  })

  describe('filters', () => {
    const bookIds = async (query: PromiseLike<Answer>) => ids((await ok(query)).data)
    const books = () => db.from('books').select('id').order('id')
    const authors = () => db.from('authors').select('id').order('id')

    test('eq and neq', async () => {
      assert.deepEqual(await bookIds(authors().eq('name', 'Ann')), [1])
      assert.deepEqual(await bookIds(authors().neq('name', 'Ann')), [2, 3, 4])
    })

    test('gt, gte, lt and lte (null never matches)', async () => {
      assert.deepEqual(await bookIds(books().gt('pages', 200)), [1, 3])
      assert.deepEqual(await bookIds(books().gte('pages', 200)), [1, 3, 5])
      assert.deepEqual(await bookIds(books().lt('pages', 200)), [2])
      assert.deepEqual(await bookIds(books().lte('pages', 200)), [2, 5])
      assert.deepEqual(await bookIds(books().gte('price', 14)), [1, 5])
      assert.deepEqual(await bookIds(authors().lt('born', '1985-01-01')), [1])
    })

    test('like and ilike with * as the wildcard', async () => {
      assert.deepEqual(await bookIds(books().like('title', '*Sea*')), [1, 5])
      assert.deepEqual(await bookIds(books().like('title', '*sea*')), [])
      assert.deepEqual(await bookIds(books().ilike('title', '*sea*')), [1, 5])
      assert.deepEqual(await bookIds(books().likeAnyOf('title', ['Lost*', 'Roman*'])), [3, 4])
    })

    test('match and imatch are POSIX regular expressions', async () => {
      assert.deepEqual(await bookIds(books().filter('title', 'match', '^[RW]')), [2, 3])
      assert.deepEqual(await bookIds(books().filter('title', 'imatch', 'SEA$')), [1])
    })

    test('in, including quoted values with commas and the empty list', async () => {
      assert.deepEqual(await bookIds(authors().in('name', ['Ann', 'Cid'])), [1, 3])
      assert.deepEqual(await bookIds(authors().in('name', ['Ann', 'Bob, Jr'])), [1])
      assert.deepEqual(await bookIds(authors().in('id', [])), [])
      assert.deepEqual(await bookIds(authors().not('id', 'in', '(1,2)')), [3, 4])
    })

    test('is null, not null, true, false and unknown', async () => {
      assert.deepEqual(await bookIds(authors().is('email', null)), [2, 4])
      assert.deepEqual(await bookIds(authors().not('email', 'is', null)), [1, 3])
      assert.deepEqual(await bookIds(authors().is('active', true)), [1, 4])
      assert.deepEqual(await bookIds(authors().is('active', false)), [2])
      assert.deepEqual(await bookIds(authors().filter('active', 'is', 'unknown')), [3])
    })

    test('isdistinct treats null as a value', async () => {
      assert.deepEqual(await bookIds(authors().filter('active', 'isdistinct', 'true')), [2, 3])
    })

    test('fts, plfts, phfts and wfts search a tsvector column with a language', async () => {
      assert.deepEqual(await bookIds(books().textSearch('search', 'sea & star', { config: 'english' })), [5])
      assert.deepEqual(await bookIds(books().textSearch('search', 'quiet waters', { config: 'english', type: 'plain' })), [1])
      assert.deepEqual(await bookIds(books().textSearch('search', 'sea of stars', { config: 'english', type: 'phrase' })), [5])
      assert.deepEqual(await bookIds(books().textSearch('search', '"silent sea" or rome', { config: 'english', type: 'websearch' })), [1, 3])
      assert.deepEqual(await bookIds(books().textSearch('search', 'sea')), [1, 5])
    })

    test('full-text search also works on a text column, with the language applied to both sides', async () => {
      assert.deepEqual(await bookIds(books().textSearch('summary', 'poem', { config: 'english' })), [2])
      assert.deepEqual(await bookIds(books().not('summary', 'fts', 'crime')), [1, 2, 5])
    })

    test('cs, cd and ov on arrays, ranges and jsonb', async () => {
      assert.deepEqual(await bookIds(authors().contains('tags', ['poetry'])), [1, 4])
      assert.deepEqual(await bookIds(authors().containedBy('tags', ['fiction', 'poetry'])), [1, 2, 3])
      assert.deepEqual(await bookIds(authors().overlaps('tags', ['essay', 'fiction'])), [1, 2, 4])
      assert.deepEqual(await bookIds(books().overlaps('period', '[2020-03-01,2020-04-01)')), [1])
      assert.deepEqual(await bookIds(books().contains('period', '[2021-02-01,2021-03-01)')), [2])
      assert.deepEqual(await bookIds(books().rangeLt('period', '[2020-01-01,2020-02-01)')), [5])
      assert.deepEqual(await bookIds(authors().contains('profile', { city: 'Oslo' })), [1, 4])
    })

    test('filters on JSON paths compare text with ->> and jsonb with ->', async () => {
      assert.deepEqual(await bookIds(authors().eq('profile->>city', 'Rome')), [2])
      assert.deepEqual(await bookIds(authors().eq('profile->langs->>0', 'no')), [1])
      assert.deepEqual(await bookIds(authors().eq('profile->langs', '["it"]')), [2])
    })

    test('not. negates any operator', async () => {
      assert.deepEqual(await bookIds(books().not('pages', 'gt', 200)), [2, 5])
      assert.deepEqual(await bookIds(books().not('title', 'like', '*Sea*')), [2, 3, 4])
    })

    test('or and and trees nest, and not. negates a tree', async () => {
      assert.deepEqual(await bookIds(books().or('pages.gt.400,pages.lt.100')), [2, 3])
      assert.deepEqual(await bookIds(books().or('id.eq.1,and(pages.gt.300,pages.lt.500)')), [1, 3])
      const and = await get('/books?select=id&and=(pages.gt.100,or(author_id.eq.1,author_id.eq.3))&order=id')
      assert.deepEqual(ids(await expectJson(and, 200)), [1, 5])
      const negated = await get('/books?select=id&not.or=(pages.gt.300,pages.is.null)&order=id')
      assert.deepEqual(ids(await expectJson(negated, 200)), [2, 5])
      assert.deepEqual(await bookIds(books().or('title.in.("Lost Pages","Sea of Stars"),price.is.null')), [3, 4, 5])
    })

    test('several filters on one request are all applied', async () => {
      assert.deepEqual(await bookIds(books().gt('pages', 100).lt('price', 15)), [5])
      assert.deepEqual(await bookIds(books().match({ author_id: 1, pages: 80 })), [2])
    })
  })

  describe('order and windows', () => {
    test('order by several columns with directions and nulls placement', async () => {
      const desc = await ok(db.from('books').select('id').order('pages', { ascending: false }))
      assert.deepEqual(ids(desc.data), [4, 3, 1, 5, 2], 'desc puts nulls first, as PostgreSQL does')
      const nullsLast = await ok(db.from('books').select('id').order('pages', { ascending: false, nullsFirst: false }))
      assert.deepEqual(ids(nullsLast.data), [3, 1, 5, 2, 4])
      const nullsFirst = await ok(db.from('books').select('id').order('pages', { nullsFirst: true }))
      assert.deepEqual(ids(nullsFirst.data), [4, 2, 5, 1, 3])
      const res = await get('/books?select=id&order=author_id.asc.nullsfirst,pages.desc')
      assert.deepEqual(ids(await expectJson(res, 200)), [4, 1, 2, 3, 5])
    })

    test('order by a JSON path and by a column of a to-one embed', async () => {
      const json = await get('/authors?select=id&order=profile->>age.desc.nullslast,id')
      assert.deepEqual(ids(await expectJson(json, 200)), [1, 2, 3, 4])
      const related = await get('/books?select=id,author:authors!author_id(name)&order=author(name).desc.nullslast,id')
      assert.deepEqual(ids(await expectJson(related, 200)), [5, 3, 1, 2, 4])
    })

    test('limit and offset page through rows; Content-Range reports the window', async () => {
      const res = await get('/books?select=id&order=id&limit=2&offset=1')
      assert.deepEqual(ids(await expectJson(res, 200)), [2, 3])
      assert.equal(res.headers.get('content-range'), '1-2/*')
      const { data, count, status } = await ok(db.from('books').select('id', { count: 'exact' }).order('id').range(1, 2), 206)
      assert.deepEqual(ids(data), [2, 3])
      assert.equal(count, 5)
      assert.equal(status, 206)
    })

    test('the Range header selects a window, with Range-Unit items', async () => {
      const res = await get('/books?select=id&order=id', { range: '1-3', 'range-unit': 'items' })
      assert.deepEqual(ids(await expectJson(res, 200)), [2, 3, 4])
      assert.equal(res.headers.get('content-range'), '1-3/*')
      const open = await get('/books?select=id&order=id', { range: '3-', prefer: 'count=exact' })
      assert.deepEqual(ids(await expectJson(open, 206)), [4, 5])
      assert.equal(open.headers.get('content-range'), '3-4/5')
    })

    test('a complete result is 200 with the total; an empty one is */total', async () => {
      const all = await get('/books?select=id', { prefer: 'count=exact' })
      assert.equal((await expectJson(all, 200)).length, 5)
      assert.equal(all.headers.get('content-range'), '0-4/5')
      assert.equal(all.headers.get('preference-applied'), 'count=exact')
      const none = await get('/books?select=id&id=gt.100', { prefer: 'count=exact' })
      assert.deepEqual(await expectJson(none, 200), [])
      assert.equal(none.headers.get('content-range'), '*/0')
    })

    test('an offset past the total is 416 PGRST103 with count, and an empty page without', async () => {
      const res = await get('/books?select=id&offset=9', { prefer: 'count=exact' })
      const body = await expectJson(res, 416)
      assert.equal(body.code, 'PGRST103')
      assert.equal(body.details, 'An offset of 9 was requested, but there are only 5 rows.')
      assert.equal(res.headers.get('content-range'), '*/5')
      const uncounted = await get('/books?select=id&offset=9')
      assert.deepEqual(await expectJson(uncounted, 200), [])
      assert.equal(uncounted.headers.get('content-range'), '*/*')
    })

    test('an inverted Range header is 416 PGRST103', async () => {
      const res = await get('/books', { range: '5-1' })
      assert.equal((await expectJson(res, 416)).code, 'PGRST103')
    })

    test('HEAD answers the headers of GET without a body', async () => {
      const { data, count, status } = await ok(db.from('books').select('*', { count: 'exact', head: true }).gt('pages', 100))
      assert.equal(data, null)
      assert.equal(count, 3)
      assert.equal(status, 200)
      const res = await rest(h, slug, '/books?limit=1', { method: 'HEAD', token: jwt, headers: { prefer: 'count=exact' } })
      assert.equal(res.status, 206)
      assert.equal(res.headers.get('content-range'), '0-0/5')
      assert.equal(await res.text(), '')
    })
  })

  describe('counts', () => {
    test('count=exact counts every matching row, beyond the window', async () => {
      const { data, count } = await ok(db.from('numbers').select('n', { count: 'exact' }).gt('n', 1500).limit(3), 206)
      assert.equal(data.length, 3)
      assert.equal(count, 500)
    })

    test("count=planned is the planner's estimate, not a count", async () => {
      const all = await get('/numbers?select=n&limit=1', { prefer: 'count=planned' })
      assert.equal(all.headers.get('content-range'), '0-0/2000')
      assert.equal(all.headers.get('preference-applied'), 'count=planned')
      // The planner never estimates fewer than one row, so an impossible filter still "has" one.
      const { count, data } = await ok(db.from('numbers').select('n', { count: 'planned' }).lt('n', 0), 206)
      assert.deepEqual(data, [])
      assert.equal(count, 1)
    })

    test('count=estimated is exact below 1000 rows and the estimate above', async () => {
      const small = await ok(db.from('numbers').select('n', { count: 'estimated' }).lte('n', 10).limit(2), 206)
      assert.equal(small.count, 10)
      const large = await get('/numbers?select=n&limit=1', { prefer: 'count=estimated' })
      assert.equal(large.headers.get('content-range'), '0-0/2000')
    })
  })

  describe('single objects', () => {
    test('Accept: application/vnd.pgrst.object+json returns one object', async () => {
      const { data } = await ok(db.from('authors').select('name').eq('id', 2).single())
      assert.deepEqual(data, { name: 'Bob' })
      const res = await get('/authors?select=name&id=eq.2', { accept: 'application/vnd.pgrst.object+json' })
      assert.deepEqual(await expectJson(res, 200), { name: 'Bob' })
      assert.match(res.headers.get('content-type')!, /^application\/vnd\.pgrst\.object\+json/)
    })

    test('no row or several rows for a single object is 406 PGRST116', async () => {
      const none = await fails(db.from('authors').select('name').eq('id', 99).single(), 406, 'PGRST116')
      assert.equal(none.details, 'The result contains 0 rows')
      const many = await fails(db.from('authors').select('name').single(), 406, 'PGRST116')
      assert.equal(many.details, 'The result contains 4 rows')
      const maybe = await ok(db.from('authors').select('name').eq('id', 99).maybeSingle())
      assert.equal(maybe.data, null)
    })

    test('nulls=stripped leaves null fields out', async () => {
      const { data } = await ok(db.from('authors').select('id,email').in('id', [1, 2]).order('id').stripNulls())
      assert.deepEqual(data, [{ id: 1, email: 'ann@example.test' }, { id: 2 }])
    })
  })

  describe('numbers as PostgreSQL wrote them', () => {
    // PostgREST sends the rows' JSON as PostgreSQL writes it; parsed into JavaScript numbers
    // and written again, a bigint past 2^53 or a long numeric would lose digits.
    const precise = 'precise'
    const getPrecise = (path: string, headers: Record<string, string> = {}) => rest(h, precise, path, { headers })

    before(async () => {
      const owner = await h.createOwner('precise-owner@acme.test')
      await deployDataApp(h, owner.token, {
        slug: precise,
        sql: `create table readings (id bigint primary key, reading numeric, note text, meta jsonb);
              insert into readings values (9007199254740993, 12345678901234567890.123456789, null, null),
                (2, 0.1, 'x', '{"a": null, "b": {"c": null, "d": 1}, "e": [null, {"f": null}]}');
              create function all_readings() returns setof readings language sql stable as $$ select * from readings $$;
              create function largest() returns bigint language sql stable as $$ select max(id) from readings $$;`,
      })
    })

    test('a bigint past 2^53 and a long numeric keep every digit, in a list, a single object and an rpc', async () => {
      const list = await getPrecise('/readings?select=id,reading&order=id.desc')
      assert.equal(list.status, 200)
      const text = await list.text()
      assert.match(text, /"id":\s*9007199254740993\b/)
      assert.match(text, /"reading":\s*12345678901234567890\.123456789\b/)
      assert.equal(list.headers.get('content-range'), '0-1/*')
      const single = await getPrecise('/readings?id=eq.9007199254740993', { accept: 'application/vnd.pgrst.object+json;nulls=stripped' })
      assert.equal(single.status, 200)
      const object = await single.text()
      assert.match(object, /^\{"id":9007199254740993,"reading":12345678901234567890\.123456789\}$/)
      const called = await getPrecise('/rpc/all_readings?select=id&id=gt.2')
      assert.match(await called.text(), /^\[\{"id":9007199254740993\}\]$/)
    })

    test('nulls=stripped drops null keys at every depth and keeps null array elements', async () => {
      const res = await getPrecise('/readings?select=id,note,meta&id=eq.2', { accept: 'application/vnd.pgrst.array+json;nulls=stripped' })
      assert.deepEqual(await expectJson(res, 200), [{ id: 2, note: 'x', meta: { b: { d: 1 }, e: [null, {}] } }])
    })

    test('a written row, a key in Location and a function\'s scalar keep every digit', async () => {
      const owner = await signIn(h, precise, 'precise-writer@acme.test')
      const written = await rest(h, precise, '/readings?select=id,reading', {
        token: owner.accessToken, json: { id: '9007199254740995', reading: '0.30000000000000000001' },
        headers: { prefer: 'return=representation' },
      })
      assert.equal(written.status, 201, await written.clone().text())
      assert.match(await written.text(), /^\[\{"id":9007199254740995,"reading":0\.30000000000000000001\}\]$/)
      const located = await rest(h, precise, '/readings', {
        token: owner.accessToken, json: { id: '9007199254740997' }, headers: { prefer: 'return=headers-only' },
      })
      assert.equal(located.status, 201)
      assert.equal(located.headers.get('location'), '/readings?id=eq.9007199254740997')
      const scalar = await getPrecise('/rpc/largest')
      assert.equal(await scalar.text(), '9007199254740997')
    })

    test('HEAD answers the headers of the rows without a body', async () => {
      const res = await rest(h, precise, '/readings?id=eq.2', { method: 'HEAD' })
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('content-range'), '0-0/*')
      assert.equal(await res.text(), '')
    })
  })

  describe('insert', () => {
    test('POST inserts one object: 201, no body, Content-Range */*', async () => {
      const res = await rest(h, slug, '/notes', { token: jwt, json: { title: 'first' } })
      assert.equal(res.status, 201)
      assert.equal(await res.text(), '')
      assert.equal(res.headers.get('content-range'), '*/*')
      assert.equal(res.headers.get('location'), null)
    })

    test('return=representation returns the rows with their defaults and the caller as auth.uid()', async () => {
      const { data } = await ok(db.from('notes').insert({ title: 'second', tags: ['a', 'b'] }).select('title,body,rank,tags,created_by'), 201)
      assert.deepEqual(data, [{ title: 'second', body: 'empty', rank: 5, tags: ['a', 'b'], created_by: userId }])
    })

    test('an array inserts several rows; keys missing from a row are null unless missing=default', async () => {
      const nulls = await ok(db.from('notes').insert([{ title: 'x1', rank: 1 }, { title: 'x2' }]).select('title,rank'), 201)
      assert.deepEqual(nulls.data, [{ title: 'x1', rank: 1 }, { title: 'x2', rank: null }])
      const defaults = await ok(db.from('notes').insert([{ title: 'y1', rank: 1 }, { title: 'y2' }], { defaultToNull: false }).select('title,rank'), 201)
      assert.deepEqual(defaults.data, [{ title: 'y1', rank: 1 }, { title: 'y2', rank: 5 }])
    })

    test('columns= limits the inserted keys; the others take their defaults', async () => {
      const res = await rest(h, slug, '/notes?columns=title&select=title,rank,body', {
        token: jwt, json: { title: 'only title', rank: 99, body: 'ignored' }, headers: { prefer: 'return=representation' },
      })
      assert.deepEqual(await expectJson(res, 201), [{ title: 'only title', rank: 5, body: 'empty' }])
      assert.equal(res.headers.get('preference-applied'), 'return=representation')
    })

    test('count=exact on an insert reports how many rows were written', async () => {
      const { count } = await ok(db.from('notes').insert([{ title: 'c1' }, { title: 'c2' }], { count: 'exact' }), 201)
      assert.equal(count, 2)
    })

    test('return=headers-only answers 201 with the Location of the new row', async () => {
      const res = await rest(h, slug, '/notes', { token: jwt, json: { title: 'located' }, headers: { prefer: 'return=headers-only' } })
      assert.equal(res.status, 201)
      assert.equal(await res.text(), '')
      const location = res.headers.get('location')!
      assert.match(location, /^\/notes\?id=eq\.\d+$/)
      const back = await get(`${location}&select=title`)
      assert.deepEqual(await expectJson(back, 200), [{ title: 'located' }])
    })

    test('an empty object inserts a row of defaults and an empty array inserts nothing', async () => {
      const one = await rest(h, slug, '/settings?select=key', {
        token: jwt, json: {}, headers: { prefer: 'return=representation' },
      })
      assert.equal((await expectJson(one, 400)).code, '23502', 'key has no default')
      const none = await rest(h, slug, '/notes', { token: jwt, json: [], headers: { prefer: 'return=representation' } })
      assert.deepEqual(await expectJson(none, 201), [])
    })

    test('the representation of a write can embed related rows', async () => {
      const { data } = await ok(db.from('notes').insert({ title: 'about Bob', author_id: 2 }).select('title,author:authors(name)'), 201)
      assert.deepEqual(data, [{ title: 'about Bob', author: { name: 'Bob' } }])
    })

    test('a single object can be asked for on insert', async () => {
      const { data } = await ok(db.from('notes').insert({ title: 'solo' }).select('title').single(), 201)
      assert.deepEqual(data, { title: 'solo' })
    })
  })

  describe('upsert', () => {
    test('merge-duplicates inserts (201) then updates (200) on the primary key', async () => {
      const first = await ok(db.from('settings').upsert({ key: 'theme', value: 'light' }).select('key,value'), 201)
      assert.deepEqual(first.data, [{ key: 'theme', value: 'light' }])
      const again = await ok(db.from('settings').upsert({ key: 'theme', value: 'dark' }).select('key,value,version'), 200)
      assert.deepEqual(again.data, [{ key: 'theme', value: 'dark', version: 1 }])
    })

    test('ignore-duplicates keeps the existing row and returns only new ones', async () => {
      await ok(db.from('settings').upsert({ key: 'lang', value: 'en' }), 201)
      const res = await rest(h, slug, '/settings?select=key,value', {
        token: jwt, json: [{ key: 'lang', value: 'fr' }, { key: 'zone', value: 'utc' }],
        headers: { prefer: 'resolution=ignore-duplicates,return=representation' },
      })
      assert.deepEqual(await expectJson(res, 201), [{ key: 'zone', value: 'utc' }])
      assert.equal(res.headers.get('preference-applied'), 'resolution=ignore-duplicates, return=representation')
      const { data } = await ok(db.from('settings').select('value').eq('key', 'lang'))
      assert.deepEqual(data, [{ value: 'en' }])
    })

    test('on_conflict names a unique key other than the primary key', async () => {
      await ok(db.from('counters').upsert({ slug: 'visits', value: 1 }, { onConflict: 'slug' }), 201)
      const minimal = await rest(h, slug, '/counters?on_conflict=slug', {
        token: jwt, json: { slug: 'visits', value: 2 }, headers: { prefer: 'resolution=merge-duplicates' },
      })
      assert.equal(minimal.status, 200, 'every row was an update')
      assert.equal(await minimal.text(), '')
      const { data } = await ok(db.from('counters').upsert({ slug: 'visits', value: 7 }, { onConflict: 'slug' }).select('slug,value'), 200)
      assert.deepEqual(data, [{ slug: 'visits', value: 7 }])
    })

    test('merge-duplicates updates only the keys sent and keeps the others', async () => {
      await ok(db.from('settings').insert({ key: 'font', value: 'serif', version: 3 }), 201)
      const res = await rest(h, slug, '/settings?select=key,value,version', {
        token: jwt, json: { key: 'font', value: 'sans' }, headers: { prefer: 'resolution=merge-duplicates,return=representation' },
      })
      assert.deepEqual(await expectJson(res, 200), [{ key: 'font', value: 'sans', version: 3 }])
    })

    test('without a resolution a duplicate key is 409 23505', async () => {
      await fails(db.from('settings').insert({ key: 'theme', value: 'x' }), 409, '23505')
    })
  })

  describe('update and delete', () => {
    before(async () => {
      await ok(db.from('notes').insert([{ title: 'edit-a', rank: 10 }, { title: 'edit-b', rank: 20 }, { title: 'edit-c', rank: 30 }]), 201)
    })

    test('PATCH updates the filtered rows: 204 with Content-Range of the rows changed', async () => {
      const res = await rest(h, slug, '/notes?title=like.edit-*', { method: 'PATCH', token: jwt, json: { body: 'edited' } })
      assert.equal(res.status, 204)
      assert.equal(res.headers.get('content-range'), '0-2/*')
      const { data } = await ok(db.from('notes').select('body').like('title', 'edit-*'))
      assert.deepEqual(data.map((r: Row) => r.body), ['edited', 'edited', 'edited'])
    })

    test('PATCH with return=representation and count=exact', async () => {
      const { data, count, status } = await ok(db.from('notes').update({ rank: 11 }, { count: 'exact' }).eq('title', 'edit-a').select('title,rank'))
      assert.equal(status, 200)
      assert.deepEqual(data, [{ title: 'edit-a', rank: 11 }])
      assert.equal(count, 1)
    })

    test('PATCH that matches nothing is 204 with */*', async () => {
      const res = await rest(h, slug, '/notes?id=eq.-1', { method: 'PATCH', token: jwt, json: { body: 'x' } })
      assert.equal(res.status, 204)
      assert.equal(res.headers.get('content-range'), '*/*')
    })

    test('a single-object PATCH that would change several rows is 406 and changes nothing', async () => {
      await fails(db.from('notes').update({ body: 'clobbered' }).like('title', 'edit-*').select().single(), 406, 'PGRST116')
      const { data } = await ok(db.from('notes').select('body').like('title', 'edit-*'))
      assert.deepEqual(data.map((r: Row) => r.body), ['edited', 'edited', 'edited'])
    })

    test('PATCH with order and limit changes only the first rows', async () => {
      const res = await rest(h, slug, '/notes?title=like.edit-*&order=rank.desc&limit=1&select=title', {
        method: 'PATCH', token: jwt, json: { body: 'top' }, headers: { prefer: 'return=representation' },
      })
      assert.deepEqual(await expectJson(res, 200), [{ title: 'edit-c' }])
    })

    test('DELETE removes the filtered rows: 204, or 200 with the deleted rows', async () => {
      const { data } = await ok(db.from('notes').delete().eq('title', 'edit-b').select('title'))
      assert.deepEqual(data, [{ title: 'edit-b' }])
      const res = await rest(h, slug, '/notes?title=eq.edit-c', { method: 'DELETE', token: jwt, headers: { prefer: 'count=exact' } })
      assert.equal(res.status, 204)
      assert.equal(res.headers.get('content-range'), '*/1')
      assert.equal((await ok(db.from('notes').select('id').like('title', 'edit-*'))).data.length, 1)
    })

    test('handling=strict with max-affected refuses a change of more rows and rolls it back', async () => {
      await ok(db.from('notes').insert([{ title: 'cap-1' }, { title: 'cap-2' }]), 201)
      const refused = await rest(h, slug, '/notes?title=like.cap-*', {
        method: 'PATCH', token: jwt, json: { body: 'capped' }, headers: { prefer: 'handling=strict, max-affected=1' },
      })
      const error = await expectJson(refused, 400)
      assert.equal(error.code, 'PGRST124')
      assert.equal(error.details, 'The query affects 2 rows')
      assert.deepEqual((await ok(db.from('notes').select('body').like('title', 'cap-*'))).data, [{ body: 'empty' }, { body: 'empty' }])
      const res = await rest(h, slug, '/notes?title=eq.cap-1', {
        method: 'DELETE', token: jwt, headers: { prefer: 'handling=strict, max-affected=1' },
      })
      assert.equal(res.status, 204)
      assert.equal(res.headers.get('preference-applied'), 'handling=strict, max-affected=1')
    })

    test('return=minimal is 204 and says so in Preference-Applied', async () => {
      const res = await rest(h, slug, '/notes?title=eq.edit-a', { method: 'DELETE', token: jwt, headers: { prefer: 'return=minimal' } })
      assert.equal(res.status, 204)
      assert.equal(res.headers.get('preference-applied'), 'return=minimal')
    })
  })

  describe('rpc', () => {
    test('a scalar function with arguments from a JSON body (POST)', async () => {
      const { data } = await ok(db.rpc('add', { a: 1, b: 2 }))
      assert.equal(data, 3)
    })

    test('a scalar function with arguments from the query string (GET), defaults applied', async () => {
      const { data } = await ok(db.rpc('add', { a: 5 }, { get: true }))
      assert.equal(data, 6)
      const res = await get('/rpc/add?a=1&b=2')
      assert.equal(await expectJson(res, 200), 3)
      assert.equal(res.headers.get('content-range'), '0-0/*')
    })

    test('a set-returning function of a table takes select, filters, order, limit and count', async () => {
      const { data } = await ok(db.rpc('books_by', { author: 1 }).select('title').order('id'))
      assert.deepEqual(data, [{ title: 'The Silent Sea' }, { title: 'Winter Poems' }])
      const filtered = await ok(db.rpc('books_by', { author: 1 }, { get: true }).select('title').gt('pages', 100))
      assert.deepEqual(filtered.data, [{ title: 'The Silent Sea' }])
      const counted = await ok(db.rpc('books_by', { author: 1 }, { count: 'exact' }).select('id').order('id').limit(1), 206)
      assert.deepEqual(counted.data, [{ id: 1 }])
      assert.equal(counted.count, 2)
      const embedded = await ok(db.rpc('books_by', { author: 2 }).select('title,author:authors!author_id(name)'))
      assert.deepEqual(embedded.data, [{ title: 'Roman Nights', author: { name: 'Bob' } }])
    })

    test('a set-returning call answers a single object, HEAD, and 416 past its rows', async () => {
      const { data } = await ok(db.rpc('books_by', { author: 2 }).select('title').single())
      assert.deepEqual(data, { title: 'Roman Nights' })
      const head = await rest(h, slug, '/rpc/books_by?author=1', { method: 'HEAD', token: jwt, headers: { prefer: 'count=exact' } })
      assert.equal(head.status, 200)
      assert.equal(head.headers.get('content-range'), '0-1/2')
      assert.equal(await head.text(), '')
      const past = await get('/rpc/books_by?author=1&offset=5', { prefer: 'count=exact' })
      assert.equal((await expectJson(past, 416)).code, 'PGRST103')
    })

    test('a set-returning function of scalars returns an array of values', async () => {
      const { data } = await ok(db.rpc('author_names'))
      assert.deepEqual(data, ['Ann', 'Bob', 'Cid', 'Dee'])
    })

    test('a function returning a table type takes filters on its columns', async () => {
      const { data } = await ok(db.rpc('long_books', {}, { get: true }).select('title'))
      assert.deepEqual(data, [{ title: 'The Silent Sea' }, { title: 'Roman Nights' }])
      const filtered = await ok(db.rpc('long_books', { min_pages: 100 }).lt('pages', 300))
      assert.deepEqual(filtered.data, [{ title: 'Sea of Stars', pages: 200 }])
    })

    test('a function returning one composite returns an object', async () => {
      const { data } = await ok(db.rpc('first_book').select('id,title'))
      assert.deepEqual(data, { id: 1, title: 'The Silent Sea' })
    })

    test('a void function answers 204', async () => {
      const res = await rest(h, slug, '/rpc/touch', { token: jwt, json: {} })
      assert.equal(res.status, 204)
      assert.equal(await res.text(), '')
    })

    test('a volatile function runs with POST and is refused with GET (read-only transaction, 405)', async () => {
      assert.equal((await ok(db.rpc('bump', { counter: 'hits' }))).data, 1)
      assert.equal((await ok(db.rpc('bump', { counter: 'hits', step: 4 }))).data, 5)
      const error = await fails(db.rpc('bump', { counter: 'hits' }, { get: true }), 405, '25006')
      assert.match(error.message, /read-only transaction/)
      assert.deepEqual((await ok(db.from('counters').select('value').eq('slug', 'hits'))).data, [{ value: 5 }])
    })

    test('auth.uid(), auth.role() and auth.is_system() describe the caller', async () => {
      const { data } = await ok(db.rpc('whoami'))
      assert.deepEqual(data, { uid: userId, role: 'authenticated', system: false })
    })

    test('raise exception is P0001 (400) with its message and hint', async () => {
      const error = await fails(db.rpc('fail_with', { message: 'no luck' }), 400, 'P0001')
      assert.equal(error.message, 'no luck')
      assert.equal(error.hint, 'raised on purpose')
    })

    test('an unknown function or argument is PGRST202 (404)', async () => {
      await fails(db.rpc('nope'), 404, 'PGRST202')
      await fails(db.rpc('add', { a: 1, c: 2 }), 404, 'PGRST202')
    })
  })

  describe('errors', () => {
    test('an unknown table is PGRST205 (404)', async () => {
      const error = await fails(db.from('nope').select(), 404, 'PGRST205')
      assert.match(error.message, /Could not find the table/)
    })

    test('an unknown column is 42703 (400) in select, filters and order', async () => {
      await fails(db.from('books').select('nope'), 400, '42703')
      await fails(db.from('books').select().eq('nope', 1), 400, '42703')
      await fails(db.from('books').select().order('nope'), 400, '42703')
    })

    test('an unknown column in a payload is PGRST204 (400)', async () => {
      await fails(db.from('notes').insert({ title: 't', nope: 1 }), 400, 'PGRST204')
    })

    test('a malformed filter is PGRST100 (400)', async () => {
      const res = await get('/books?pages=between.1.2')
      const body = await expectJson(res, 400)
      assert.equal(body.code, 'PGRST100')
      assert.match(body.message, /failed to parse filter/)
    })

    test('a value of the wrong type is 22P02 (400)', async () => {
      await fails(db.from('books').select().eq('pages', 'many'), 400, '22P02')
    })

    test('constraint violations: not null 23502 (400), check 23514 (400), foreign key 23503 (409)', async () => {
      await fails(db.from('notes').insert({ body: 'no title' }), 400, '23502')
      await fails(db.from('notes').insert({ title: 't', rank: 1000 }), 400, '23514')
      await fails(db.from('notes').insert({ title: 't', author_id: 99 }), 409, '23503')
    })

    test('invalid JSON is PGRST102 (400)', async () => {
      const res = await rest(h, slug, '/notes', { token: jwt, body: '{"title":', headers: { 'content-type': 'application/json' } })
      assert.equal((await expectJson(res, 400)).code, 'PGRST102')
    })

    test('an Accept type the API cannot produce is 406 PGRST107', async () => {
      const res = await get('/books', { accept: 'text/html' })
      assert.equal((await expectJson(res, 406)).code, 'PGRST107')
    })
  })
})
