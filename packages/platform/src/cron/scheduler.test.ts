// The cron scheduler over real storage with a ManualClock: occurrences become jobs once,
// no backfill, the 24-hour coalescing rule after downtime, disabled and changed
// declarations, paused apps, the lease between two schedulers and exactly-once firing
// when two processes evaluate at the same moment.
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import type { Db } from '../db/db.ts'
import { openPostgres } from '../db/postgres.ts'
import { ManualClock } from '../lib/clock.ts'
import { silentLogger } from '../lib/logger.ts'
import { createCronScheduler, evaluateSchedules } from './scheduler.ts'

const TARGET = `import { defineFunction, literal, object, string } from '@service/server'
export default defineFunction({ input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }), async handler() { return null } })`

function cronApp(slug: string, entries: string): { files: { path: string; content: string }[] } {
  return bundle({
    'service.yaml': manifest(slug, `functions:
  - name: target
    entrypoint: functions/target.ts
    access: system
cron:
${entries}`),
    'functions/target.ts': TARGET,
  })
}

const entry = (name: string, schedule: string, extra = '') =>
  `  - name: ${name}\n    schedule: "${schedule}"\n    function: target\n${extra}`

describe(`the cron scheduler (${backend})`, () => {
  let h: Harness
  let token: string
  let slugCount = 0
  let slug: string

  before(async () => {
    h = await startHarness()
    ;({ token } = await h.createOwner('owner@acme.test'))
  })
  after(() => h.close())

  beforeEach(async () => {
    // Every test starts at the same instant with its own app and no other app's cron.
    h.clock.set('2026-11-21T12:00:00Z')
    await h.t.db.query('update platform.apps set active_release_id = null')
    slug = `cron${++slugCount}`
    assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
  })

  async function deploy(entries: string) {
    const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: cronApp(slug, entries) })
    assert.equal(res.status, 201, await res.text())
  }

  async function runs(): Promise<{ queue: string; scheduledAt: string; runAt: string }[]> {
    const rows = await h.t.db.query<{ queue: string; payload: { scheduledAt: string }; run_at: Date }>(
      `select j.queue, j.payload, j.run_at from platform.jobs j join platform.apps a on a.id = j.app_id
        where a.slug = $1 and j.kind = 'cron' order by j.payload ->> 'scheduledAt', j.queue`, [slug])
    return rows.map((row) => ({ queue: row.queue, scheduledAt: row.payload.scheduledAt, runAt: new Date(row.run_at).toISOString() }))
  }

  const tickAt = async (iso: string) => {
    h.clock.set(iso)
    return await h.platform.cron.tick()
  }

  test('a due occurrence becomes one job with the cron envelope, due at once', async () => {
    await deploy(entry('hourly', '0 * * * *'))
    assert.deepEqual(await tickAt('2026-11-21T12:30:00Z'), { leader: true, enqueued: 0, held: 0 })
    assert.deepEqual(await tickAt('2026-11-21T13:00:05Z'), { leader: true, enqueued: 1, held: 0 })
    assert.deepEqual(await tickAt('2026-11-21T13:00:20Z'), { leader: true, enqueued: 0, held: 0 })
    assert.deepEqual(await runs(), [{ queue: 'cron:hourly', scheduledAt: '2026-11-21T13:00:00.000Z', runAt: '2026-11-21T13:00:05.000Z' }])
    const [job] = await h.t.db.query<{ payload: unknown }>(
      `select payload from platform.jobs j join platform.apps a on a.id = j.app_id where a.slug = $1`, [slug])
    assert.deepEqual(job!.payload, { source: 'service.cron', name: 'hourly', scheduledAt: '2026-11-21T13:00:00.000Z' })
  })

  test('each occurrence of a frequent schedule fires in turn while ticks keep up', async () => {
    await deploy(entry('often', '*/5 * * * *'))
    for (const at of ['12:05:01', '12:10:01', '12:15:01']) await tickAt(`2026-11-21T${at}Z`)
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), [
      '2026-11-21T12:05:00.000Z', '2026-11-21T12:10:00.000Z', '2026-11-21T12:15:00.000Z',
    ])
  })

  test('a new declaration does not backfill occurrences before its deploy', async () => {
    // 03:00 today has passed when the app is deployed at 12:00.
    await deploy(entry('nightly', '0 3 * * *'))
    assert.equal((await tickAt('2026-11-21T12:01:00Z')).enqueued, 0)
    assert.equal((await tickAt('2026-11-22T03:00:30Z')).enqueued, 1)
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-22T03:00:00.000Z'])
  })

  test('an occurrence between the deploy and the first tick still runs', async () => {
    h.clock.set('2026-11-21T02:59:00Z')
    await deploy(entry('nightly', '0 3 * * *'))
    assert.equal((await tickAt('2026-11-21T03:20:00Z')).enqueued, 1)
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-21T03:00:00.000Z'])
  })

  test('after downtime the missed runs coalesce into the latest occurrence of the last 24 hours', async () => {
    await deploy(entry('hourly', '0 * * * *'))
    await tickAt('2026-11-21T13:00:01Z')
    // Down for 30 hours: 30 hourly occurrences were missed; one runs, the latest.
    assert.deepEqual(await tickAt('2026-11-22T19:30:00Z'), { leader: true, enqueued: 1, held: 0 })
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-21T13:00:00.000Z', '2026-11-22T19:00:00.000Z'])
    assert.equal((await tickAt('2026-11-22T19:59:00Z')).enqueued, 0)
  })

  test('an occurrence missed more than 24 hours ago is not run', async () => {
    // Weekly, Monday 09:00 UTC. Down from Sunday until Tuesday 10:00: Monday's run is 25 hours old.
    await deploy(entry('weekly', '0 9 * * MON'))
    await tickAt('2026-11-22T12:00:00Z')
    assert.equal((await tickAt('2026-11-24T10:00:00Z')).enqueued, 0)
    assert.deepEqual(await runs(), [])
    // The next Monday runs as usual.
    assert.equal((await tickAt('2026-11-30T09:00:00Z')).enqueued, 1)
  })

  test('coalescing is 24 hours back at most even when the schedule moved on long ago', async () => {
    await deploy(entry('nightly', '30 2 * * *', '    timezone: Europe/Berlin\n'))
    // Down for three days; 02:30 Berlin (01:30Z) today is within 24 hours, earlier ones are not.
    assert.equal((await tickAt('2026-11-24T20:00:00Z')).enqueued, 1)
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-24T01:30:00.000Z'])
  })

  test('a disabled declaration does not fire; enabled again, it starts from that deploy', async () => {
    await deploy(entry('hourly', '0 * * * *', '    enabled: false\n'))
    assert.equal((await tickAt('2026-11-21T13:00:01Z')).enqueued, 0)
    h.clock.set('2026-11-21T15:30:00Z')
    await deploy(entry('hourly', '0 * * * *', '    enabled: true\n'))
    assert.equal((await tickAt('2026-11-21T15:40:00Z')).enqueued, 0, '13:00, 14:00 and 15:00 were before the deploy that enabled it')
    assert.equal((await tickAt('2026-11-21T16:00:01Z')).enqueued, 1)
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-21T16:00:00.000Z'])
  })

  test('a changed schedule starts afresh at its deploy and follows the new times', async () => {
    await deploy(entry('job', '0 * * * *'))
    await tickAt('2026-11-21T13:00:01Z')
    h.clock.set('2026-11-21T13:10:00Z')
    await deploy(entry('job', '20 * * * *'))
    assert.equal((await tickAt('2026-11-21T13:20:01Z')).enqueued, 1)
    assert.equal((await tickAt('2026-11-21T14:00:01Z')).enqueued, 0, 'the old schedule no longer fires')
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-21T13:00:00.000Z', '2026-11-21T13:20:00.000Z'])
  })

  test('a paused app holds its occurrences; resumed, it runs the latest one missed within 24 hours, like after downtime', async () => {
    await deploy(entry('hourly', '0 * * * *'))
    await h.t.db.query(`update platform.apps set status = 'paused' where slug = $1`, [slug])
    assert.deepEqual(await tickAt('2026-11-21T13:00:01Z'), { leader: true, enqueued: 0, held: 1 })
    assert.deepEqual(await tickAt('2026-11-21T14:00:01Z'), { leader: true, enqueued: 0, held: 1 })
    await h.t.db.query(`update platform.apps set status = 'active' where slug = $1`, [slug])
    assert.deepEqual(await tickAt('2026-11-21T14:30:00Z'), { leader: true, enqueued: 1, held: 0 }, '13:00 and 14:00 coalesce into 14:00')
    assert.deepEqual(await tickAt('2026-11-21T15:00:01Z'), { leader: true, enqueued: 1, held: 0 })
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-21T14:00:00.000Z', '2026-11-21T15:00:00.000Z'])
  })

  test('an occurrence held by a pause longer than 24 hours is dropped', async () => {
    await deploy(entry('weekly', '0 9 * * MON'))
    await h.t.db.query(`update platform.apps set status = 'suspended' where slug = $1`, [slug])
    assert.deepEqual(await tickAt('2026-11-23T09:00:01Z'), { leader: true, enqueued: 0, held: 1 })
    await h.t.db.query(`update platform.apps set status = 'active' where slug = $1`, [slug])
    assert.deepEqual(await tickAt('2026-11-24T10:00:00Z'), { leader: true, enqueued: 0, held: 0 }, "Monday's run is 25 hours old")
    assert.deepEqual(await runs(), [])
  })

  test('a namespace at its active-job limit still gets its cron run (capacity delays, never drops)', async () => {
    await deploy(entry('hourly', '0 * * * *'))
    await h.t.db.query(
      `insert into platform.job_namespaces (namespace_id, active)
         select n.id, 10000 from platform.namespaces n join platform.apps a on a.id = n.app_id where a.slug = $1
       on conflict (namespace_id) do update set active = 10000`, [slug])
    assert.equal((await tickAt('2026-11-21T13:00:01Z')).enqueued, 1)
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-21T13:00:00.000Z'])
  })

  test('the state of removed declarations is forgotten', async () => {
    await deploy(entry('a', '0 * * * *') + entry('b', '0 * * * *'))
    await tickAt('2026-11-21T13:00:01Z')
    await deploy(entry('a', '0 * * * *'))
    await tickAt('2026-11-21T13:00:02Z')
    const names = await h.t.db.query<{ name: string }>(
      `select s.name from platform.cron_schedules s join platform.namespaces n on n.id = s.namespace_id
         join platform.apps a on a.id = n.app_id where a.slug = $1`, [slug])
    assert.deepEqual(names.map((row) => row.name), ['a'])
  })

  test('a schedule in a zone follows its DST rules: 02:30 Berlin runs at 03:00 on the spring-forward day', async () => {
    h.clock.set('2027-03-27T12:00:00Z')
    await deploy(entry('night', '30 2 * * *', '    timezone: Europe/Berlin\n'))
    assert.equal((await tickAt('2027-03-28T00:59:59Z')).enqueued, 0)
    assert.equal((await tickAt('2027-03-28T01:00:01Z')).enqueued, 1)
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2027-03-28T01:00:00.000Z'])
  })

  test('started, the loop ticks at once and enqueues what is due; stopped, it gives the lease up', async () => {
    await deploy(entry('hourly', '0 * * * *'))
    h.clock.set('2026-11-21T13:00:30Z')
    const loop = createCronScheduler({ db: h.t.db, clock: h.clock, logger: silentLogger })
    await h.t.db.query('delete from platform.cron_lease')
    loop.start()
    for (let wait = 0; wait < 500 && (await runs()).length === 0; wait++) await new Promise((resolve) => setTimeout(resolve, 10))
    await loop.stop()
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-21T13:00:00.000Z'])
    assert.equal((await h.t.db.query('select owner from platform.cron_lease')).length, 0)
  })

  test('of two schedulers only the lease holder evaluates; the other takes over when the lease expires', async () => {
    await deploy(entry('hourly', '0 * * * *'))
    const clock = new ManualClock('2026-11-21T13:00:01Z')
    const a = createCronScheduler({ db: h.t.db, clock, logger: silentLogger, leaseMs: 60_000 })
    const b = createCronScheduler({ db: h.t.db, clock, logger: silentLogger, leaseMs: 60_000 })
    // The harness's own scheduler may hold the lease from earlier tests; let it expire.
    clock.set('2026-11-21T13:00:01Z')
    await h.t.db.query('delete from platform.cron_lease')
    assert.equal((await a.tick()).leader, true)
    assert.equal((await b.tick()).leader, false)
    clock.advance(30_000)
    assert.equal((await b.tick()).leader, false, 'the lease is still valid')
    assert.equal((await a.tick()).leader, true, 'the holder renews it')
    clock.advance(61_000)
    assert.equal((await b.tick()).leader, true, 'expired: b takes over')
    assert.equal((await a.tick()).leader, false)
    await b.stop()
    assert.equal((await a.tick()).leader, true, 'b gave it up on stop')
    await a.stop()
    assert.deepEqual((await runs()).map((run) => run.scheduledAt), ['2026-11-21T13:00:00.000Z'])
  })
})

