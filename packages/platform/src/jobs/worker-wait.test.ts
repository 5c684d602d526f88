// A queue attempt that only waited for a free Deno worker: the app's pool (2 workers x 16
// invocations) is full of HTTP calls, so the consumer's invocation waits in the pool's
// queue until the job's timeoutSeconds pass. No consumer ran, so the attempt is not counted
// (spec 2.5 "limit per consumer attempt", 3.1): the job waits again, due at once, and runs
// once the pool has room. HTTP callers that wait the same way keep their 504.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { eventually } from '../../test/eventually.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { findNamespace, type Namespace } from '../namespaces/namespaces.ts'

const SLUG = 'waitq'
const YAML = `functions:
  - name: block
    entrypoint: functions/block.ts
    access: public
  - name: quick
    entrypoint: functions/quick.ts
    access: public
    timeoutSeconds: 1
  - name: consume
    entrypoint: functions/consume.ts
    access: system
queues:
  - name: q
    function: consume
    maxAttempts: 1
    timeoutSeconds: 1
`
const QUEUE = { name: 'q', function: 'consume', concurrency: 1, maxAttempts: 1, retryDelaySeconds: 30, retryBackoff: false, timeoutSeconds: 1 }
/** The pool's invocations at once: 2 workers x 16. */
const POOL_SLOTS = 32

describe(`a job attempt that waited for a free worker (${backend})`, () => {
  let h: Harness
  let app: App
  let namespace: Namespace

  before(async () => {
    h = await startHarness()
    const { token } = await h.createOwner('o@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    const res = await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: bundle({
      'service.yaml': manifest(SLUG, YAML),
      'functions/block.ts': `import { defineFunction, object, number } from '@service/server'
export default defineFunction({ input: object({ ms: number() }), async handler({ input }) { await new Promise((r) => setTimeout(r, input.ms)); return 1 } })`,
      'functions/quick.ts': `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), async handler() { return 'quick' } })`,
      'functions/consume.ts': `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), async handler({ log }) { log.info('consumer ran'); return 'ran' } })`,
    }) })
    assert.equal(res.status, 201, await res.text())
    app = (await findAppBySlug(h.t.db, SLUG))!
    namespace = (await findNamespace(h.t.db, app.id))!
  })
  after(() => h.close())

  const call = (name: string, json: unknown) => h.request(`/_service/functions/${name}`, { host: SLUG, headers: { 'x-service-sdk': '1' }, json })

  /** Fills every slot of the app's pool with HTTP calls that sleep `ms`; resolves once they hold the pool. */
  async function fillPool(ms: number): Promise<Promise<Response>[]> {
    assert.equal((await call('block', { ms: 1 })).status, 200, 'the pool is warm')
    const blockers = Array.from({ length: POOL_SLOTS }, () => call('block', { ms }))
    await new Promise((resolve) => setTimeout(resolve, 800))
    return blockers
  }

  async function consumerLines(): Promise<number> {
    const rows = await h.t.db.query<{ n: number }>(
      `select count(*)::int as n from platform.function_logs where function_name = 'consume' and message = 'consumer ran'`)
    return rows[0]!.n
  }

  test('the attempt is not counted and the job runs once the pool has room; its consumer runs once', async () => {
    const blockers = await fillPool(4000)
    try {
      const { row } = await h.platform.jobs.enqueueOnQueue({
        appId: app.id, namespaceId: namespace.id, declaration: QUEUE,
        request: { queue: 'q', payload: {}, idempotencyKey: 'waited', delaySeconds: 0, timeoutMs: null }, enqueuedBy: null, now: h.clock.now(),
      })
      assert.equal(await h.platform.jobs.runDue(), 1, 'the job was claimed')
      const [waited] = await h.t.db.query<{ state: string; attempts: number; last_error: unknown }>(
        'select state, attempts, last_error from platform.jobs where id = $1', [row.id])
      assert.equal(await consumerLines(), 0, 'the pool was full: the consumer did not run')
      assert.deepEqual({ ...waited }, { state: 'queued', attempts: 0, last_error: null }, 'waiting for a worker spent no attempt')

      for (const blocker of await Promise.all(blockers)) assert.equal(blocker.status, 200)
      assert.equal(await h.platform.jobs.runDue(), 1, 'due again at once')
      const [ran] = await h.t.db.query<{ state: string; attempts: number }>('select state, attempts from platform.jobs where id = $1', [row.id])
      assert.deepEqual({ ...ran }, { state: 'succeeded', attempts: 1 })
      await eventually(async () => (await consumerLines()) === 1, 'the consumer logged its one run')
    } finally {
      await Promise.allSettled(blockers)
    }
  })

  test('an HTTP call that waited its whole timeout for a free worker still answers 504 FUNCTION_TIMEOUT', async () => {
    const blockers = await fillPool(3000)
    try {
      const res = await call('quick', {})
      assert.equal(res.status, 504)
      // The harness's platform answers with detail (not production); production keeps the generic message.
      assert.deepEqual(await res.json(), { error: { code: 'FUNCTION_TIMEOUT', message: 'The Function did not finish in time: the invocation waited 1000 ms for a free worker' } })
    } finally {
      await Promise.allSettled(blockers)
    }
  })
})
