/**
 * Search over the edges of its value ranges (spec 2.11, 7.2, 8), on both vector paths:
 * vectors that are valid float32 but whose squares overflow or underflow float32 (query or
 * stored) get the exact cosine distance, as numbers, in the right order, never "NaN"; a
 * stored `real[]` holding NaN or Infinity is no candidate (cosine is undefined for it); and
 * a `where` value the filter column's type cannot hold fails SEARCH_INPUT_INVALID (400,
 * `details.field` "where"), not an unknown error.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'

/** Rows by id. 3 overflows float32 when squared; 4 underflows; 5 and 6 are past 1e18. */
const ROWS: [number, number[]][] = [
  [1, [1, 0, 0]],
  [2, [0, 1, 0]],
  [3, [3e38, 1e38, 0]],
  [4, [1e-40, 3e-41, 1e-41]],
  [5, [-1e20, 3e19, 2e19]],
  [6, [2e19, -2e19, 1e19]],
  [7, [-1, 0.5, 0.25]],
  [8, [0.2, 0.3, 1]],
]
const QUERIES = [
  [3e38, 3e38, 0],
  [1e-40, 0, 0],
  [1e-45, 0, 1e-45],
  [-3e38, 1e38, 2e38],
  [1e30, 2e30, -1e30],
  [1, 0.2, 0],
  [1e-12, 1e-12, 1e-13],
]

function migration(path: 'exact' | 'pgvector'): string {
  const literal = (v: number[]) => path === 'exact' ? `'{${v.join(',')}}'` : `'[${v.join(',')}]'`
  const rows = ROWS.map(([id, v]) => `(${id}, 'tea', ${id}, ${id}, ${id * 10}, ${id % 2 === 0}, 'label ${id}', ${literal(v)}, 'tag ${id}', ${id})`)
  // Domains: a NOT NULL one on a column no search filters, a checked one filtered.
  return `create domain required_text as text not null;
create domain positive as integer check (value > 0);
create table notes (id integer primary key, title text not null, n integer, small smallint, r real, visible boolean not null,
  label text, embedding ${path === 'exact' ? 'real[]' : 'vector(3)'}, tag required_text, pos positive);
alter table notes enable row level security;
create policy notes_read on notes for select using (true);
insert into notes values ${rows.join(',\n  ')};
create table odd (id integer primary key, title text not null, embedding real[]);
alter table odd enable row level security;
create policy odd_read on odd for select using (true);
insert into odd values (1, 'tea', '{1,0,0}'), (2, 'tea', '{NaN,0,0}'), (3, 'tea', '{Infinity,1,0}'), (4, 'tea', '{0,1,0}'), (5, 'tea', '{-Infinity,0,0}');
`
}

const SERVICE = `functions:
  - name: find
    entrypoint: functions/find.ts
    access: public
data:
  search:
    - name: notes
      table: notes
      select: [id]
      filters: [n, small, r, visible, label, pos]
      fullText:
        language: simple
        columns: [title]
      vector:
        column: embedding
        dimensions: 3
        model: m
    - name: odd
      table: odd
      select: [id]
      fullText:
        language: simple
        columns: [title]
      vector:
        column: embedding
        dimensions: 3
        model: m
`

