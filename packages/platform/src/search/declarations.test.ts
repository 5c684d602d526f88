/**
 * Search declarations checked at deploy against the migrated schema (issue 16): each wrong
 * table, column or type refuses the deploy with SEARCH_DECLARATION_INVALID naming the search,
 * the field and the column, and keeps nothing (the migrations roll back with it); a right one
 * deploys. /v1/health reports the vector paths the database offers.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'

const NOTES_SQL = `create table notes (
  id uuid primary key default gen_random_uuid(),
  title text not null,
  body text,
  owner_id uuid,
  tags text[],
  meta jsonb,
  position integer,
  embedding real[]
);`

function searchManifest(slug: string, search: string): string {
  return manifest(slug, `data:\n  search:\n${search}`)
}

const NOTES_SEARCH = `    - name: notes
      table: notes
      select: [id, title]
      filters: [owner_id]
      fullText:
        language: english
        columns: [title, body]
      vector:
        column: embedding
        dimensions: 3
        model: tiny
`

describe(`search declarations at deploy (${backend})`, () => {
  let h: Harness
  let token: string
  let pgvector: boolean

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@search.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'finder', visibility: 'public' } })).status, 201)
    const health = await (await h.request('/v1/health')).json() as { search: { vectorPaths: string[] } }
    pgvector = health.search.vectorPaths.includes('pgvector')
  })
  after(async () => { await h.close() })

  async function deploy(search: string, sql = NOTES_SQL, slug = 'finder') {
    const res = await h.request(`/v1/apps/${slug}/deployments`, {
      token,
      json: bundle({ 'service.yaml': searchManifest(slug, search), 'database/migrations/0001_notes.sql': sql }),
    })
    return { status: res.status, body: await res.json() as any }
  }

  async function refused(search: string, details: Record<string, unknown>, message: RegExp, sql = NOTES_SQL) {
    const { status, body } = await deploy(search, sql)
    assert.equal(status, 422, JSON.stringify(body))
    assert.equal(body.error.code, 'SEARCH_DECLARATION_INVALID')
    assert.deepEqual(body.error.details, details)
    assert.match(body.error.message, message)
  }

  test('/v1/health reports the exact path always, pgvector where the database has it', async () => {
    const health = await (await h.request('/v1/health')).json() as { search: { vectorPaths: string[] } }
    assert.ok(health.search.vectorPaths.includes('exact'))
    // PGlite bundles pgvector; the Debian PostgreSQL here has no package for it.
    if (backend === 'pglite') assert.deepEqual(health.search.vectorPaths, ['pgvector', 'exact'])
  })

  test('a table the schema does not have', async () => {
    await refused(NOTES_SEARCH.replace('table: notes', 'table: memos'),
      { search: 'notes', field: 'data.search[notes].table', table: 'memos' }, /^search "notes": table "memos" does not exist/)
  })

  test('a selected, filter, full-text or vector column the table does not have', async () => {
    await refused(NOTES_SEARCH.replace('select: [id, title]', 'select: [id, title, summary]'),
      { search: 'notes', field: 'data.search[notes].select', table: 'notes', column: 'summary' }, /column "summary" does not exist in table "notes"/)
    await refused(NOTES_SEARCH.replace('filters: [owner_id]', 'filters: [author_id]'),
      { search: 'notes', field: 'data.search[notes].filters', table: 'notes', column: 'author_id' }, /column "author_id" does not exist/)
    await refused(NOTES_SEARCH.replace('columns: [title, body]', 'columns: [title, text]'),
      { search: 'notes', field: 'data.search[notes].fullText.columns', table: 'notes', column: 'text' }, /column "text" does not exist/)
    await refused(NOTES_SEARCH.replace('column: embedding', 'column: vec'),
      { search: 'notes', field: 'data.search[notes].vector.column', table: 'notes', column: 'vec' }, /column "vec" does not exist/)
  })

  test('a table without an id column', async () => {
    await refused(NOTES_SEARCH, { search: 'notes', field: 'data.search[notes].select', table: 'notes', column: 'id' },
      /column "id" does not exist/, NOTES_SQL.replace('id uuid primary key default gen_random_uuid()', 'key uuid primary key'))
  })

  test('filters must be scalar, full-text columns text, the vector column real[] or vector(n)', async () => {
    await refused(NOTES_SEARCH.replace('filters: [owner_id]', 'filters: [tags]'),
      { search: 'notes', field: 'data.search[notes].filters', table: 'notes', column: 'tags' }, /filters compare scalar columns/)
    await refused(NOTES_SEARCH.replace('filters: [owner_id]', 'filters: [meta]'),
      { search: 'notes', field: 'data.search[notes].filters', table: 'notes', column: 'meta' }, /type jsonb/)
    await refused(NOTES_SEARCH.replace('columns: [title, body]', 'columns: [title, position]'),
      { search: 'notes', field: 'data.search[notes].fullText.columns', table: 'notes', column: 'position' }, /full-text columns must be text/)
    await refused(NOTES_SEARCH.replace('column: embedding', 'column: tags'),
      { search: 'notes', field: 'data.search[notes].vector.column', table: 'notes', column: 'tags' }, /vector\(3\) \(pgvector\) or real\[\]/)
  })

  test('a vector(n) column must have exactly the declared dimensions (pgvector)', async (t) => {
    if (!pgvector) { t.skip('this database has no pgvector'); return }
    const sql = NOTES_SQL.replace('embedding real[]', 'embedding vector(4)')
    await refused(NOTES_SEARCH, { search: 'notes', field: 'data.search[notes].vector.dimensions', table: 'notes', column: 'embedding', declared: 3, actual: 4 },
      /is vector\(4\) but the search declares 3 dimensions/, sql)
    await refused(NOTES_SEARCH, { search: 'notes', field: 'data.search[notes].vector.dimensions', table: 'notes', column: 'embedding', declared: 3 },
      /a vector without dimensions; declare it vector\(3\)/, NOTES_SQL.replace('embedding real[]', 'embedding vector'))
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'vectorfinder', visibility: 'public' } })).status, 201)
    const { status, body } = await deploy(NOTES_SEARCH, NOTES_SQL.replace('embedding real[]', 'embedding vector(3)'), 'vectorfinder')
    assert.equal(status, 201, JSON.stringify(body))
  })

  test('a refused deploy keeps nothing; a matching declaration deploys', async () => {
    const releases = async () => (await (await h.request('/v1/apps/finder/releases', { token })).json() as any)
    const before = JSON.stringify(await releases())
    await refused(NOTES_SEARCH.replace('table: notes', 'table: memos'),
      { search: 'notes', field: 'data.search[notes].table', table: 'memos' }, /does not exist/, NOTES_SQL.replace('create table notes', 'create table notes_v2'))
    assert.equal(JSON.stringify(await releases()), before)
    const { status, body } = await deploy(NOTES_SEARCH)
    assert.equal(status, 201, JSON.stringify(body))
  })
})
