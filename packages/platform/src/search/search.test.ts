/**
 * `ctx.data.search` end to end in real Deno Functions (issue 16; spec 2.11, 4.3, 5.5, 8) on
 * a fixed corpus, over both vector paths (`real[]`, exact cosine in SQL; `vector(3)`,
 * pgvector where the database has it): ranking evidence against values computed here
 * (cosine in plain arithmetic over the float32 values, reciprocal rank fusion by hand,
 * `ts_rank` by a separate SQL call), ties by id, filters, every input rule and error code,
 * row-level security (hits never include rows the caller cannot read), record size failing
 * rather than truncating; and, where the database offers both paths, the two paths' hits and
 * evidence compared with each other.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { findNamespace } from '../namespaces/namespaces.ts'

interface Note { id: number; title: string; body: string; category: string | null; visible: boolean; embedding: number[] | null }

/** The corpus. Row 6 matches best but no caller may read it (RLS); 3 and 9 tie on the vector. */
const CORPUS: Note[] = [
  { id: 1, title: 'Green tea', body: 'Brewing green tea at a low temperature', category: 'drink', visible: true, embedding: [1, 0, 0] },
  { id: 2, title: 'Black tea', body: 'Strong black tea with milk', category: 'drink', visible: true, embedding: [0.9, 0.1, 0] },
  { id: 3, title: 'Coffee', body: 'Espresso and filter coffee', category: 'drink', visible: true, embedding: [0, 1, 0] },
  { id: 4, title: 'Tea garden', body: 'Walking through a tea garden in the hills', category: 'travel', visible: true, embedding: [0.5, 0.5, 0.5] },
  { id: 5, title: 'Mountains', body: 'Hiking in the mountains', category: 'travel', visible: true, embedding: [0, 0, 1] },
  { id: 6, title: 'Secret tea', body: 'tea tea tea, the secret blend', category: 'drink', visible: false, embedding: [1, 0.2, 0] },
  { id: 7, title: 'Notes', body: 'tea notes without a vector', category: null, visible: true, embedding: null },
  { id: 8, title: 'Zero', body: 'a zero vector', category: 'misc', visible: true, embedding: [0, 0, 0] },
  { id: 9, title: 'Twin', body: 'the twin of coffee', category: 'drink', visible: true, embedding: [0, 1, 0] },
  { id: 10, title: 'Oolong', body: 'Oolong tea, half oxidised', category: 'drink', visible: true, embedding: [0.7, 0.3, 0.1] },
]
const QUERY_VECTOR = [1, 0.2, 0]

function literal(note: Note, path: 'exact' | 'pgvector'): string {
  const text = (value: string | null) => value === null ? 'null' : `'${value.replaceAll("'", "''")}'`
  const vector = note.embedding === null ? 'null' : path === 'exact' ? `'{${note.embedding.join(',')}}'` : `'[${note.embedding.join(',')}]'`
  return `(${note.id}, ${text(note.title)}, ${text(note.body)}, ${text(note.category)}, ${note.visible}, ${vector})`
}

function migration(path: 'exact' | 'pgvector'): string {
  return `create table notes (
  id integer primary key,
  title text not null,
  body text not null,
  category text,
  visible boolean not null,
  embedding ${path === 'exact' ? 'real[]' : 'vector(3)'}
);
alter table notes enable row level security;
create policy notes_read on notes for select using (visible or auth.is_system());
insert into notes values ${CORPUS.map((note) => literal(note, path)).join(',\n  ')};
create table bigs (id integer primary key, title text not null, body text not null);
insert into bigs values (1, 'small tea', 'short'), (2, 'large tea', repeat('x', 16400));
create table many (id integer primary key, title text not null, embedding ${path === 'exact' ? 'real[]' : 'vector(3)'});
insert into many select i, 'tea', ${path === 'exact'
    ? `array[cos((151 - i) * 0.005), sin((151 - i) * 0.005), 0]::real[]`
    : `('[' || cos((151 - i) * 0.005) || ',' || sin((151 - i) * 0.005) || ',0]')::vector`} from generate_series(1, 150) i;
`
}

