/**
 * A temporary database failure under `ctx.data` is DATA_UNAVAILABLE (503, retryable), not an
 * unknown error (spec 7.1: only `errors.unavailable` is retryable, so an unknown one would
 * dead-letter a queue job at its first attempt). The failure here is the statement timeout
 * (1 s, `createTestDb`): the table's row-level security policy sleeps as long as `naps` says,
 * so a read is cancelled (57014) until the nap is gone. A job whose consumer does not catch
 * it is attempted again and succeeds once the cause is gone.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { backend, createTestDb } from '../../test/test-db.ts'
import { NAPPING } from '../../test/napping.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { findNamespace, type Namespace } from '../namespaces/namespaces.ts'

const SLUG = 'slowdata'

const MIGRATION = `${NAPPING}
create table notes (id integer primary key, title text not null);
alter table notes enable row level security;
create policy notes_read on notes for select using (napping());
insert into notes values (1, 'green tea');
`

const YAML = `functions:
  - name: read
    entrypoint: functions/read.ts
    access: public
  - name: consume
    entrypoint: functions/consume.ts
    access: system
queues:
  - name: q
    function: consume
    maxAttempts: 3
    retryDelaySeconds: 10
`
const QUEUE = { name: 'q', function: 'consume', concurrency: 1, maxAttempts: 3, retryDelaySeconds: 10, retryBackoff: false, timeoutSeconds: 30 }

describe(`ctx.data over a temporary database failure (${backend})`, () => {
  let h: Harness
  let app: App
  let namespace: Namespace

  before(async () => {
    h = await startHarness(await createTestDb({ statementTimeoutMs: 1000 }))
    const { token } = await h.createOwner(`owner@${SLUG}.test`)
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    const res = await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: bundle({
      'service.yaml': manifest(SLUG, YAML),
      'database/migrations/0001_notes.sql': MIGRATION,
      // Returns the error as the Function saw it.
      'functions/read.ts': `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), async handler({ data }) {
  try { return await data.table('notes').list({}) } catch (error) { return { error: { code: error.code, status: error.status, retryable: error.retryable } } }
} })`,
      // Does not catch: the job's fate is the error's.
      'functions/consume.ts': `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), async handler({ data }) { return (await data.table('notes').list({})).length } })`,
    }) })
    assert.equal(res.status, 201, await res.text())
    app = (await findAppBySlug(h.t.db, SLUG))!
    namespace = (await findNamespace(h.t.db, app.id))!
  })
  after(async () => { await h.close() })

  const naps = (seconds: number | null) => seconds === null
    ? h.t.db.query(`delete from "${namespace.schemaName}".naps`)
    : h.t.db.query(`insert into "${namespace.schemaName}".naps values ($1)`, [seconds])

  test('a read cancelled at the statement timeout fails DATA_UNAVAILABLE (503, retryable); once the cause is gone it answers', async () => {
    const read = async () => {
      const res = await h.request('/_service/functions/read', { host: SLUG, headers: { 'x-service-sdk': '1' }, json: {} })
      assert.equal(res.status, 200)
      return await res.json()
    }
    assert.deepEqual(await read(), { error: { code: 'DATA_UNAVAILABLE', status: 503, retryable: true } })
    await naps(null)
    assert.deepEqual(await read(), [{ id: 1, title: 'green tea' }])
    await naps(30)
  })

  test('a queue job whose consumer does not catch it is attempted again, not dead-lettered, and succeeds once the cause is gone', async () => {
    const { row } = await h.platform.jobs.enqueueOnQueue({
      appId: app.id, namespaceId: namespace.id, declaration: QUEUE,
      request: { queue: 'q', payload: {}, idempotencyKey: 'slow', delaySeconds: 0, timeoutMs: null }, enqueuedBy: null, now: h.clock.now(),
    })
    const job = async () => (await h.t.db.query<{ state: string; attempts: number; last_error: { code: string } | null }>(
      'select state, attempts, last_error from platform.jobs where id = $1', [row.id]))[0]!
    assert.equal(await h.platform.jobs.runDue(), 1)
    const failed = await job()
    assert.deepEqual([failed.state, failed.attempts, failed.last_error?.code], ['retry_wait', 1, 'DATA_UNAVAILABLE'])
    await naps(null)
    h.clock.advance(10_000)
    assert.equal(await h.platform.jobs.runDue(), 1)
    assert.deepEqual({ ...(await job()), last_error: undefined }, { state: 'succeeded', attempts: 2, last_error: undefined })
  })
})
