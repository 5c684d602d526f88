// The owner API over jobs: history pages with inclusive from/to, limit, nextCursor, queue and
// state filters; per-queue totals; one job; the Agent Feed signals and failure alert. Never
// a payload, idempotency key or enqueuing user. And the example app's reminder queue end to end.
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { CookieClient } from '../../test/cookie-client.ts'
import { appUrl, signInTo } from '../../test/sign-in-flow.ts'
import { collectBundleDir } from '../deploy/bundle-dir.ts'
import { queuesBundle } from './test-app.ts'

const SLUG = 'history'
const JOB_FIELDS = ['attempts', 'createdAt', 'finishedAt', 'id', 'kind', 'lastError', 'maxAttempts', 'queue', 'runAt', 'startedAt', 'state', 'updatedAt']

describe(`jobs owner API (${backend})`, () => {
  let h: Harness
  let token: string
  const ids: string[] = []
  const created: string[] = []

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@acme.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    assert.equal((await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: queuesBundle(SLUG) })).status, 201)
    // Five jobs a minute apart: three on `work` (one fails), two on `wide`.
    const plan: [string, string][] = [['work', 'ok'], ['wide', 'ok'], ['work', 'bad'], ['wide', 'ok'], ['work', 'unavailable']]
    for (const [i, [queue, mode]] of plan.entries()) {
      const res = await h.request('/_service/functions/produce', {
        host: SLUG, headers: { 'x-service-sdk': '1' },
        json: { queue, payload: JSON.stringify({ mode, pad: 'secret-payload' }), options: JSON.stringify({ idempotencyKey: `secret-key-${i}` }) },
      })
      const body = (await res.json()) as { id: string; createdAt: string }
      ids.push(body.id)
      created.push(body.createdAt)
      h.clock.advance(60_000)
    }
    for (let i = 0; i < 4; i++) await h.platform.jobs.runDue()
  })
  after(() => h.close())

  async function get(path: string, as = token): Promise<{ status: number; body: any }> {
    const res = await h.request(path, { token: as })
    return { status: res.status, body: await res.json() }
  }

  test('the history lists jobs newest first with safe fields only, and totals per queue', async () => {
    const { status, body } = await get(`/v1/apps/${SLUG}/jobs`)
    assert.equal(status, 200)
    assert.deepEqual(body.jobs.map((j: { id: string }) => j.id), [...ids].reverse())
    for (const job of body.jobs) assert.deepEqual(Object.keys(job).sort(), JOB_FIELDS)
    const text = JSON.stringify(body)
    assert.ok(!text.includes('secret-payload') && !text.includes('secret-key'), 'no payload or idempotency key')
    assert.equal(body.nextCursor, null)
    assert.deepEqual(body.totals, [
      { queue: 'wide', created: 2, retried: 0, succeeded: 2, failed: 0, waiting: 0, running: 0, depth: 0 },
      { queue: 'work', created: 3, retried: 0, succeeded: 1, failed: 1, waiting: 1, running: 0, depth: 1 },
    ])
  })

  test('limit and nextCursor page through the history; from/to are inclusive; queue and state narrow rows only', async () => {
    const first = await get(`/v1/apps/${SLUG}/jobs?limit=2`)
    assert.deepEqual(first.body.jobs.map((j: { id: string }) => j.id), [ids[4], ids[3]])
    const second = await get(`/v1/apps/${SLUG}/jobs?limit=2&nextCursor=${first.body.nextCursor}`)
    assert.deepEqual(second.body.jobs.map((j: { id: string }) => j.id), [ids[2], ids[1]])
    const third = await get(`/v1/apps/${SLUG}/jobs?limit=2&nextCursor=${second.body.nextCursor}`)
    assert.deepEqual(third.body.jobs.map((j: { id: string }) => j.id), [ids[0]])
    assert.equal(third.body.nextCursor, null)

    const range = await get(`/v1/apps/${SLUG}/jobs?from=${created[1]}&to=${created[3]}`)
    assert.deepEqual(range.body.jobs.map((j: { id: string }) => j.id), [ids[3], ids[2], ids[1]], 'both ends included')
    assert.deepEqual(range.body.totals.map((t: { queue: string; created: number }) => [t.queue, t.created]), [['wide', 2], ['work', 1]])

    const filtered = await get(`/v1/apps/${SLUG}/jobs?queue=work&state=dead_lettered`)
    assert.deepEqual(filtered.body.jobs.map((j: { id: string }) => j.id), [ids[2]])
    assert.equal(filtered.body.totals.length, 2, 'totals ignore the row filters')
  })

  test('a date-only to means the end of that day (inclusive); a date-only from its start', async () => {
    const day = created[0]!.slice(0, 10)
    const { status, body } = await get(`/v1/apps/${SLUG}/jobs?from=${day}&to=${day}`)
    assert.equal(status, 200, JSON.stringify(body))
    assert.equal(body.from, `${day}T00:00:00.000Z`)
    assert.equal(body.to, `${day}T23:59:59.999Z`)
    assert.equal(body.jobs.length, ids.length, "the whole day's jobs")
  })

  test('an app never deployed has an empty history', async () => {
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'empty-app', visibility: 'public' } })).status, 201)
    const { status, body } = await get('/v1/apps/empty-app/jobs')
    assert.equal(status, 200)
    assert.deepEqual([body.jobs, body.totals, body.nextCursor], [[], [], null])
  })

  test('bad query parameters are refused with VALIDATION_FAILED', async () => {
    const overflow = ['from=2026-02-30', 'to=2026-11-31', 'from=2026-13-01', 'to=2026-11-21T24:00:00Z', 'from=2026-11-21T12:60:00Z', 'to=2026-11-21T12:00:61Z']
    for (const query of ['limit=0', 'limit=101', 'state=done', 'from=yesterday', 'nextCursor=abc', `from=${created[3]}&to=${created[1]}`, ...overflow]) {
      const { status, body } = await get(`/v1/apps/${SLUG}/jobs?${query}`)
      assert.equal(status, 400, query)
      assert.equal(body.error.code, 'VALIDATION_FAILED')
    }
  })

  test('one job by id; unknown ids and other owners get 404', async () => {
    const { status, body } = await get(`/v1/apps/${SLUG}/jobs/${ids[2]}`)
    assert.equal(status, 200)
    assert.deepEqual(Object.keys(body.job).sort(), JOB_FIELDS)
    assert.equal(body.job.state, 'dead_lettered')
    assert.deepEqual(body.job.lastError, { code: 'BAD_THING', message: 'The payload names a bad thing' })
    assert.equal((await get(`/v1/apps/${SLUG}/jobs/00000000-0000-4000-8000-000000000000`)).body.error.code, 'JOB_NOT_FOUND')
    assert.equal((await get(`/v1/apps/${SLUG}/jobs/nope`)).status, 404)
    const other = (await h.createOwner('other@acme.test')).token
    assert.equal((await get(`/v1/apps/${SLUG}/jobs/${ids[2]}`, other)).body.error.code, 'APP_NOT_FOUND')
    assert.equal((await get(`/v1/apps/${SLUG}/jobs`, other)).body.error.code, 'APP_NOT_FOUND')
    assert.equal((await get(`/v1/apps/${SLUG}/signals`, other)).body.error.code, 'APP_NOT_FOUND')
    assert.equal((await h.request(`/v1/apps/${SLUG}/jobs`)).status, 401)
  })

  test('signals count jobs, list failure events and fire the failure alert for an hour', async () => {
    const { status, body } = await get(`/v1/apps/${SLUG}/signals`)
    assert.equal(status, 200)
    assert.deepEqual(body.signals, { 'jobs.created': 5, 'jobs.retried': 0, 'jobs.succeeded': 3, 'jobs.failed': 1, 'jobs.active': 1 })
    assert.deepEqual(body.events.map((e: { type: string; job: { id: string } }) => [e.type, e.job.id]), [['job.failed', ids[2]]])
    assert.equal(body.alerts[0].name, 'jobs.failures')
    assert.equal(body.alerts[0].status, 'firing')
    assert.equal(body.alerts[0].failed, 1)
    // The retry of the flaky job counts as retried once it runs again.
    h.clock.advance(10_000)
    await h.platform.jobs.runDue()
    assert.equal((await get(`/v1/apps/${SLUG}/signals`)).body.signals['jobs.retried'], 1)
    h.clock.advance(61 * 60_000)
    const later = await get(`/v1/apps/${SLUG}/signals`)
    assert.equal(later.body.alerts[0].status, 'ok')
    assert.equal(later.body.signals['jobs.failed'], 1, 'the failure still counts in the range')
  })
})

