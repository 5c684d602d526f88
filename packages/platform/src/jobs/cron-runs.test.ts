// Cron runs as jobs: one job per occurrence however often it is enqueued, a fresh job for
// each manual run, the cron envelope as input, and the active declarations for the scheduler.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { enqueueCronRun, listActiveCrons } from './cron-runs.ts'

const CRON_APP = `functions:
  - name: nightly
    entrypoint: functions/nightly.ts
    access: system
    timeoutSeconds: 45
cron:
  - name: nightly
    schedule: "0 3 * * *"
    function: nightly
`

describe(`cron runs (${backend})`, () => {
  let h: Harness
  let app: App
  let namespaceId: string

  before(async () => {
    h = await startHarness()
    const { token } = await h.createOwner('owner@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'crons', visibility: 'public' } })).status, 201)
    const res = await h.request('/v1/apps/crons/deployments', {
      token,
      json: bundle({
        'service.yaml': manifest('crons', CRON_APP),
        'functions/nightly.ts': `import { defineFunction, literal, object, string } from '@service/server'
          export default defineFunction({ input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }), async handler() { return null } })`,
      }),
    })
    assert.equal(res.status, 201, await res.text())
    app = (await findAppBySlug(h.t.db, 'crons'))!
    namespaceId = (await findNamespace(h.t.db, app.id))!.id
  })
  after(() => h.close())

  test('a scheduled occurrence becomes one job however many times it is enqueued', async () => {
    const scheduledAt = new Date('2026-11-22T03:00:00Z')
    const first = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId, cronName: 'nightly', scheduledAt })
    const again = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId, cronName: 'nightly', scheduledAt })
    const inTx = await h.t.db.transaction((tx) => enqueueCronRun(tx, h.clock, { appId: app.id, namespaceId, cronName: 'nightly', scheduledAt }))
    assert.equal(first.created, true)
    assert.deepEqual(again, { jobId: first.jobId, created: false })
    assert.deepEqual(inTx, { jobId: first.jobId, created: false })
    const [row] = await h.t.db.query<{ queue: string; kind: string; payload: unknown; run_at: Date; max_attempts: number; concurrency: number; timeout_seconds: number | null }>(
      'select queue, kind, payload, run_at, max_attempts, concurrency, timeout_seconds from platform.jobs where id = $1', [first.jobId])
    assert.equal(row!.queue, 'cron:nightly')
    assert.equal(row!.kind, 'cron')
    assert.deepEqual(row!.payload, { source: 'service.cron', name: 'nightly', scheduledAt: '2026-11-22T03:00:00.000Z' })
    assert.equal(row!.run_at.toISOString(), '2026-11-22T03:00:00.000Z', 'a future occurrence is due at its time')
    assert.equal(row!.max_attempts, 3, 'a run lost in a crash (or timed out, or unavailable) is tried again')
    assert.equal(row!.concurrency, 1)
    assert.equal(row!.timeout_seconds, 45, "the target Function's timeout, pinned (its lease follows it)")
  })

  test('a manual run counts against the active-job limit (JOBS_LIMIT_REACHED); a scheduled occurrence never does', async () => {
    await h.t.db.query('update platform.job_namespaces set active = 10000 where namespace_id = $1', [namespaceId])
    try {
      await assert.rejects(
        enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId, cronName: 'nightly', scheduledAt: h.clock.now(), manual: true }),
        { code: 'JOBS_LIMIT_REACHED' })
      const scheduled = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId, cronName: 'nightly', scheduledAt: new Date('2026-11-23T03:00:00Z') })
      assert.equal(scheduled.created, true)
    } finally {
      await h.t.db.query(
        `update platform.job_namespaces set active = (select count(*) from platform.jobs where namespace_id = $1 and state in ('queued', 'running', 'retry_wait'))
          where namespace_id = $1`, [namespaceId])
    }
  })

  test('each manual run is a new job, due now', async () => {
    const scheduledAt = h.clock.now()
    const one = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId, cronName: 'nightly', scheduledAt, manual: true })
    const two = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId, cronName: 'nightly', scheduledAt, manual: true })
    assert.equal(one.created, true)
    assert.equal(two.created, true)
    assert.notEqual(one.jobId, two.jobId)
  })

  test('the scheduler finds the cron declarations of active releases', async () => {
    const crons = await listActiveCrons(h.t.db)
    assert.equal(crons.length, 1)
    assert.equal(crons[0]!.appId, app.id)
    assert.equal(crons[0]!.namespaceId, namespaceId)
    assert.equal(crons[0]!.appStatus, 'active')
    assert.deepEqual(crons[0]!.cron.map((c) => [c.name, c.function, c.enabled, c.timezone]), [['nightly', 'nightly', true, 'UTC']])
  })
})
