/**
 * A search that outlasts the statement timeout fails SEARCH_UNAVAILABLE, retryable (issue 16;
 * spec 4.3, 8): the database's cancel (57014) is a temporary failure, not an unknown error.
 * The database's statement timeout is 1 s here (`createTestDb`: on PostgreSQL every
 * connection's statement_timeout, the namespace login pools' included; on PGlite the app SQL
 * watchdog). The searched table's row-level security policy calls a function (the owner's,
 * reading `naps` from the namespace on the caller's search path) that sleeps as long as
 * `naps` says, so the same search is slow, then fast once the nap is gone: a retry succeeds.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { backend, createTestDb } from '../../test/test-db.ts'
import { NAPPING } from '../../test/napping.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { findNamespace } from '../namespaces/namespaces.ts'

const SLUG = 'slowsearch'

/** Far longer than the timeout: were the statement not cancelled, the search would answer 30 s later. */
const MIGRATION = `${NAPPING}
create table notes (id integer primary key, title text not null);
alter table notes enable row level security;
create policy notes_read on notes for select using (napping());
insert into notes values (1, 'green tea'), (2, 'coffee');
`

const FILES = {
  'service.yaml': manifest(SLUG, `functions:
  - name: find
    entrypoint: functions/find.ts
    access: public
data:
  search:
    - name: notes
      table: notes
      select: [id, title]
      fullText:
        language: english
        columns: [title]
`),
  /** Returns the error as the Function saw it: code, status and whether it is retryable. */
  'functions/find.ts': `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ query: string() }),
  async handler({ input, data }) {
    try {
      return await data.search('notes', { mode: 'fullText', query: input.query })
    } catch (error) {
      return { error: { code: error.code, status: error.status, retryable: error.retryable } }
    }
  },
})`,
}

describe(`a search over the statement timeout fails SEARCH_UNAVAILABLE, retryable (${backend})`, () => {
  let h: Harness
  let schema: string

  before(async () => {
    h = await startHarness(await createTestDb({ statementTimeoutMs: 1000 }))
    const { token } = await h.createOwner(`owner@${SLUG}.test`)
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    const res = await h.request(`/v1/apps/${SLUG}/deployments`, {
      token, json: bundle({ ...FILES, 'database/migrations/0001_notes.sql': MIGRATION }),
    })
    assert.equal(res.status, 201, await res.text())
    schema = (await findNamespace(h.t.db, (await findAppBySlug(h.t.db, SLUG))!.id))!.schemaName
  })
  after(async () => { await h.close() })

  async function find(query: string): Promise<any> {
    const res = await h.request('/_service/functions/find', { host: SLUG, headers: { 'x-service-sdk': '1' }, json: { query } })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    return JSON.parse(text)
  }

  test('in a Function: the search fails SEARCH_UNAVAILABLE (503, retryable) at the timeout, and a retry once the cause is gone answers', async () => {
    const started = Date.now()
    assert.deepEqual(await find('tea'), { error: { code: 'SEARCH_UNAVAILABLE', status: 503, retryable: true } })
    const elapsed = Date.now() - started
    assert.ok(elapsed >= 950 && elapsed < 20_000, `cancelled at the 1 s timeout, not before it nor after the 30 s nap (${elapsed} ms)`)
    await h.t.db.query(`delete from "${schema}".naps`)
    const { hits } = await find('tea')
    assert.deepEqual(hits.map((hit: any) => hit.record), [{ id: 1, title: 'green tea' }])
    await h.t.db.query(`insert into "${schema}".naps values (30)`)
  })

  test('from the browser SDK route: 503 with the code SEARCH_UNAVAILABLE', async () => {
    const res = await h.request('/_service/search/notes', {
      host: SLUG, headers: { 'x-service-sdk': '1' }, json: { mode: 'fullText', query: 'tea' },
    })
    const body = await res.json() as { error: { code: string } }
    assert.equal(res.status, 503, JSON.stringify(body))
    assert.equal(body.error.code, 'SEARCH_UNAVAILABLE')
  })
})