const FIND = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ name: string(), options: string() }),
  async handler({ input, data }) {
    try {
      return await data.search(input.name, JSON.parse(input.options))
    } catch (error) {
      return { error: error.code ?? null, status: error.status ?? null, field: error.details?.field ?? null, message: String(error.message) }
    }
  },
})`

/** Exact cosine distance in float64 over the float32 values. */
function cosineDistance(a: number[], b: number[]): number {
  const x = a.map(Math.fround)
  const y = b.map(Math.fround)
  let dot = 0, xx = 0, yy = 0
  for (let i = 0; i < x.length; i += 1) { dot += x[i]! * y[i]!; xx += x[i]! * x[i]!; yy += y[i]! * y[i]! }
  return 1 - Math.max(-1, Math.min(1, dot / (Math.sqrt(xx) * Math.sqrt(yy))))
}

for (const path of ['exact', 'pgvector'] as const) describe(`search at the edges of its value ranges, ${path} vector path (${backend})`, () => {
  let h: Harness
  let available = true
  const slug = `values${path === 'exact' ? 'exact' : 'pgv'}`

  before(async () => {
    h = await startHarness()
    const health = await (await h.request('/v1/health')).json() as { search: { vectorPaths: string[] } }
    if (!health.search.vectorPaths.includes(path)) { available = false; return }
    const { token } = await h.createOwner(`owner@${slug}.test`)
    assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
    const res = await h.request(`/v1/apps/${slug}/deployments`, {
      token, json: bundle({ 'service.yaml': manifest(slug, SERVICE), 'functions/find.ts': FIND, 'database/migrations/0001_notes.sql': migration(path) }),
    })
    assert.equal(res.status, 201, await res.text())
  })
  after(async () => { await h.close() })

  async function find(options: unknown, name = 'notes'): Promise<any> {
    const res = await h.request('/_service/functions/find', {
      host: slug, headers: { 'x-service-sdk': '1' }, json: { name, options: JSON.stringify(options) },
    })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    return JSON.parse(text)
  }

  test('a hit\'s record is the declared columns only, though the table has a column named r', async (t) => {
    if (!available) { t.skip(`this database has no ${path}`); return }
    const { hits } = await find({ mode: 'hybrid', query: 'tea', vector: [1, 0, 0], model: 'm', where: { n: 3 } })
    assert.deepEqual(hits.map((hit: any) => hit.record), [{ id: 3 }])
  })

  test('vectors whose float32 squares overflow or underflow, asked or stored, get the exact cosine distance as numbers, ranked by it', async (t) => {
    if (!available) { t.skip(`this database has no ${path}`); return }
    for (const query of QUERIES) {
      const label = JSON.stringify(query)
      const expected = ROWS
        .map(([id, v]) => ({ id, distance: cosineDistance(v, query) }))
        .sort((a, b) => a.distance - b.distance || a.id - b.id)
      const body = await find({ mode: 'vector', vector: query, model: 'm', limit: 50 })
      assert.ok(Array.isArray(body.hits), `${label}: ${JSON.stringify(body)}`)
      assert.deepEqual(body.hits.map((hit: any) => hit.record.id), expected.map((row) => row.id), label)
      for (const [index, hit] of body.hits.entries()) {
        const at = `${label}: row ${hit.record.id}`
        assert.equal(typeof hit.vectorDistance, 'number', `${at}: ${JSON.stringify(hit)}`)
        assert.equal(typeof hit.vectorSimilarity, 'number', `${at}: ${JSON.stringify(hit)}`)
        assert.ok(Math.abs(hit.vectorDistance - expected[index]!.distance) < 1e-6, `${at}: distance ${hit.vectorDistance} against ${expected[index]!.distance}`)
        assert.ok(Math.abs(hit.vectorSimilarity - (1 - expected[index]!.distance)) < 1e-6, `${at}: similarity ${hit.vectorSimilarity}`)
        assert.equal(hit.vectorRank, index + 1, at)
      }
    }
  })

  test('a stored real[] holding NaN or Infinity is no vector candidate (cosine is undefined for it), as a zero vector is not', async (t) => {
    if (!available || path !== 'exact') { t.skip('only a real[] column holds NaN or Infinity'); return }
    for (const vector of [[1, 0, 0], [0, 1, 0], [-1, 0, 0], [1e-40, 0, 0], [3e38, 3e38, 0]]) {
      const vectorHits = (await find({ mode: 'vector', vector, model: 'm', limit: 50 }, 'odd')).hits
      assert.deepEqual(vectorHits.map((hit: any) => hit.record.id).sort(), [1, 4], JSON.stringify(vectorHits))
      const hybrid = (await find({ mode: 'hybrid', query: 'tea', vector, model: 'm', limit: 50 }, 'odd')).hits
      assert.deepEqual(hybrid.filter((hit: any) => hit.vectorRank !== null).map((hit: any) => hit.record.id).sort(), [1, 4], JSON.stringify(hybrid))
      for (const hit of [...vectorHits, ...hybrid]) assert.ok(hit.vectorDistance === null || Number.isFinite(hit.vectorDistance), JSON.stringify(hit))
    }
  })

  test('a table with a NOT NULL domain column is searched; a filter on a domain column compares through the domain', async (t) => {
    if (!available) { t.skip(`this database has no ${path}`); return }
    const ids = async (where: unknown) => (await find({ mode: 'hybrid', query: 'tea', vector: [1, 0, 0], model: 'm', where })).hits.map((hit: any) => hit.record.id)
    assert.equal((await ids({})).length, ROWS.length)
    assert.deepEqual(await ids({ pos: 4 }), [4])
    assert.deepEqual(await ids({ pos: '7' }), [7])
    const refused = await find({ mode: 'fullText', query: 'tea', where: { pos: -1 } })
    assert.deepEqual({ error: refused.error, status: refused.status, field: refused.field }, { error: 'SEARCH_INPUT_INVALID', status: 400, field: 'where' }, JSON.stringify(refused))
  })

  test('a where value the filter column cannot hold fails SEARCH_INPUT_INVALID (400) on where; values it can hold still filter', async (t) => {
    if (!available) { t.skip(`this database has no ${path}`); return }
    const refused: [string, unknown][] = [
      ['integer given text', { n: 'abc' }],
      ['integer given a fraction', { n: 1.5 }],
      ['integer given a boolean', { n: true }],
      ['integer out of range', { n: 2 ** 31 }],
      ['smallint out of range', { small: 40000 }],
      ['real out of range', { r: 1e39 }],
      ['real underflowing', { r: 1e-50 }],
      ['boolean given text', { visible: 'maybe' }],
      ['boolean given 2', { visible: 2 }],
      ['text with a NUL', { label: 'label\u00001' }],
    ]
    for (const [label, where] of refused) {
      for (const mode of [{ mode: 'fullText', query: 'tea' }, { mode: 'hybrid', query: 'tea', vector: [1, 0, 0], model: 'm' }]) {
        const body = await find({ ...mode, where })
        assert.deepEqual({ error: body.error, status: body.status, field: body.field }, { error: 'SEARCH_INPUT_INVALID', status: 400, field: 'where' }, `${label}: ${JSON.stringify(body)}`)
      }
    }
    // The browser SDK's route answers the same code and status.
    const res = await h.request('/_service/search/notes', { host: slug, headers: { 'x-service-sdk': '1' }, json: { mode: 'fullText', query: 'tea', where: { n: 'abc' } } })
    const body = await res.json() as any
    assert.equal(res.status, 400, JSON.stringify(body))
    assert.equal(body.error.code, 'SEARCH_INPUT_INVALID')
    // A NUL in the query is the query's fault, not where's.
    assert.deepEqual((await find({ mode: 'fullText', query: 'te\u0000a' })).field, 'query')
    // What the column's type reads still works as before.
    const ids = async (where: unknown) => (await find({ mode: 'fullText', query: 'tea', where })).hits.map((hit: any) => hit.record.id)
    assert.deepEqual(await ids({ n: 2 }), [2])
    assert.deepEqual(await ids({ n: '3' }), [3])
    assert.deepEqual(await ids({ n: 2 ** 31 - 1 }), [])
    assert.deepEqual(await ids({ small: -32768 }), [])
    assert.deepEqual(await ids({ r: 50 }), [5])
    assert.deepEqual(await ids({ r: 1.5 }), [])
    assert.deepEqual(await ids({ visible: true, n: 4 }), [4])
    assert.deepEqual(await ids({ visible: 1, n: 4 }), [4])
    assert.deepEqual(await ids({ visible: 'no', n: 4 }), [])
    assert.deepEqual(await ids({ label: 'label 7' }), [7])
    assert.deepEqual(await ids({ n: null }), [])
  })
})