describe(`the example app's reminders (${backend})`, () => {
  let h: Harness

  before(async () => {
    h = await startHarness()
  })
  after(() => h.close())

  test('createTask with a reminder time enqueues a reminder that sendReminder delivers', async () => {
    const { token } = await h.createOwner('owner@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'tasks', visibility: 'private' } })).status, 201)
    const dir = fileURLToPath(new URL('../../../../examples/tasks', import.meta.url))
    const deployed = await h.request('/v1/apps/tasks/deployments', { token, json: collectBundleDir(dir) })
    assert.equal(deployed.status, 201, await deployed.text())
    const browser = new CookieClient(h)
    await signInTo(browser, 'tasks', 'owner@acme.test')
    const res = await browser.fetch(`${appUrl('tasks')}/_service/functions/createTask`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-sdk': '1', accept: 'application/json' },
      body: JSON.stringify({ title: 'Water the plants', remindAt: new Date(Date.now() - 1000).toISOString() }),
    })
    assert.equal(res.status, 200, await res.clone().text())
    const task = (await res.json()) as { id: string; reminded_at: string | null }
    assert.equal(task.reminded_at, null)
    const listed = await h.request('/v1/apps/tasks/jobs', { token })
    const { jobs } = (await listed.json()) as { jobs: { queue: string; state: string }[] }
    assert.deepEqual(jobs.map((j) => [j.queue, j.state]), [['reminders', 'queued']])
    await h.platform.jobs.runDue()
    const [row] = await h.t.db.query<{ reminded_at: Date | null }>('select reminded_at from app_tasks.tasks where id = $1', [task.id])
    assert.ok(row!.reminded_at instanceof Date, 'the consumer marked the task reminded')
    const after = (await (await h.request('/v1/apps/tasks/jobs', { token })).json()) as { jobs: { state: string; attempts: number }[] }
    assert.deepEqual(after.jobs.map((j) => [j.state, j.attempts]), [['succeeded', 1]])
  })
})
