// A running dispatcher is woken by the enqueue itself (LISTEN/NOTIFY, on PGlite as on
// PostgreSQL): with its poll set to a minute, a due job still runs at once. An enqueue in the
// dispatcher's own process with a free slot needs no wake-up: it starts the job itself.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { silentLogger } from '../lib/logger.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { createJobs, type Jobs } from './index.ts'
import { JOBS_CHANNEL } from './queries.ts'
import { queuesBundle } from './test-app.ts'

const SLUG = 'wakeup'

describe(`dispatcher wake-up (${backend})`, () => {
  let h: Harness
  let jobs: Jobs

  before(async () => {
    h = await startHarness()
    const { token } = await h.createOwner('owner@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    assert.equal((await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: queuesBundle(SLUG) })).status, 201)
    jobs = createJobs({ db: h.t.db, clock: h.clock, logger: silentLogger, functions: h.platform.functions, production: false, pollIntervalMs: 60_000 })
    await jobs.start()
  })
  after(async () => {
    await jobs.stop()
    await h.close()
  })

  test('an enqueue wakes the dispatcher, which runs the job without waiting for its poll', async () => {
    const res = await h.request('/_service/functions/produce', {
      host: SLUG, headers: { 'x-service-sdk': '1' },
      json: { queue: 'work', payload: JSON.stringify({ mode: 'ok' }), options: JSON.stringify({ idempotencyKey: 'wake' }) },
    })
    const { id } = (await res.json()) as { id: string }
    let state = 'queued'
    for (let i = 0; i < 200 && state !== 'succeeded'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      state = (await h.t.db.query<{ state: string }>('select state from platform.jobs where id = $1', [id]))[0]!.state
    }
    assert.equal(state, 'succeeded', 'ran within 10 s, well before the one-minute poll')
  })

  test("an enqueue in the dispatcher's process with a free slot starts the job in its own statement: no notice, run at once", async () => {
    // The queue exists (the test above made it): a queue's first job is never started by its enqueue.
    const app = (await findAppBySlug(h.t.db, SLUG))!
    const namespace = (await findNamespace(h.t.db, app.id))!
    let notices = 0
    const unlisten = await h.t.db.listen(JOBS_CHANNEL, () => void (notices += 1))
    try {
      const { row } = await jobs.enqueueOnQueue({
        appId: app.id, namespaceId: namespace.id, enqueuedBy: null, now: h.clock.now(),
        declaration: { name: 'work', function: 'consume', concurrency: 1, maxAttempts: 3, retryDelaySeconds: 10, retryBackoff: false, timeoutSeconds: 20 },
        request: { queue: 'work', payload: { mode: 'ok' }, idempotencyKey: 'handed-off', delaySeconds: 0, timeoutMs: null },
      })
      assert.deepEqual([row.state, row.attempts], ['queued', 0], 'answered as enqueued')
      const [started] = await h.t.db.query<{ state: string; attempts: number }>('select state, attempts from platform.jobs where id = $1', [row.id])
      assert.notEqual(started!.state, 'queued', 'started by the enqueue itself')
      let state = started!.state
      for (let i = 0; i < 200 && state !== 'succeeded'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        state = (await h.t.db.query<{ state: string }>('select state from platform.jobs where id = $1', [row.id]))[0]!.state
      }
      assert.equal(state, 'succeeded')
      assert.equal(notices, 0, 'nothing was notified')
    } finally {
      await unlisten()
    }
  })
})