const SEARCHES = `data:
  search:
    - name: notes
      table: notes
      select: [id, title]
      filters: [category, visible]
      fullText:
        language: english
        columns: [title, body]
      vector:
        column: embedding
        dimensions: 3
        model: tiny-embed
    - name: words
      table: notes
      select: [id]
      fullText:
        language: english
        columns: [body]
    - name: many
      table: many
      select: [id]
      fullText:
        language: simple
        columns: [title]
      vector:
        column: embedding
        dimensions: 3
        model: tiny-embed
    - name: big
      table: bigs
      select: [id, body]
      fullText:
        language: simple
        columns: [title]
`

const FUNCTIONS = `functions:
  - name: find
    entrypoint: functions/find.ts
    access: public
  - name: sysFind
    entrypoint: functions/find.ts
    access: system
`

/** The options travel as JSON text (the schema helpers have no free-form object). */
const FIND = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ name: string(), options: string() }),
  async handler({ input, data }) {
    try {
      return await data.search(input.name, JSON.parse(input.options))
    } catch (error) {
      return { error: error.code ?? String(error.message) }
    }
  },
})`

/** Exact cosine distance in plain arithmetic over the float32 values the database stores. */
function cosineDistance(a: number[], b: number[]): number {
  const x = a.map(Math.fround)
  const y = b.map(Math.fround)
  let dot = 0, xx = 0, yy = 0
  for (let i = 0; i < x.length; i += 1) { dot += x[i]! * y[i]!; xx += x[i]! * x[i]!; yy += y[i]! * y[i]! }
  return 1 - dot / (Math.sqrt(xx) * Math.sqrt(yy))
}

/** The vector candidates a reader of visible rows gets: by distance, then id. */
function expectedVectorRanking(rows: Note[]): { id: number; distance: number }[] {
  return rows
    .filter((note) => note.embedding !== null && note.embedding.some((v) => v !== 0))
    .map((note) => ({ id: note.id, distance: cosineDistance(note.embedding!, QUERY_VECTOR) }))
    .sort((a, b) => a.distance - b.distance || a.id - b.id)
}

const CLOSE = 1e-6

for (const path of ['exact', 'pgvector'] as const) describe(`ctx.data.search over the ${path} vector path (${backend})`, () => {
  let h: Harness
  let ownerToken: string
  let available = true
  const slug = `search${path === 'exact' ? 'exact' : 'pgv'}`

  before(async () => {
    h = await startHarness()
    const health = await (await h.request('/v1/health')).json() as { search: { vectorPaths: string[] } }
    if (!health.search.vectorPaths.includes(path)) { available = false; return }
    const { token } = await h.createOwner(`owner@${slug}.test`)
    ownerToken = token
    assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
    const files = bundle({
      'service.yaml': manifest(slug, FUNCTIONS + SEARCHES),
      'functions/find.ts': FIND,
      'database/migrations/0001_notes.sql': migration(path),
    })
    for (const at of [`/v1/apps/${slug}/deployments`, `/v1/apps/${slug}/dev/trial/deployments`]) {
      const res = await h.request(at, { token, json: files })
      assert.equal(res.status, 201, await res.text())
    }
  })
  after(async () => { await h.close() })

  /** Searches as an anonymous caller of the public app (RLS: visible rows only). */
  async function find(name: string, options: unknown): Promise<any> {
    const res = await h.request('/_service/functions/find', {
      host: slug, headers: { 'x-service-sdk': '1' }, json: { name, options: JSON.stringify(options) },
    })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    return JSON.parse(text)
  }

  /** Searches as the app (a system Function, which the policy lets read every row). */
  async function findAsSystem(name: string, options: unknown): Promise<any> {
    const app = (await findAppBySlug(h.t.db, slug))!
    const fn = await h.platform.functions.resolve(app, 'sysFind')
    const result = await h.platform.functions.run(fn!, { input: { name, options: JSON.stringify(options) }, user: null })
    assert.ok(result.ok && 'value' in result, JSON.stringify(result))
    return (result as { value: unknown }).value
  }

  const skipUnlessAvailable = (t: { skip: (message: string) => void }) => {
    if (!available) t.skip(`this database has no ${path}`)
    return !available
  }

  test('vector mode: exact cosine distance, similarity 1 - distance, ranks, ties by id; no fusion, no full-text evidence', async (t) => {
    if (skipUnlessAvailable(t)) return
    const { hits } = await find('notes', { mode: 'vector', vector: QUERY_VECTOR, model: 'tiny-embed', limit: 50 })
    const expected = expectedVectorRanking(CORPUS.filter((note) => note.visible))
    assert.deepEqual(hits.map((hit: any) => hit.record.id), expected.map((row) => row.id))
    // Rows 3 and 9 have the same vector: id decides.
    assert.ok(hits.findIndex((hit: any) => hit.record.id === 3) < hits.findIndex((hit: any) => hit.record.id === 9))
    for (const [index, hit] of hits.entries()) {
      assert.deepEqual(Object.keys(hit.record).sort(), ['id', 'title'])
      assert.ok(Math.abs(hit.vectorDistance - expected[index]!.distance) < CLOSE, `${hit.vectorDistance} against ${expected[index]!.distance}`)
      assert.ok(Math.abs(hit.vectorSimilarity - (1 - expected[index]!.distance)) < CLOSE)
      assert.equal(hit.vectorRank, index + 1)
      assert.equal(hit.fullTextScore, null)
      assert.equal(hit.fullTextRank, null)
      assert.equal(hit.fusionScore, null)
    }
  })

  test('full-text mode: matching visible rows ranked by score then id; no vector evidence, no fusion', async (t) => {
    if (skipUnlessAvailable(t)) return
    const { hits } = await find('notes', { mode: 'fullText', query: '  tea  ', limit: 50 })
    assert.deepEqual(hits.map((hit: any) => hit.record.id).sort((a: number, b: number) => a - b), [1, 2, 4, 7, 10])
    for (const [index, hit] of hits.entries()) {
      assert.equal(hit.fullTextRank, index + 1)
      assert.ok(hit.fullTextScore > 0)
      if (index > 0) {
        const previous = hits[index - 1]
        assert.ok(previous.fullTextScore > hit.fullTextScore || (previous.fullTextScore === hit.fullTextScore && previous.record.id < hit.record.id))
      }
      assert.equal(hit.vectorDistance, null)
      assert.equal(hit.vectorSimilarity, null)
      assert.equal(hit.vectorRank, null)
      assert.equal(hit.fusionScore, null)
    }
  })

  test('fullTextScore is ts_rank of the declared columns against websearch_to_tsquery, computed here by a separate SQL call', async (t) => {
    if (skipUnlessAvailable(t)) return
    const app = (await findAppBySlug(h.t.db, slug))!
    const schema = (await findNamespace(h.t.db, app.id))!.schemaName
    for (const query of ['tea', 'green tea', '"tea garden"', 'tea -green', 'coffee or mountains', 'oxidised oolong']) {
      // The documented formula (docs/api.md): the declared columns joined with a space, english.
      const expected = await h.t.db.query<{ id: number; score: number }>(
        `select id, ts_rank(to_tsvector('english', title || ' ' || body), websearch_to_tsquery('english', $1))::float8 as score
           from "${schema}".notes
          where visible and to_tsvector('english', title || ' ' || body) @@ websearch_to_tsquery('english', $1)
          order by score desc, id`, [query])
      assert.ok(expected.length > 0, query)
      const { hits } = await find('notes', { mode: 'fullText', query, limit: 50 })
      assert.deepEqual(hits.map((hit: any) => hit.record.id), expected.map((row) => row.id), query)
      for (const [index, hit] of hits.entries()) {
        assert.equal(hit.fullTextScore, expected[index]!.score, `${query}: row ${hit.record.id}`)
        assert.equal(hit.fullTextRank, index + 1)
      }
    }
  })

  test('hybrid mode: fusion is the sum of 1 / (60 + rank) over the components a row is in, computed by hand', async (t) => {
    if (skipUnlessAvailable(t)) return
    const lexical = (await find('notes', { mode: 'fullText', query: 'tea', limit: 50 })).hits as any[]
    const semantic = expectedVectorRanking(CORPUS.filter((note) => note.visible))
    const fused = new Map<number, number>()
    lexical.forEach((hit, index) => fused.set(hit.record.id, (fused.get(hit.record.id) ?? 0) + 1 / (60 + index + 1)))
    semantic.forEach((row, index) => fused.set(row.id, (fused.get(row.id) ?? 0) + 1 / (60 + index + 1)))
    const expected = [...fused.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])
    const { hits } = await find('notes', { mode: 'hybrid', query: 'tea', vector: QUERY_VECTOR, model: 'tiny-embed', limit: 50 })
    assert.deepEqual(hits.map((hit: any) => hit.record.id), expected.map(([id]) => id))
    for (const [index, hit] of hits.entries()) {
      assert.ok(Math.abs(hit.fusionScore - expected[index]![1]) < 1e-12)
      const lexicalIndex = lexical.findIndex((other) => other.record.id === hit.record.id)
      const semanticIndex = semantic.findIndex((row) => row.id === hit.record.id)
      assert.equal(hit.fullTextRank, lexicalIndex === -1 ? null : lexicalIndex + 1)
      assert.equal(hit.fullTextScore, lexicalIndex === -1 ? null : lexical[lexicalIndex].fullTextScore)
      assert.equal(hit.vectorRank, semanticIndex === -1 ? null : semanticIndex + 1)
      if (semanticIndex === -1) assert.equal(hit.vectorDistance, null)
      else assert.ok(Math.abs(hit.vectorDistance - semantic[semanticIndex]!.distance) < CLOSE)
    }
    // Row 7 (no vector) has full-text evidence only; row 5 (no "tea") vector evidence only.
    assert.equal(hits.find((hit: any) => hit.record.id === 7).vectorRank, null)
    assert.equal(hits.find((hit: any) => hit.record.id === 5).fullTextRank, null)
    // The limit keeps the best.
    const top = await find('notes', { mode: 'hybrid', query: 'tea', vector: QUERY_VECTOR, model: 'tiny-embed', limit: 3 })
    assert.deepEqual(top.hits.map((hit: any) => hit.record.id), expected.slice(0, 3).map(([id]) => id))
  })

  test('RLS: a row the caller cannot read is never a hit (nor a candidate); the app itself reads it', async (t) => {
    if (skipUnlessAvailable(t)) return
    for (const options of [
      { mode: 'fullText', query: 'secret tea', limit: 50 },
      { mode: 'vector', vector: [1, 0.2, 0], model: 'tiny-embed', limit: 50 },
      { mode: 'hybrid', query: 'tea', vector: [1, 0.2, 0], model: 'tiny-embed', limit: 50 },
    ]) {
      const { hits } = await find('notes', options)
      assert.ok(!hits.some((hit: any) => hit.record.id === 6), JSON.stringify(options))
      // Candidate ranks are counted after RLS: the first visible row is rank 1.
      if (hits.length > 0) assert.equal(hits[0].fullTextRank ?? hits[0].vectorRank, 1)
      const system = await findAsSystem('notes', options)
      assert.equal(system.hits[0].record.id, 6, JSON.stringify(system))
    }
  })

  test('where: declared scalar equality filters, null meaning IS NULL, applied before candidates are ranked', async (t) => {
    if (skipUnlessAvailable(t)) return
    const travel = await find('notes', { mode: 'vector', vector: QUERY_VECTOR, model: 'tiny-embed', where: { category: 'travel' } })
    assert.deepEqual(travel.hits.map((hit: any) => [hit.record.id, hit.vectorRank]),
      expectedVectorRanking(CORPUS.filter((note) => note.visible && note.category === 'travel')).map((row, index) => [row.id, index + 1]))
    const uncategorised = await find('notes', { mode: 'fullText', query: 'tea', where: { category: null } })
    assert.deepEqual(uncategorised.hits.map((hit: any) => hit.record.id), [7])
    const hiddenAsked = await find('notes', { mode: 'fullText', query: 'tea', where: { visible: false } })
    assert.deepEqual(hiddenAsked.hits, [])
  })

  test('the default limit is 10, the range 1 to 50', async (t) => {
    if (skipUnlessAvailable(t)) return
    const one = await find('notes', { mode: 'vector', vector: QUERY_VECTOR, model: 'tiny-embed', limit: 1 })
    assert.equal(one.hits.length, 1)
    const all = await find('notes', { mode: 'vector', vector: QUERY_VECTOR, model: 'tiny-embed' })
    assert.equal(all.hits.length, expectedVectorRanking(CORPUS.filter((note) => note.visible)).length)
    for (const limit of [0, 51, 2.5, '5']) {
      assert.deepEqual(await find('notes', { mode: 'vector', vector: QUERY_VECTOR, model: 'tiny-embed', limit }), { error: 'SEARCH_INPUT_INVALID' }, String(limit))
    }
  })

  test('every input rule fails with its own code', async (t) => {
    if (skipUnlessAvailable(t)) return
    const vector = { mode: 'vector', vector: QUERY_VECTOR, model: 'tiny-embed' }
    const cases: [string, unknown, string][] = [
      ['nothing', { mode: 'fullText', query: 'tea' }, 'SEARCH_NOT_DECLARED'],
      ['notes', { mode: 'semantic', query: 'tea' }, 'SEARCH_INPUT_INVALID'],
      ['notes', { query: 'tea' }, 'SEARCH_INPUT_INVALID'],
      ['notes', 'tea', 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'fullText', query: 'tea', extra: 1 }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'fullText' }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'fullText', query: '   ' }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'fullText', query: 'a'.repeat(2049) }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'fullText', query: 7 }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'fullText', query: 'tea', vector: QUERY_VECTOR }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'fullText', query: 'tea', model: 'tiny-embed' }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, query: 'tea' }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'vector', vector: QUERY_VECTOR }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'vector', model: 'tiny-embed' }, 'SEARCH_INPUT_INVALID'],
      ['notes', { mode: 'hybrid', query: 'tea', model: 'tiny-embed' }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, model: 'tiny-embed-v2' }, 'SEARCH_MODEL_MISMATCH'],
      ['notes', { ...vector, model: 'Tiny-Embed' }, 'SEARCH_MODEL_MISMATCH'],
      ['notes', { ...vector, vector: [1, 0] }, 'SEARCH_DIMENSION_MISMATCH'],
      ['notes', { ...vector, vector: [1, 0, 0, 0] }, 'SEARCH_DIMENSION_MISMATCH'],
      ['notes', { ...vector, vector: [0, 0, 0] }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, vector: [1, '0', 0] }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, vector: [1, null, 0] }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, vector: [1, 1e39, 0] }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, vector: 'one' }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, where: { title: 'Coffee' } }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, where: { category: ['drink'] } }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, where: { category: { in: ['drink'] } } }, 'SEARCH_INPUT_INVALID'],
      ['notes', { ...vector, where: 'category = drink' }, 'SEARCH_INPUT_INVALID'],
      ['words', vector, 'SEARCH_INPUT_INVALID'],
      ['words', { mode: 'hybrid', query: 'tea', vector: QUERY_VECTOR, model: 'tiny-embed' }, 'SEARCH_INPUT_INVALID'],
    ]
    for (const [name, options, code] of cases) {
      assert.deepEqual(await find(name, options), { error: code }, `${name} ${JSON.stringify(options).slice(0, 120)}`)
    }
    // A query of exactly 2,048 characters (after trimming) is accepted.
    assert.ok(Array.isArray((await find('notes', { mode: 'fullText', query: ` ${'a'.repeat(2048)} ` })).hits))
  })

  test('a record over 16 KiB fails the search with SEARCH_RESULT_TOO_LARGE rather than being cut', async (t) => {
    if (skipUnlessAvailable(t)) return
    assert.deepEqual((await find('big', { mode: 'fullText', query: 'small' })).hits.map((hit: any) => hit.record.id), [1])
    assert.deepEqual(await find('big', { mode: 'fullText', query: 'tea' }), { error: 'SEARCH_RESULT_TOO_LARGE' })
  })

  test('the owner\'s development invoke searches the development namespace under the same rules', async (t) => {
    if (skipUnlessAvailable(t)) return
    const invoke = async (name: string, options: unknown, as: 'owner' | 'anonymous') => {
      const res = await h.request(`/v1/apps/${slug}/dev/trial/functions/find/invoke`, {
        token: ownerToken, json: { input: { name, options: JSON.stringify(options) }, as },
      })
      const body = await res.json() as any
      assert.equal(res.status, 200, JSON.stringify(body))
      assert.equal(body.ok, true, JSON.stringify(body))
      return body.value
    }
    const options = { mode: 'hybrid', query: 'tea', vector: QUERY_VECTOR, model: 'tiny-embed', limit: 50 }
    for (const as of ['owner', 'anonymous'] as const) {
      const dev = await invoke('notes', options, as)
      assert.deepEqual(dev, await find('notes', options))
      assert.ok(!dev.hits.some((hit: any) => hit.record.id === 6))
    }
    assert.deepEqual(await invoke('notes', { ...options, model: 'other' }, 'owner'), { error: 'SEARCH_MODEL_MISMATCH' })
  })

  test('at most 100 candidates per component: a row ranked past 100 in one component has no evidence from it', async (t) => {
    if (skipUnlessAvailable(t)) return
    // 150 rows: the same text (full-text ties, so by id: row i is rank i, rows 101-150 no
    // candidates); vectors at angle (151 - i) * 0.005 from the query (row i is vector rank
    // 151 - i, rows 1-50 no candidates).
    const fused: [number, number][] = []
    for (let id = 1; id <= 150; id += 1) {
      const lexical = id <= 100 ? 1 / (60 + id) : 0
      const semantic = 151 - id <= 100 ? 1 / (60 + 151 - id) : 0
      fused.push([id, lexical + semantic])
    }
    fused.sort((a, b) => b[1] - a[1] || a[0] - b[0])
    const { hits } = await find('many', { mode: 'hybrid', query: 'tea', vector: [1, 0, 0], model: 'tiny-embed', limit: 50 })
    assert.deepEqual(hits.map((hit: any) => hit.record.id), fused.slice(0, 50).map(([id]) => id))
    for (const [index, hit] of hits.entries()) {
      const id = hit.record.id
      assert.equal(hit.fullTextRank, id <= 100 ? id : null)
      assert.equal(hit.vectorRank, 151 - id <= 100 ? 151 - id : null)
      assert.ok(Math.abs(hit.fusionScore - fused[index]![1]) < 1e-12)
    }
    assert.ok(hits.some((hit: any) => hit.fullTextRank === null) || hits.some((hit: any) => hit.vectorRank === null))
    const vector = await find('many', { mode: 'vector', vector: [1, 0, 0], model: 'tiny-embed', limit: 50 })
    assert.deepEqual(vector.hits.map((hit: any) => hit.record.id), Array.from({ length: 50 }, (_, index) => 150 - index))
  })

  // Last: it changes the schema under the deployed release.
  test('a schema changed under the release fails SEARCH_UNAVAILABLE (retryable), not an unknown error', async (t) => {
    if (skipUnlessAvailable(t)) return
    const app = (await findAppBySlug(h.t.db, slug))!
    const namespace = (await findNamespace(h.t.db, app.id))!
    await h.t.db.query(`alter table "${namespace.schemaName}".bigs rename column title to heading`)
    assert.deepEqual(await find('big', { mode: 'fullText', query: 'small' }), { error: 'SEARCH_UNAVAILABLE' })
  })
})

describe(`the two vector paths give the same hits and evidence for the same searches (${backend})`, () => {
  let h: Harness
  let available = true
  const SLUGS = { exact: 'pathsexact', pgvector: 'pathspgv' } as const

  before(async () => {
    h = await startHarness()
    const health = await (await h.request('/v1/health')).json() as { search: { vectorPaths: string[] } }
    if (!health.search.vectorPaths.includes('pgvector') || !health.search.vectorPaths.includes('exact')) { available = false; return }
    const { token } = await h.createOwner('owner@paths.test')
    for (const path of ['exact', 'pgvector'] as const) {
      const slug = SLUGS[path]
      assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
      const res = await h.request(`/v1/apps/${slug}/deployments`, {
        token, json: bundle({ 'service.yaml': manifest(slug, FUNCTIONS + SEARCHES), 'functions/find.ts': FIND, 'database/migrations/0001_notes.sql': migration(path) }),
      })
      assert.equal(res.status, 201, await res.text())
    }
  })
  after(async () => { await h.close() })

  async function find(path: 'exact' | 'pgvector', name: string, options: unknown): Promise<any> {
    const res = await h.request('/_service/functions/find', {
      host: SLUGS[path], headers: { 'x-service-sdk': '1' }, json: { name, options: JSON.stringify(options) },
    })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    return JSON.parse(text)
  }

  test('vector and hybrid searches over real[] and vector(3): same ids in the same order, same ranks and fusion, distances within 1e-6', async (t) => {
    if (!available) { t.skip('this database does not offer both vector paths'); return }
    const vectors = [QUERY_VECTOR, [0, 1, 0], [0.3, 0.3, 0.9], [-1, 0.5, 0.2], [0.123, -0.456, 0.789]]
    const searches: [string, Record<string, unknown>][] = []
    for (const vector of vectors) {
      searches.push(['notes', { mode: 'vector', vector, model: 'tiny-embed', limit: 50 }])
      searches.push(['notes', { mode: 'hybrid', query: 'tea', vector, model: 'tiny-embed', limit: 50 }])
      searches.push(['notes', { mode: 'vector', vector, model: 'tiny-embed', where: { category: 'drink' } }])
      searches.push(['many', { mode: 'hybrid', query: 'tea', vector, model: 'tiny-embed', limit: 50 }])
    }
    searches.push(['many', { mode: 'vector', vector: [1, 0, 0], model: 'tiny-embed', limit: 50 }])
    for (const [name, options] of searches) {
      const label = `${name} ${JSON.stringify(options)}`
      const exact = (await find('exact', name, options)).hits as any[]
      const pgvector = (await find('pgvector', name, options)).hits as any[]
      assert.ok(exact.length > 0, label)
      assert.deepEqual(pgvector.map((hit) => hit.record), exact.map((hit) => hit.record), label)
      for (const [index, hit] of exact.entries()) {
        const other = pgvector[index]
        const at = `${label}: hit ${index} (row ${hit.record.id})`
        assert.equal(other.vectorRank, hit.vectorRank, at)
        assert.equal(other.fullTextRank, hit.fullTextRank, at)
        assert.equal(other.fullTextScore, hit.fullTextScore, at)
        assert.equal(other.fusionScore, hit.fusionScore, at)
        assert.ok(Math.abs(other.vectorDistance - hit.vectorDistance) < CLOSE, `${at}: distance ${other.vectorDistance} against ${hit.vectorDistance}`)
        assert.ok(Math.abs(other.vectorSimilarity - hit.vectorSimilarity) < CLOSE, `${at}: similarity ${other.vectorSimilarity} against ${hit.vectorSimilarity}`)
      }
    }
  })
})
