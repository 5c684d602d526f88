/**
 * SQL injection through every part of a PostgREST request: names in select, filters, order,
 * on_conflict, columns and embeds, filter values, casts, JSON path keys, RPC names and
 * arguments, the Range, Prefer and profile headers, and resource names that try to leave the
 * app's namespace. Each is refused with a PostgREST error or treated as plain data, and a
 * canary table (and everything else) is intact afterwards.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { deployDataApp, LIBRARY_SQL, rest, signIn } from '../../test/data-fixture.ts'
import { deployPage } from '../../test/sign-in-flow.ts'

type Row = Record<string, any>

const CANARY_SQL = `
create table canary (id int primary key, note text not null);
insert into canary values (1, 'alive');
`
const DROP = 'drop table canary'

describe(`data API SQL injection (${backend})`, () => {
  let h: Harness
  let jwt: string
  const slug = 'library'

  before(async () => {
    h = await startHarness()
    const owner = await h.createOwner('owner@acme.test')
    await deployDataApp(h, owner.token, { slug, sql: LIBRARY_SQL + CANARY_SQL })
    await deployDataApp(h, owner.token, { slug: 'other', sql: `create table secrets (id int primary key, secret text);
      insert into secrets values (1, 'other app secret');` })
    jwt = (await signIn(h, slug, 'reader@acme.test')).accessToken
  })
  after(() => h.close())

  /** GET (or another method) on the library with the signed-in reader's token. */
  function call(path: string, init: { method?: string; headers?: Record<string, string>; json?: unknown } = {}): Promise<Response> {
    return rest(h, slug, path, { token: jwt, ...init })
  }

  /** Asserts PostgREST's error shape with the given status and code. */
  async function refused(res: Response | Promise<Response>, status: number, code: string): Promise<Row> {
    const response = await res
    const text = await response.text()
    assert.equal(response.status, status, text)
    const body = JSON.parse(text) as Row
    assert.equal(body.code, code, text)
    assert.deepEqual(Object.keys(body).sort(), ['code', 'details', 'hint', 'message'])
    return body
  }

  /** Asserts a successful JSON answer and returns it. */
  async function data(res: Response | Promise<Response>, status = 200): Promise<any> {
    const response = await res
    const text = await response.text()
    assert.equal(response.status, status, text)
    return text === '' ? null : JSON.parse(text)
  }

  const q = encodeURIComponent

  test('column names in select are parsed or looked up, never spliced', async () => {
    await refused(call(`/books?select=${q(`id;${DROP}`)}`), 400, 'PGRST100')
    await refused(call(`/books?select=${q('id)--')}`), 400, 'PGRST100')
    await refused(call(`/books?select=${q(`"id""); ${DROP}; --"`)}`), 400, 'PGRST100')
    await refused(call(`/books?select=${q(`"id\\"); ${DROP}; --"`)}`), 400, '42703')
    await refused(call(`/books?select=${q(`"id; ${DROP}"`)}`), 400, '42703')
    await refused(call(`/books?select=${q(`x:"id\\") as y from canary; --"`)}`), 400, '42703')
  })

  test('column names in filters are parsed or looked up', async () => {
    await refused(call(`/books?${q(`id;${DROP}`)}=eq.1`), 400, 'PGRST100')
    await refused(call(`/books?${q(`"id""); ${DROP}; --"`)}=eq.1`), 400, 'PGRST100')
    await refused(call(`/books?${q(`"id\\"); ${DROP}; --"`)}=eq.1`), 400, '42703')
    await refused(call(`/books?${q('id)--')}=eq.1`), 400, 'PGRST100')
    await refused(call(`/books?or=(${q(`"id; ${DROP}"`)}.eq.1)`), 400, '42703')
    await refused(call(`/books?${q(`authors; ${DROP}.name`)}=eq.x`), 400, 'PGRST100')
  })

  test('filter values are bound as data, whatever they contain', async () => {
    assert.deepEqual(await data(call(`/books?title=eq.${q(`'; ${DROP}; --`)}`)), [])
    assert.deepEqual(await data(call(`/books?title=in.(${q(`"'); ${DROP}; --"`)},x)`)), [])
    assert.deepEqual(await data(call(`/books?title=like.${q(`*'; ${DROP}*`)}`)), [])
    assert.deepEqual(await data(call(`/books?search=plfts(english).${q(`'; ${DROP}`)}`)), [])
    await refused(call(`/books?search=fts(english).${q(`'; ${DROP}`)}`), 400, '42601') // to_tsquery's own syntax error
    assert.deepEqual(await data(call(`/books?or=(title.eq.${q(`"x' or '1'='1"`)})`)), [])
    assert.deepEqual(await data(call(`/books?title=eq.${q("x' or '1'='1")}`)), [])
    await refused(call(`/books?pages=eq.${q(`1; ${DROP}`)}`), 400, '22P02')
    await refused(call(`/books?pages=is.${q(`null; ${DROP}`)}`), 400, 'PGRST100')
    await refused(call(`/books?search=fts(${q(`english'); ${DROP}; --`)}).sea`), 400, 'PGRST100')
    await refused(call(`/books?search=fts(${q('nope')}).sea`), 400, '42704')
  })

  test('a value with quotes round-trips as written', async () => {
    const title = `O'Brien"; ${DROP}; --`
    assert.equal((await data(call('/notes?select=title', { json: { title }, headers: { prefer: 'return=representation' } }), 201))[0].title, title)
    assert.deepEqual(await data(call(`/notes?select=title&title=eq.${q(title)}`)), [{ title }])
  })

  test('order terms are parsed or looked up', async () => {
    await refused(call(`/books?order=${q(`id;${DROP}`)}`), 400, 'PGRST100')
    await refused(call(`/books?order=${q('id)--')}`), 400, 'PGRST100')
    await refused(call(`/books?order=${q(`"id; ${DROP}"`)}`), 400, '42703')
    await refused(call(`/books?order=${q(`id.desc; ${DROP}`)}`), 400, 'PGRST100')
    await refused(call(`/books?order=${q(`id.${DROP}`)}`), 400, 'PGRST100')
  })

  test('on_conflict and columns are parsed or looked up', async () => {
    const upsert = { prefer: 'resolution=merge-duplicates' }
    await refused(call(`/settings?on_conflict=${q(`key);${DROP};--`)}`, { json: { key: 'k' }, headers: upsert }), 400, 'PGRST100')
    await refused(call(`/settings?on_conflict=${q(`"key); ${DROP}; --"`)}`, { json: { key: 'k' }, headers: upsert }), 400, '42703')
    await refused(call(`/notes?columns=${q(`title);${DROP};--`)}`, { json: { title: 'x' } }), 400, 'PGRST100')
    await refused(call(`/notes?columns=${q(`"title); ${DROP}; --"`)}`, { json: { title: 'x' } }), 400, 'PGRST204')
    await refused(call('/notes', { json: { [`title); ${DROP}; --`]: 'x' } }), 400, 'PGRST204')
  })

  test('embedded names and hints must name real relationships', async () => {
    await refused(call(`/books?select=*,canary!inner(*)`), 400, 'PGRST200')
    await refused(call(`/books?select=*,${q(`"authors; ${DROP}"`)}(*)`), 400, 'PGRST200')
    await refused(call(`/books?select=*,authors!${q(`"x; ${DROP}"`)}(name)`), 400, 'PGRST200')
    await refused(call(`/books?select=*,${q(`authors;${DROP}`)}(*)`), 400, 'PGRST100')
    await refused(call(`/books?select=*,${q('platform.users')}(*)`), 400, 'PGRST100')
    await refused(call(`/books?select=*,${q('"platform"."users"')}(*)`), 400, 'PGRST100')
  })

  test('cast types are parsed and must be plain type names', async () => {
    await refused(call(`/books?select=${q(`id::text);${DROP};--`)}`), 400, 'PGRST100')
    await refused(call(`/books?select=${q(`id::"text); ${DROP}"`)}`), 400, 'PGRST100')
    await refused(call(`/books?select=${q('id::pg_catalog.text')}`), 400, 'PGRST100')
    await refused(call(`/books?select=${q('id::text as x from canary --')}`), 400, 'PGRST100')
    await refused(call(`/books?select=${q('id::int from books as t0 cross join canary')}`), 400, 'PGRST100')
    await refused(call(`/books?select=${q('id::text as x from canary')}`), 400, 'PGRST100')
    assert.deepEqual(await data(call(`/books?select=${q('id::character varying')}&id=eq.1`)), [{ id: '1' }])
  })

  test('JSON path keys are bound as data', async () => {
    assert.deepEqual(await data(call(`/authors?select=${q(`profile->>'; ${DROP}`)}&id=eq.1`)), [{ [`'; ${DROP}`]: null }])
    assert.deepEqual(await data(call(`/authors?select=id&${q(`profile->>'; ${DROP}`)}=eq.x`)), [])
    assert.deepEqual(await data(call(`/authors?select=id&order=${q(`profile->>'; ${DROP}`)}`)), [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }])
    assert.deepEqual(await data(call(`/authors?select=${q(`profile->"'); ${DROP}; --"`)}&id=eq.1`)), [{ [`'); ${DROP}; --`]: null }])
  })

  test('RPC names must be functions of the app; arguments are bound', async () => {
    await refused(call(`/rpc/${q(`add;${DROP}`)}?a=1`), 404, 'PGRST202')
    await refused(call(`/rpc/${q(`add(1); ${DROP}; --`)}`), 404, 'PGRST202')
    await refused(call('/rpc/pg_sleep?seconds=1'), 404, 'PGRST202')
    await refused(call('/rpc/pg_read_file', { json: { filename: '/etc/passwd' } }), 404, 'PGRST202')
    await refused(call('/rpc/set_config', { json: { setting_name: 'role', new_value: 'postgres', is_local: true } }), 404, 'PGRST202')
    await refused(call(`/rpc/add?a=${q(`1); ${DROP}; --`)}`), 400, '22P02')
    await refused(call('/rpc/add', { json: { a: `1); ${DROP}; --` } }), 400, '22P02')
    await refused(call('/rpc/add', { json: { [`a => 1); ${DROP}; --`]: 1 } }), 404, 'PGRST202')
    const raised = await refused(call(`/rpc/fail_with?message=${q(`'); ${DROP}; --`)}`), 400, 'P0001')
    assert.equal(raised.message, `'); ${DROP}; --`)
  })

  test('the Range header is matched by a pattern, never spliced', async () => {
    for (const range of [`0-1; ${DROP}`, "0-1'", '0-1) union select * from canary --', '-1-2']) {
      const rows = await data(call('/books?select=id&order=id', { headers: { range } }))
      assert.equal(rows.length, 5, `"${range}" is ignored as PostgREST ignores an unparsable range`)
    }
    await refused(call('/books', { headers: { range: '9999999999999999999999-1' } }), 416, 'PGRST103')
    await refused(call(`/books?limit=${q(`1; ${DROP}`)}`), 416, 'PGRST103')
    await refused(call(`/books?offset=${q(`1) union select 1 --`)}`), 416, 'PGRST103')
  })

  test('the Prefer header only selects known preferences', async () => {
    const res = await call('/books?select=id', { headers: { prefer: `count=exact; ${DROP}, return=${DROP}, count=${DROP}` } })
    assert.equal((await data(res)).length, 5)
    assert.equal(res.headers.get('content-range'), '0-4/*', 'nothing was recognised')
    await refused(call('/books', { headers: { prefer: `handling=strict, count=${DROP}` } }), 400, 'PGRST122')
    await refused(call('/notes', { json: { title: 'x' }, headers: { prefer: `handling=strict, resolution=${DROP}` } }), 400, 'PGRST122')
  })

  test('profile headers cannot switch to another schema', async () => {
    for (const profile of ['platform', 'pg_catalog', 'app_other', 'public; drop table canary']) {
      await refused(call('/books', { headers: { 'accept-profile': profile } }), 406, 'PGRST106')
      await refused(call('/notes', { json: { title: 'x' }, headers: { 'content-profile': profile } }), 406, 'PGRST106')
    }
    assert.equal((await data(call('/books?select=id', { headers: { 'accept-profile': 'public' } }))).length, 5)
  })

  test('resource names never reach another schema or another app', async () => {
    for (const name of ['platform.users', '"platform"."users"', 'pg_catalog.pg_authid', 'pg_authid', 'users', 'secrets',
      'app_other.secrets', `canary; ${DROP}`, '..%2Fplatform%2Fusers', '..%2F..%2Fplatform%2Fusers', 'information_schema.tables']) {
      const path = `/${name.includes('%2F') ? name : q(name)}?select=*`
      const body = await refused(call(path), 404, 'PGRST205')
      assert.doesNotMatch(JSON.stringify(body), /other app secret|owner@acme\.test/)
    }
    // Dot segments are resolved by URL parsing before routing: these leave /rest/v1 for the
    // app's own frontend (its page), or name no function; none answers platform data.
    for (const path of ['/rpc/../platform/users', '/../platform/users', '/%2e%2e/platform/users', '/rpc/%2e%2e%2fplatform']) {
      const res = await call(`${path}?select=*`)
      const text = await res.text()
      assert.doesNotMatch(text, /other app secret|owner@acme\.test|"email"/, path)
      if (res.status === 200) assert.match(res.headers.get('content-type') ?? '', /^text\/html/, path)
    }
    await refused(call('/%E0%A4%A'), 404, 'PGRST125')
  })

  test('the other app answers only its own table, to nobody signed into this one', async () => {
    const res = await rest(h, 'other', '/secrets', { token: jwt })
    assert.equal(res.status, 401, 'a token of one app is refused by another')
  })

  test('the canary and every table are intact afterwards', async () => {
    assert.deepEqual(await data(call('/canary?select=id,note')), [{ id: 1, note: 'alive' }])
    const [canary] = await h.t.db.query<{ note: string }>('select note from app_library.canary')
    assert.equal(canary!.note, 'alive')
    const tables = await h.t.db.query<{ tablename: string }>(`select tablename from pg_catalog.pg_tables where schemaname = 'app_library' order by 1`)
    assert.deepEqual(tables.map((t) => t.tablename),
      ['author_stats', 'authors', 'books', 'canary', 'counters', 'notes', 'numbers', 'reviews', 'settings'])
    assert.equal((await data(call('/books?select=id'))).length, 5)
    const [secret] = await h.t.db.query<{ secret: string }>('select secret from app_other.secrets')
    assert.equal(secret!.secret, 'other app secret')
  })
})

describe('paths that escape /rest/v1', () => {
  test('a normalised /rest/v1/../ path is a JSON 404, never the frontend', async () => {
    const h = await startHarness()
    try {
      const owner = await h.createOwner('owner@acme.test')
      await deployPage(h, owner.token, 'open', 'public', 'open page')
      const res = await h.request('/rest/v1/../platform/users', { host: 'open' })
      assert.equal(res.status, 404)
      assert.equal(((await res.json()) as { code: string }).code, 'PGRST125')
    } finally {
      await h.close()
    }
  })
})
