// The cron owner API (list with next runs, manual runs) and cron runs end to end: the
// scheduler enqueues, the jobs engine runs the Function in real Deno with the envelope;
// a Function whose strict schema rejects the envelope fails 400 before its handler.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { collectBundleDir } from '../deploy/bundle-dir.ts'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'

const RECORDER = `import { defineFunction, literal, object, string } from '@service/server'
export default defineFunction({
  input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }),
  async handler({ input, data }) {
    await data.table('runs').create({ envelope: JSON.stringify(input) })
    return null
  },
})`

const EMPTY_SCHEMA = `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), async handler({ data }) { await data.table('runs').create({ envelope: 'handler ran' }); return null } })`

const MIGRATION = `create table runs (id uuid primary key default gen_random_uuid(), envelope text not null);
alter table runs enable row level security;
create policy runs_system on runs for all using (auth.is_system()) with check (auth.is_system());`

const APP = `functions:
  - name: record
    entrypoint: functions/record.ts
    access: system
  - name: strict
    entrypoint: functions/strict.ts
    access: system
cron:
  - name: nightly
    schedule: "0 3 * * *"
    function: record
  - name: berlin
    schedule: "30 2 * * *"
    function: record
    timezone: Europe/Berlin
  - name: off
    schedule: "0 * * * *"
    function: record
    enabled: false
  - name: strict
    schedule: "15 * * * *"
    function: strict
`

interface Job { state: string; queue: string; attempts: number; lastError: { code: string; message: string } | null }

describe(`cron owner API and runs (${backend})`, () => {
  let h: Harness
  let token: string

  before(async () => {
    h = await startHarness()
    ;({ token } = await h.createOwner('owner@acme.test'))
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'clock', visibility: 'public' } })).status, 201)
    const res = await h.request('/v1/apps/clock/deployments', {
      token,
      json: bundle({
        'service.yaml': manifest('clock', APP),
        'functions/record.ts': RECORDER,
        'functions/strict.ts': EMPTY_SCHEMA,
        'database/migrations/0001_runs.sql': MIGRATION,
      }),
    })
    assert.equal(res.status, 201, await res.text())
  })
  after(() => h.close())

  async function job(id: string): Promise<Job> {
    const res = await h.request(`/v1/apps/clock/jobs/${id}`, { token })
    assert.equal(res.status, 200)
    return ((await res.json()) as { job: Job }).job
  }

  async function recorded(): Promise<string[]> {
    const rows = await h.t.db.query<{ envelope: string }>('select envelope from app_clock.runs order by envelope')
    return rows.map((row) => row.envelope)
  }

  test('GET /cron lists the declarations with their next run in UTC and in their zone', async () => {
    h.clock.set('2026-11-21T12:00:00Z')
    const res = await h.request('/v1/apps/clock/cron', { token })
    assert.equal(res.status, 200)
    const { cron } = (await res.json()) as { cron: Record<string, unknown>[] }
    assert.deepEqual(cron.map((c) => [c.name, c.schedule, c.timezone, c.function, c.enabled, c.nextRunAt, c.nextRunAtLocal]), [
      ['nightly', '0 3 * * *', 'UTC', 'record', true, '2026-11-22T03:00:00.000Z', '2026-11-22T03:00:00+00:00'],
      ['berlin', '30 2 * * *', 'Europe/Berlin', 'record', true, '2026-11-22T01:30:00.000Z', '2026-11-22T02:30:00+01:00'],
      ['off', '0 * * * *', 'UTC', 'record', false, null, null],
      ['strict', '15 * * * *', 'UTC', 'strict', true, '2026-11-21T12:15:00.000Z', '2026-11-21T12:15:00+00:00'],
    ])
  })

  test('POST /cron/{name}/runs runs it now with the same envelope, even when disabled', async () => {
    h.clock.set('2026-11-21T12:05:00Z')
    const res = await h.request('/v1/apps/clock/cron/off/runs', { token, method: 'POST' })
    assert.equal(res.status, 202)
    const { run } = (await res.json()) as { run: { jobId: string; cron: string; scheduledAt: string } }
    assert.equal(run.cron, 'off')
    assert.equal(run.scheduledAt, '2026-11-21T12:05:00.000Z')
    await h.platform.jobs.runDue()
    assert.equal((await job(run.jobId)).state, 'succeeded')
    assert.ok((await recorded()).includes(JSON.stringify({ source: 'service.cron', name: 'off', scheduledAt: '2026-11-21T12:05:00.000Z' })))
  })

  test('a manual run does not move the schedule, and two manual runs are two jobs', async () => {
    h.clock.set('2026-11-21T12:06:00Z')
    const one = (await (await h.request('/v1/apps/clock/cron/nightly/runs', { token, method: 'POST' })).json()) as { run: { jobId: string } }
    const two = (await (await h.request('/v1/apps/clock/cron/nightly/runs', { token, method: 'POST' })).json()) as { run: { jobId: string } }
    assert.notEqual(one.run.jobId, two.run.jobId)
    await h.platform.jobs.runDue()
    const { cron } = (await (await h.request('/v1/apps/clock/cron', { token })).json()) as { cron: { name: string; nextRunAt: string }[] }
    assert.equal(cron.find((c) => c.name === 'nightly')!.nextRunAt, '2026-11-22T03:00:00.000Z')
  })

  test('a manual run at the 10,000 active-job limit answers 429 JOBS_LIMIT_REACHED', async () => {
    const [app] = await h.t.db.query<{ id: string }>(`select id from platform.apps where slug = 'clock'`)
    const set = (active: string) => h.t.db.query(
      `update platform.job_namespaces set active = ${active} where namespace_id in (select id from platform.namespaces where app_id = $1)`, [app!.id])
    await set('10000')
    try {
      const res = await h.request('/v1/apps/clock/cron/nightly/runs', { token, method: 'POST' })
      assert.equal(res.status, 429)
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'JOBS_LIMIT_REACHED')
    } finally {
      await set(`(select count(*) from platform.jobs j where j.namespace_id = platform.job_namespaces.namespace_id and j.state in ('queued', 'running', 'retry_wait'))`)
    }
  })

  test('an unknown cron answers 404 CRON_NOT_FOUND; another owner sees no app; no token is 401', async () => {
    const unknown = await h.request('/v1/apps/clock/cron/nope/runs', { token, method: 'POST' })
    assert.equal(unknown.status, 404)
    assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'CRON_NOT_FOUND')
    const { token: stranger } = await h.createOwner('stranger@other.test', 'Other')
    for (const [path, method] of [['/v1/apps/clock/cron', 'GET'], ['/v1/apps/clock/cron/nightly/runs', 'POST']] as const) {
      const res = await h.request(path, { token: stranger, method })
      assert.equal(res.status, 404, path)
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'APP_NOT_FOUND')
      assert.equal((await h.request(path, { method })).status, 401)
    }
  })

  test('a scheduled occurrence runs the Function through the jobs engine with the envelope', async () => {
    h.clock.set('2026-11-22T01:30:02Z')
    const tick = await h.platform.cron.tick()
    assert.equal(tick.enqueued, 2, 'berlin at 02:30 local, and strict at 01:15 (within the last 24 hours, after the deploy)')
    await h.platform.jobs.runDue()
    assert.ok((await recorded()).includes(JSON.stringify({ source: 'service.cron', name: 'berlin', scheduledAt: '2026-11-22T01:30:00.000Z' })))
    const { cron } = (await (await h.request('/v1/apps/clock/cron', { token })).json()) as { cron: { name: string; lastScheduledAt: string; lastJobId: string }[] }
    const berlin = cron.find((c) => c.name === 'berlin')!
    assert.equal(berlin.lastScheduledAt, '2026-11-22T01:30:00.000Z')
    assert.equal((await job(berlin.lastJobId)).state, 'succeeded')
  })

  test('a Function whose strict schema rejects the envelope fails 400 before its handler; the run is recorded as failed', async () => {
    const { cron } = (await (await h.request('/v1/apps/clock/cron', { token })).json()) as { cron: { name: string; lastJobId: string }[] }
    const failed = await job(cron.find((c) => c.name === 'strict')!.lastJobId)
    assert.equal(failed.state, 'dead_lettered')
    assert.equal(failed.queue, 'cron:strict')
    assert.equal(failed.attempts, 1)
    assert.equal(failed.lastError?.code, 'INPUT_INVALID')
    assert.ok(!(await recorded()).includes('handler ran'))
  })
})