describe(`exactly once with two processes evaluating at the same moment (${backend})`, () => {
  let h: Harness
  let second: Db
  before(async () => {
    h = await startHarness()
    // On PostgreSQL the second "process" is a separate connection pool; PGlite is one process.
    second = h.t.url ? openPostgres({ url: h.t.url, maxConnections: 4 }) : h.t.db
    const { token } = await h.createOwner('owner@acme.test')
    for (const slug of ['twin1', 'twin2']) {
      assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
      const res = await h.request(`/v1/apps/${slug}/deployments`, {
        token, json: cronApp(slug, entry('minute', '* * * * *') + entry('five', '*/5 * * * *') + entry('berlin', '*/7 * * * *', '    timezone: Europe/Berlin\n')),
      })
      assert.equal(res.status, 201, await res.text())
    }
  })
  after(async () => {
    if (second !== h.t.db) await second.close()
    await h.close()
  })

  test('every occurrence is enqueued once, whichever process gets there', async () => {
    const deps = (db: Db) => ({ db, clock: h.clock, logger: silentLogger })
    let fired = 0
    for (let minute = 1; minute <= 40; minute++) {
      h.clock.set(new Date(Date.parse('2026-11-21T12:00:00Z') + minute * 60_000 + 500))
      const [one, two] = await Promise.all([evaluateSchedules(deps(h.t.db), h.clock.now()), evaluateSchedules(deps(second), h.clock.now())])
      fired += one.enqueued + two.enqueued
    }
    const rows = await h.t.db.query<{ n: number; distinct_runs: number }>(
      `select count(*)::int as n, count(distinct (namespace_id, queue, payload ->> 'scheduledAt'))::int as distinct_runs from platform.jobs where kind = 'cron'`)
    // Per app: 40 minutely, 8 five-minutely, 6 every-7-minutes (12:07 ... 12:42 is past 12:40: 5) occurrences.
    const expected = 2 * (40 + 8 + 5)
    assert.equal(rows[0]!.n, expected)
    assert.equal(rows[0]!.distinct_runs, expected)
    assert.equal(fired, expected, 'each firing was counted by exactly one process')
  })
})