describe(`examples/tasks: the dailyDigest cron end to end (${backend})`, () => {
  let h: Harness
  let token: string
  before(async () => {
    h = await startHarness()
    ;({ token } = await h.createOwner('owner@acme.test'))
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'tasks', visibility: 'private' } })).status, 201)
    const res = await h.request('/v1/apps/tasks/deployments', { token, json: collectBundleDir(new URL('../../../../examples/tasks', import.meta.url).pathname) })
    assert.equal(res.status, 201, await res.text())
  })
  after(() => h.close())

  test('07:00 Berlin on a weekday becomes one run of dailyDigest that succeeds and logs', async () => {
    // Deployed Saturday 2026-11-21 12:00Z; the next weekday 07:00 in Berlin is Monday 06:00Z.
    h.clock.set('2026-11-22T23:00:00Z')
    assert.equal((await h.platform.cron.tick()).enqueued, 0, 'no run on the weekend')
    h.clock.set('2026-11-23T06:00:01Z')
    assert.equal((await h.platform.cron.tick()).enqueued, 1)
    assert.equal((await h.platform.cron.tick()).enqueued, 0)
    await h.platform.jobs.runDue()
    const { jobs } = (await (await h.request('/v1/apps/tasks/jobs?queue=cron:daily-digest', { token })).json()) as { jobs: Job[] }
    assert.deepEqual(jobs.map((j) => [j.queue, j.state]), [['cron:daily-digest', 'succeeded']])
    const logs = (await (await h.request('/v1/apps/tasks/logs', { token })).json()) as { logs: { message: string; data?: unknown; fields?: unknown }[] }
    const line = logs.logs.find((l) => l.message === 'daily digest')
    assert.ok(line, JSON.stringify(logs.logs))
    assert.match(JSON.stringify(line), /"scheduledAt":"2026-11-23T06:00:00.000Z"/)
    assert.match(JSON.stringify(line), /"openTasks":0/)
  })
})
