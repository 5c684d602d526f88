// The jobs engine end to end in one process: ctx.jobs.enqueue/get from a real Function,
// the dispatcher running real consumers in Deno, every state transition of spec 3.1, the
// limits of spec 8 and their error codes. Time is a ManualClock: delays, retries, leases
// and retention are crossed by moving it.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { findNamespace, type Namespace } from '../namespaces/namespaces.ts'
import { enqueueCronRun } from './cron-runs.ts'
import { payloadHash } from './enqueue.ts'
import { claimDueJobs, markSucceeded } from './queries.ts'
import { queuesBundle, queuesYaml } from './test-app.ts'
import { eventually } from '../../test/eventually.ts'

const SLUG = 'queues'

interface JobRecord {
  id: string
  state: string
  attempts: number
  run_at: Date
  last_error: { code: string; message: string } | null
  payload: unknown
  finished_at: Date | null
  concurrency: number
  max_attempts: number
}

describe(`jobs (${backend})`, () => {
  let h: Harness
  let token: string
  let app: App
  let namespace: Namespace

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@acme.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    await deploy(queuesYaml())
    app = (await findAppBySlug(h.t.db, SLUG))!
    namespace = (await findNamespace(h.t.db, app.id))!
  })
  after(() => h.close())

  async function deploy(yaml: string): Promise<void> {
    const res = await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: queuesBundle(SLUG, yaml) })
    assert.equal(res.status, 201, await res.text())
  }

  async function enqueue(queue: string, payload: unknown, options: unknown): Promise<{ status: number; body: any }> {
    const res = await h.request('/_service/functions/produce', {
      host: SLUG,
      headers: { 'x-service-sdk': '1' },
      json: { queue, payload: JSON.stringify(payload), options: JSON.stringify(options) },
    })
    return { status: res.status, body: await res.json() }
  }

  async function enqueued(queue: string, payload: unknown, key: string, extra: Record<string, unknown> = {}): Promise<string> {
    const { status, body } = await enqueue(queue, payload, { idempotencyKey: key, ...extra })
    assert.equal(status, 200, JSON.stringify(body))
    return body.id as string
  }

  async function job(id: string): Promise<JobRecord> {
    const [row] = await h.t.db.query<JobRecord & Record<string, unknown>>(
      'select id, state, attempts, run_at, last_error, payload, finished_at, concurrency, max_attempts from platform.jobs where id = $1', [id])
    assert.ok(row, `job ${id} exists`)
    return row
  }

  async function runs(jobId: string): Promise<{ attempt: number; queue: string; mode: string }[]> {
    const rows = await h.t.db.query<{ attempt: number; queue: string; mode: string }>(
      `select attempt, queue, mode from app_queues.runs where job_id = $1 order by attempt`, [jobId])
    return rows.map((row) => ({ ...row }))
  }

  const seconds = (n: number) => h.clock.advance(n * 1000)

  test('an enqueued job is queued, then delivered once to the consumer with ctx.job, then succeeded', async () => {
    const { status, body } = await enqueue('work', { mode: 'ok' }, { idempotencyKey: 'first' })
    assert.equal(status, 200)
    assert.deepEqual(Object.keys(body).sort(), ['attempts', 'createdAt', 'finishedAt', 'id', 'kind', 'lastError', 'maxAttempts', 'queue', 'runAt', 'startedAt', 'state', 'updatedAt'])
    assert.equal(body.state, 'queued')
    assert.equal(body.queue, 'work')
    assert.equal(body.attempts, 0)
    assert.equal(body.runAt, h.clock.now().toISOString())
    assert.equal(await h.platform.jobs.runDue(), 1)
    assert.deepEqual(await runs(body.id), [{ attempt: 1, queue: 'work', mode: 'ok' }])
    const done = await job(body.id)
    assert.equal(done.state, 'succeeded')
    assert.equal(done.attempts, 1)
    assert.equal(done.last_error, null)
    assert.equal(done.payload, null, 'the payload is not kept once the job has ended')
    assert.equal(await h.platform.jobs.runDue(), 0, 'nothing is delivered twice')
  })

  test('the same idempotency key and payload returns the original job; a different payload is IDEMPOTENCY_KEY_REUSED', async () => {
    const id = await enqueued('work', { mode: 'ok', ms: 1 }, 'same-key')
    const again = await enqueue('work', { ms: 1, mode: 'ok' }, { idempotencyKey: 'same-key', delaySeconds: 30 })
    assert.equal(again.status, 200)
    assert.equal(again.body.id, id)
    const reused = await enqueue('work', { mode: 'ok', ms: 2 }, { idempotencyKey: 'same-key' })
    assert.equal(reused.status, 409)
    assert.equal(reused.body.error.code, 'IDEMPOTENCY_KEY_REUSED')
    const otherQueue = await enqueue('backoff', { mode: 'ok', ms: 2 }, { idempotencyKey: 'same-key' })
    assert.equal(otherQueue.status, 200, 'the key is scoped to the queue')
    assert.notEqual(otherQueue.body.id, id)
    await h.platform.jobs.runDue()
    // After the job ended (payload dropped), the key still answers with the original job.
    const ended = await enqueue('work', { mode: 'ok', ms: 1 }, { idempotencyKey: 'same-key' })
    assert.equal(ended.body.id, id)
    assert.equal(ended.body.state, 'succeeded')
    assert.equal((await enqueue('work', { mode: 'ok' }, { idempotencyKey: 'same-key' })).body.error.code, 'IDEMPOTENCY_KEY_REUSED')
  })

  test('enqueue arguments are checked with precise codes', async () => {
    const cases: [string, unknown, unknown, number, string][] = [
      ['work', { mode: 'ok', data: { '$service.bytes': 'AAE=' } }, { idempotencyKey: 'a0' }, 400, 'JOB_PAYLOAD_INVALID'],
      ['work', ['not', 'an', 'object'], { idempotencyKey: 'a1' }, 400, 'JOB_PAYLOAD_INVALID'],
      ['work', 'text', { idempotencyKey: 'a2' }, 400, 'JOB_PAYLOAD_INVALID'],
      ['work', { mode: 'ok', pad: 'x'.repeat(65536 - 22 + 1) }, { idempotencyKey: 'a3' }, 413, 'JOB_PAYLOAD_TOO_LARGE'],
      ['work', { mode: 'ok' }, {}, 400, 'VALIDATION_FAILED'],
      ['work', { mode: 'ok' }, { idempotencyKey: '' }, 400, 'VALIDATION_FAILED'],
      ['work', { mode: 'ok' }, { idempotencyKey: 'a4', delaySeconds: 7 * 24 * 3600 + 1 }, 400, 'VALIDATION_FAILED'],
      ['work', { mode: 'ok' }, { idempotencyKey: 'a5', delaySeconds: -1 }, 400, 'VALIDATION_FAILED'],
      ['work', { mode: 'ok' }, { idempotencyKey: 'a6', timeoutMs: 0 }, 400, 'VALIDATION_FAILED'],
      ['work', { mode: 'ok' }, { idempotencyKey: 'a7', priority: 1 }, 400, 'VALIDATION_FAILED'],
      ['work', { mode: 'ok' }, { idempotencyKey: 'a8', files: { read: [] } }, 400, 'FILE_GRANT_INVALID'],
      ['nope', { mode: 'ok' }, { idempotencyKey: 'a9' }, 404, 'QUEUE_NOT_DECLARED'],
      // PostgreSQL's jsonb cannot hold U+0000, in a value or a key.
      ['work', { mode: 'ok', pad: 'a\u0000b' }, { idempotencyKey: 'n0' }, 400, 'JOB_PAYLOAD_INVALID'],
      ['work', { mode: 'ok', deep: [{ 'k\u0000': 1 }] }, { idempotencyKey: 'n1' }, 400, 'JOB_PAYLOAD_INVALID'],
      // The size is in UTF-8 bytes: 'é' is two.
      ['work', { mode: 'ok', pad: '\u00e9'.repeat(32758) }, { idempotencyKey: 'n2' }, 413, 'JOB_PAYLOAD_TOO_LARGE'],
    ]
    for (const [queue, payload, options, status, code] of cases) {
      const res = await enqueue(queue, payload, options)
      assert.equal(res.status, status, `${JSON.stringify(options)}: ${JSON.stringify(res.body)}`)
      assert.equal(res.body.error.code, code)
    }
    const [{ n }] = await h.t.db.query<{ n: number }>(`select count(*)::int as n from platform.jobs where idempotency_key like 'a_' or idempotency_key like 'n_'`) as [{ n: number }]
    assert.equal(n, 0, 'a refused enqueue leaves no job')
    // The limits themselves are allowed.
    const largest = await enqueue('work', { mode: 'ok', pad: 'x'.repeat(65536 - 22) }, { idempotencyKey: 'b1', delaySeconds: 7 * 24 * 3600 })
    assert.equal(largest.status, 200, JSON.stringify(largest.body))
    assert.equal(largest.body.runAt, new Date(h.clock.now().getTime() + 7 * 24 * 3600 * 1000).toISOString())
    const largestMultiByte = await enqueue('work', { mode: 'ok', pad: '\u00e9'.repeat(32757) }, { idempotencyKey: 'b2' })
    assert.equal(largestMultiByte.status, 200, 'exactly 65,536 bytes (32,779 characters)')
  })

  test('a delayed job waits for its time', async () => {
    const id = await enqueued('work', { mode: 'ok' }, 'delayed', { delaySeconds: 60 })
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).state, 'queued')
    seconds(59)
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).state, 'queued')
    seconds(1)
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).state, 'succeeded')
  })

  test('errors.unavailable is retried after the delay until maxAttempts, then dead-lettered with the latest error', async () => {
    const id = await enqueued('work', { mode: 'unavailable' }, 'flaky')
    await h.platform.jobs.runDue()
    let row = await job(id)
    assert.equal(row.state, 'retry_wait')
    assert.equal(row.attempts, 1)
    assert.equal(row.last_error?.code, 'UPSTREAM_DOWN')
    assert.equal(row.run_at.toISOString(), new Date(h.clock.now().getTime() + 10_000).toISOString())
    seconds(9)
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).attempts, 1, 'not before the retry delay')
    seconds(1)
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).state, 'retry_wait')
    seconds(10)
    await h.platform.jobs.runDue()
    row = await job(id)
    assert.equal(row.state, 'dead_lettered')
    assert.equal(row.attempts, 3, 'maxAttempts counts the first delivery')
    assert.deepEqual(row.last_error, { code: 'UPSTREAM_DOWN', message: 'The upstream is down' })
    assert.deepEqual((await runs(id)).map((r) => r.attempt), [1, 2, 3])
    seconds(3600)
    assert.equal(await h.platform.jobs.runDue(), 0)
  })

  test('retryBackoff doubles the delay between later attempts', async () => {
    const id = await enqueued('backoff', { mode: 'unavailable' }, 'backing-off')
    const delays: number[] = []
    for (let attempt = 1; attempt <= 3; attempt++) {
      await h.platform.jobs.runDue()
      const row = await job(id)
      assert.equal(row.attempts, attempt)
      delays.push((row.run_at.getTime() - h.clock.now().getTime()) / 1000)
      h.clock.set(row.run_at)
    }
    assert.deepEqual(delays, [10, 20, 40])
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).state, 'dead_lettered')
  })

  test('a typed error other than unavailable, or an untyped throw, dead-letters at once', async () => {
    const typed = await enqueued('work', { mode: 'bad' }, 'typed-error')
    const untyped = await enqueued('backoff', { mode: 'throw' }, 'untyped-error')
    const invalid = await enqueued('work', { mode: 'ok', extra: true }, 'schema-rejects')
    for (let i = 0; i < 3; i++) await h.platform.jobs.runDue()
    const typedRow = await job(typed)
    assert.equal(typedRow.state, 'dead_lettered')
    assert.equal(typedRow.attempts, 1)
    assert.deepEqual(typedRow.last_error, { code: 'BAD_THING', message: 'The payload names a bad thing' })
    const untypedRow = await job(untyped)
    assert.equal(untypedRow.state, 'dead_lettered')
    assert.equal(untypedRow.attempts, 1)
    assert.equal(untypedRow.last_error?.code, 'FUNCTION_FAILED')
    const invalidRow = await job(invalid)
    assert.equal(invalidRow.state, 'dead_lettered')
    assert.equal(invalidRow.last_error?.code, 'INPUT_INVALID')
  })

  test('an attempt past the queue timeout is retried', async () => {
    const id = await enqueued('slow', { mode: 'sleep', ms: 5000 }, 'too-slow')
    await h.platform.jobs.runDue()
    const row = await job(id)
    assert.equal(row.state, 'retry_wait')
    assert.equal(row.last_error?.code, 'FUNCTION_TIMEOUT')
    seconds(5)
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).state, 'dead_lettered')
    assert.equal((await job(id)).attempts, 2)
  })

  test("jobs on the worker a timeout kills are bystanders: their attempt is not counted and they run again at once", async () => {
    // Three jobs that sleep and one that overruns its 1 s timeout, at once: the Functions
    // pool (two workers) puts at least one sleeper on the worker that the timeout kills.
    const sleepers = [
      await enqueued('backoff', { mode: 'sleep', ms: 2500 }, 'bystander-1'),
      await enqueued('backoff', { mode: 'sleep', ms: 2500 }, 'bystander-2'),
      await enqueued('backoff', { mode: 'sleep', ms: 2500 }, 'bystander-3'),
    ]
    const culprit = await enqueued('slow', { mode: 'sleep', ms: 5000 }, 'culprit')
    try {
      await h.platform.jobs.runDue()
      assert.equal((await job(culprit)).last_error?.code, 'FUNCTION_TIMEOUT')
      const runsBefore = (await Promise.all(sleepers.map(runs))).flat().length
      assert.ok(runsBefore >= 3, 'every sleeper started')
      await h.platform.jobs.runDue()
      for (const id of sleepers) {
        const row = await job(id)
        assert.equal(row.state, 'succeeded')
        assert.equal(row.attempts, 1, 'a bystander of the kill did not spend an attempt')
      }
      const attempts = (await Promise.all(sleepers.map(runs))).flat()
      assert.ok(attempts.length > 3, 'at least one sleeper was killed with the culprit and ran again')
      assert.ok(attempts.every((run) => run.attempt === 1))
    } finally {
      // The culprit's last attempt (and any sleeper left), now, pass or fail, so that its
      // timeout kills no later test's job.
      for (let i = 0; i < 4; i++) {
        const left = await h.t.db.query(`select 1 from platform.jobs where id = any($1::uuid[]) and state not in ('succeeded', 'dead_lettered')`,
          [[...sleepers, culprit]])
        if (left.length === 0) break
        seconds(20)
        await h.platform.jobs.runDue()
      }
    }
    assert.equal((await job(culprit)).state, 'dead_lettered')
  })

  test('a result that cannot be written at first is written on a retry (the consumer is not run again)', async () => {
    // A real database error on the first two attempts to record success.
    await h.t.db.query(`create sequence platform.test_fail_success`)
    await h.t.db.query(`create function platform.test_fail_success() returns trigger language plpgsql as $$
      begin
        if new.state = 'succeeded' and nextval('platform.test_fail_success') <= 2 then raise exception 'injected failure'; end if;
        return new;
      end $$`)
    await h.t.db.query(`create trigger test_fail_success before update on platform.jobs for each row execute function platform.test_fail_success()`)
    try {
      const id = await enqueued('work', { mode: 'ok' }, 'write-retried')
      await h.platform.jobs.runDue()
      const row = await job(id)
      assert.equal(row.state, 'succeeded')
      assert.equal(row.attempts, 1)
      assert.equal((await runs(id)).length, 1)
    } finally {
      await h.t.db.query(`drop trigger test_fail_success on platform.jobs`)
      await h.t.db.query(`drop function platform.test_fail_success()`)
      await h.t.db.query(`drop sequence platform.test_fail_success`)
    }
  })

  test('a queue runs at most its concurrency at once, pinned when the job was enqueued', async () => {
    const ids = []
    for (let i = 0; i < 5; i++) ids.push(await enqueued('wide', { mode: 'ok' }, `wide-${i}`))
    assert.equal(await h.platform.jobs.runDue(), 2)
    assert.equal(await h.platform.jobs.runDue(), 2)
    assert.equal(await h.platform.jobs.runDue(), 1)
    for (const id of ids) assert.equal((await job(id)).state, 'succeeded')

    // Enqueued under concurrency 1 and maxAttempts 1, then the declaration changes.
    await deploy(queuesYaml({ workMaxAttempts: 1 }))
    const pinned = [await enqueued('work', { mode: 'unavailable' }, 'pinned-0')]
    seconds(1)
    pinned.push(await enqueued('work', { mode: 'ok' }, 'pinned-1'))
    seconds(1)
    await deploy(queuesYaml({ workConcurrency: 3, workMaxAttempts: 5 }))
    assert.equal(await h.platform.jobs.runDue(), 1, 'jobs enqueued under concurrency 1 keep it')
    assert.equal((await job(pinned[0]!)).state, 'dead_lettered', 'and their single attempt')
    const fresh = await enqueued('work', { mode: 'ok' }, 'pinned-2')
    assert.deepEqual([(await job(pinned[1]!)).concurrency, (await job(fresh)).concurrency], [1, 3])
    assert.equal(await h.platform.jobs.runDue(), 2, 'the new job runs beside the pinned one under its own concurrency 3')
    assert.equal((await job(pinned[1]!)).state, 'succeeded')
    assert.equal((await job(fresh)).state, 'succeeded')
    await deploy(queuesYaml())
  })

  test('removing a queue dead-letters its pending jobs with QUEUE_NOT_ACTIVE; restoring it does not redrive them', async () => {
    const waiting = await enqueued('backoff', { mode: 'ok' }, 'removed', { delaySeconds: 60 })
    const retrying = await enqueued('backoff', { mode: 'unavailable' }, 'removed-retrying')
    await h.platform.jobs.runDue()
    assert.equal((await job(retrying)).state, 'retry_wait')
    const other = await enqueued('work', { mode: 'ok' }, 'other-queue', { delaySeconds: 60 })
    await deploy(queuesYaml({ without: 'backoff' }))
    for (const id of [waiting, retrying]) {
      const row = await job(id)
      assert.equal(row.state, 'dead_lettered')
      assert.equal(row.last_error?.code, 'QUEUE_NOT_ACTIVE')
    }
    assert.equal((await job(retrying)).attempts, 1)
    assert.equal((await job(other)).state, 'queued', 'other queues are untouched')
    const refused = await enqueue('backoff', { mode: 'ok' }, { idempotencyKey: 'removed-new' })
    assert.equal(refused.body.error.code, 'QUEUE_NOT_DECLARED')
    await deploy(queuesYaml())
    seconds(3600)
    await h.platform.jobs.runDue()
    assert.equal((await job(waiting)).state, 'dead_lettered')
    assert.equal((await runs(waiting)).length, 0)
    assert.equal((await job(other)).state, 'succeeded')
  })

  test('a paused app keeps its due jobs waiting without consuming attempts, and runs them once active again', async () => {
    const id = await enqueued('work', { mode: 'ok' }, 'paused')
    await h.t.db.query(`update platform.apps set status = 'paused', paused_reason = 'verification_required' where id = $1`, [app.id])
    try {
      const enqueuedRow = await job(id)
      assert.equal(await h.platform.jobs.runDue(), 0)
      seconds(60)
      assert.equal(await h.platform.jobs.runDue(), 0)
      const row = await job(id)
      assert.deepEqual([row.state, row.attempts], ['queued', 0])
      assert.equal(row.run_at.toISOString(), enqueuedRow.run_at.toISOString(), 'left alone: nothing rewrites the due jobs of a paused app')
    } finally {
      await h.t.db.query(`update platform.apps set status = 'active', paused_reason = null where id = $1`, [app.id])
    }
    await h.platform.jobs.runDue()
    const row = await job(id)
    assert.equal(row.state, 'succeeded')
    assert.equal(row.attempts, 1)
  })

  test('suspended and archived apps keep their due jobs waiting too (archiving dead-letters nothing)', async () => {
    for (const status of ['suspended', 'archived']) {
      const id = await enqueued('work', { mode: 'ok' }, `inactive-${status}`)
      await h.t.db.query(`update platform.apps set status = $2 where id = $1`, [app.id, status])
      try {
        const enqueuedRow = await job(id)
        seconds(60)
        assert.equal(await h.platform.jobs.runDue(), 0)
        const row = await job(id)
        assert.deepEqual([row.state, row.attempts, row.run_at.toISOString()], ['queued', 0, enqueuedRow.run_at.toISOString()])
      } finally {
        await h.t.db.query(`update platform.apps set status = 'active' where id = $1`, [app.id])
      }
      await h.platform.jobs.runDue()
      assert.equal((await job(id)).state, 'succeeded')
    }
  })

  test('a running job whose queue was removed finishes its attempt; a retry is then dead-lettered QUEUE_NOT_ACTIVE without counting', async () => {
    const id = await enqueued('backoff', { mode: 'ok' }, 'removed-while-running')
    await claimDueJobs(h.t.db, { now: h.clock.now(), limit: 10, owner: 'dead-process', leaseGraceSeconds: 60 })
    await deploy(queuesYaml({ without: 'backoff' }))
    assert.equal((await job(id)).state, 'running', 'a running attempt is not cut short by the deploy')
    seconds(80)
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).state, 'retry_wait')
    seconds(10)
    await h.platform.jobs.runDue()
    const row = await job(id)
    assert.equal(row.state, 'dead_lettered')
    assert.equal(row.last_error?.code, 'QUEUE_NOT_ACTIVE')
    assert.equal(row.attempts, 1, 'the dispatch that found no declaration ran nothing and counted nothing')
    await deploy(queuesYaml())
  })

  test('a job whose process died mid-attempt is picked up once its lease expires, the lost attempt counted once', async () => {
    const id = await enqueued('work', { mode: 'ok' }, 'orphaned')
    // Another process claims the job and dies without a result.
    const claimed = await claimDueJobs(h.t.db, { now: h.clock.now(), limit: 10, owner: 'dead-process', leaseGraceSeconds: 60 })
    assert.deepEqual(claimed.map((c) => c.id), [id])
    assert.equal((await job(id)).state, 'running')
    await h.platform.jobs.runDue()
    assert.equal((await job(id)).state, 'running', 'the lease (timeout 20 s + 60 s) still holds')
    seconds(80)
    await h.platform.jobs.runDue()
    let row = await job(id)
    assert.equal(row.state, 'retry_wait')
    assert.equal(row.attempts, 1)
    assert.equal(row.last_error?.code, 'JOB_LEASE_EXPIRED')
    seconds(10)
    await h.platform.jobs.runDue()
    row = await job(id)
    assert.equal(row.state, 'succeeded')
    assert.equal(row.attempts, 2)
    assert.deepEqual((await runs(id)).map((r) => r.attempt), [2])
    assert.deepEqual(await markSucceeded(h.t.db, { attempts: [{ id, attempt: 1 }], now: h.clock.now() }), [], "the dead process's late result is ignored")
  })

  test('ctx.jobs.get returns state, timestamps and the latest error of this app namespace only', async () => {
    const id = await enqueued('work', { mode: 'bad' }, 'looked-up')
    await h.platform.jobs.runDue()
    const res = await h.request('/_service/functions/lookup', { host: SLUG, headers: { 'x-service-sdk': '1' }, json: { id } })
    const { job: seen } = (await res.json()) as { job: Record<string, unknown> }
    assert.equal(seen.id, id)
    assert.equal(seen.state, 'dead_lettered')
    assert.deepEqual(seen.lastError, { code: 'BAD_THING', message: 'The payload names a bad thing' })
    assert.equal(typeof seen.createdAt, 'string')
    assert.equal(typeof seen.finishedAt, 'string')
    for (const unknown of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const miss = await h.request('/_service/functions/lookup', { host: SLUG, headers: { 'x-service-sdk': '1' }, json: { id: unknown } })
      assert.deepEqual(await miss.json(), { job: null })
    }
  })

  test('at most 10,000 active jobs per app namespace; an existing key still answers, and room frees as jobs end', async () => {
    await h.t.db.transaction(async (tx) => {
      await tx.query(
        `insert into platform.jobs (app_id, namespace_id, kind, queue, state, payload, payload_sha256, idempotency_key,
           concurrency, max_attempts, retry_delay_seconds, retry_backoff, timeout_seconds, run_at, created_at, updated_at)
         select $1, $2, 'queue', 'work', 'queued', '{}', $5, 'bulk-' || g, 1, 1, 0, false, 20, $3, $4, $4
           from generate_series(1, 10000 - coalesce((select active from platform.job_namespaces where namespace_id = $2), 0)) g`,
        [app.id, namespace.id, new Date(h.clock.now().getTime() + 86_400_000), h.clock.now(), payloadHash({})])
      await tx.query(`insert into platform.job_namespaces (namespace_id, active) values ($1, 10000)
                      on conflict (namespace_id) do update set active = 10000`, [namespace.id])
    })
    const [{ n }] = await h.t.db.query<{ n: number }>(
      `select count(*)::int as n from platform.jobs where namespace_id = $1 and state in ('queued', 'running', 'retry_wait')`, [namespace.id]) as [{ n: number }]
    assert.equal(n, 10_000)
    const refused = await enqueue('work', { mode: 'ok' }, { idempotencyKey: 'one-too-many' })
    assert.equal(refused.status, 429)
    assert.equal(refused.body.error.code, 'JOBS_LIMIT_REACHED')
    const existing = await enqueue('work', {}, { idempotencyKey: 'bulk-1' })
    assert.equal(existing.status, 200, 'an enqueue that returns the original job is not refused')
    // One job ends: there is room for one more.
    const [bulk] = await h.t.db.query<{ id: string }>(`select id from platform.jobs where idempotency_key = 'bulk-1'`)
    // A write behind the engine's back: the queue's due mark follows it, as every statement of the engine that makes a job wait does.
    await h.t.db.query(`update platform.jobs set run_at = $2 where id = $1`, [bulk!.id, h.clock.now()])
    await h.t.db.query(`update platform.job_queue_marks set next_run_at = $2, version = version + 1 where namespace_id = $1 and queue = 'work'`,
      [namespace.id, h.clock.now()])
    await h.platform.jobs.runDue()
    assert.equal((await job(bulk!.id)).state, 'dead_lettered', 'its empty payload fails the consumer schema')
    assert.equal((await enqueue('work', { mode: 'ok' }, { idempotencyKey: 'room-again' })).status, 200)
    assert.equal((await enqueue('work', { mode: 'ok' }, { idempotencyKey: 'no-room' })).body.error.code, 'JOBS_LIMIT_REACHED')
    await h.t.db.query(`delete from platform.jobs where idempotency_key like 'bulk-%' or idempotency_key = 'room-again'`)
    await h.t.db.query(`update platform.job_namespaces set active = (select count(*) from platform.jobs where namespace_id = $1 and state in ('queued', 'running', 'retry_wait')) where namespace_id = $1`, [namespace.id])
  })

  test('timeoutMs bounds only the producer: a slow enqueue fails ENQUEUE_TIMEOUT, still lands, and the retry gets that job', async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const locked = new Promise<void>((resolve) => {
      void h.t.db.transaction(async (tx) => {
        await tx.query('select active from platform.job_namespaces where namespace_id = $1 for update', [namespace.id])
        resolve()
        await held
      })
    })
    await locked
    const slow = enqueue('work', { mode: 'ok' }, { idempotencyKey: 'slow-enqueue', timeoutMs: 300 })
    const settled = await Promise.race([slow, new Promise((resolve) => setTimeout(() => resolve('pending'), 3000))])
    release()
    if (settled === 'pending') {
      // PGlite is one session: the whole call waited behind the open transaction.
      await slow
    } else {
      const { status, body } = settled as { status: number; body: any }
      assert.equal(status, 504)
      assert.equal(body.error.code, 'ENQUEUE_TIMEOUT')
    }
    let landed: { id: string }[] = []
    await eventually(async () => (landed = await h.t.db.query<{ id: string }>(
      `select id from platform.jobs where idempotency_key = 'slow-enqueue'`)).length > 0, 'the slow enqueue committed', 10_000)
    assert.equal(landed.length, 1, 'the enqueue committed after the producer gave up')
    const retry = await enqueue('work', { mode: 'ok' }, { idempotencyKey: 'slow-enqueue' })
    assert.equal(retry.body.id, landed[0]!.id)
    await h.platform.jobs.runDue()
  })

  test('cron runs are jobs: the envelope as input, ctx.job null, a strict schema that rejects it dead-letters the run', async () => {
    const scheduledAt = new Date('2026-11-21T03:00:00Z')
    const run = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId: namespace.id, cronName: 'nightly', scheduledAt })
    const strict = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId: namespace.id, cronName: 'strict', scheduledAt })
    await h.platform.jobs.runDue()
    assert.equal((await job(run.jobId)).state, 'succeeded')
    const [recorded] = await h.t.db.query<{ queue: string; mode: string }>(`select queue, mode from app_queues.runs where mode like 'cron:%'`)
    assert.deepEqual(recorded, { queue: 'no-job', mode: 'cron:nightly@2026-11-21T03:00:00.000Z' })
    const failed = await job(strict.jobId)
    assert.equal(failed.state, 'dead_lettered')
    assert.equal(failed.attempts, 1)
    assert.equal(failed.last_error?.code, 'INPUT_INVALID')
  })

  test("a cron run whose process died is run again once its lease (the Function's timeout + 60 s) expires", async () => {
    const run = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId: namespace.id, cronName: 'nightly', scheduledAt: new Date('2026-11-20T03:00:00Z') })
    const claimed = await claimDueJobs(h.t.db, { now: h.clock.now(), limit: 10, owner: 'dead-process', leaseGraceSeconds: 60 })
    assert.deepEqual(claimed.map((c) => c.id), [run.jobId])
    const [lease] = await h.t.db.query<{ lease_expires_at: Date }>('select lease_expires_at from platform.jobs where id = $1', [run.jobId])
    assert.equal(lease!.lease_expires_at.getTime() - h.clock.now().getTime(), (30 + 60) * 1000, "nightly's default 30 s timeout, not 15 minutes")
    seconds(90)
    await h.platform.jobs.runDue()
    let row = await job(run.jobId)
    assert.equal(row.state, 'retry_wait')
    assert.equal(row.last_error?.code, 'JOB_LEASE_EXPIRED')
    seconds(60)
    await h.platform.jobs.runDue()
    row = await job(run.jobId)
    assert.equal(row.state, 'succeeded')
    assert.equal(row.attempts, 2)
    const recorded = await h.t.db.query(`select 1 from app_queues.runs where mode = 'cron:nightly@2026-11-20T03:00:00.000Z'`)
    assert.equal(recorded.length, 1)
  })

  test('a cron run whose entry was removed is dead-lettered CRON_NOT_ACTIVE', async () => {
    const run = await enqueueCronRun(h.t.db, h.clock, { appId: app.id, namespaceId: namespace.id, cronName: 'nightly', scheduledAt: new Date(h.clock.now().getTime() + 60_000) })
    await deploy(queuesYaml().replace(/  - name: nightly\n    schedule: "0 3 \* \* \*"\n    function: nightly\n/, ''))
    const row = await job(run.jobId)
    assert.equal(row.state, 'dead_lettered')
    assert.equal(row.last_error?.code, 'CRON_NOT_ACTIVE')
    await deploy(queuesYaml())
  })

  test('terminal jobs are kept 14 days after they end, then purged; pending jobs are kept', async () => {
    const ended = await enqueued('work', { mode: 'ok' }, 'retained')
    await h.platform.jobs.runDue()
    const pending = await enqueued('work', { mode: 'ok' }, 'pending-long', { delaySeconds: 7 * 24 * 3600 })
    h.clock.advance(14 * 24 * 3600 * 1000)
    await h.platform.jobs.purge()
    assert.equal((await job(ended)).state, 'succeeded', 'exactly 14 days: still kept')
    h.clock.advance(1000)
    assert.ok((await h.platform.jobs.purge()) >= 1)
    assert.equal((await h.t.db.query('select 1 from platform.jobs where id = $1', [ended])).length, 0)
    assert.equal((await job(pending)).state, 'queued')
    // Other jobs of the queue (concurrency 1) became due earlier; they go first.
    for (let i = 0; i < 5 && (await job(pending)).state === 'queued'; i++) await h.platform.jobs.runDue()
    assert.equal((await job(pending)).state, 'succeeded')
  })

  // Last: the tests above moved jobs out of `running` every way there is (success, retryable
  // and final failures, timeouts, bystanders, paused apps, removed queues, expired leases).
  test("each queue's claimed and ended counters differ by exactly its running jobs, after every kind of attempt end above", async () => {
    const stuck = await enqueued('wide', { mode: 'ok' }, 'counted-while-running')
    await claimDueJobs(h.t.db, { now: h.clock.now(), limit: 10, owner: 'dead-process', leaseGraceSeconds: 60 })
    const rows = await h.t.db.query<{ queue: string; counted: number; running: number }>(
      `select q.queue, (q.claimed - e.ended)::int as counted,
              (select count(*)::int from platform.jobs j where j.namespace_id = q.namespace_id and j.queue = q.queue and j.state = 'running') as running
         from platform.job_queues q join platform.job_queue_ends e using (namespace_id, queue)
        where q.namespace_id = $1 order by q.queue`, [namespace.id])
    assert.ok(rows.length >= 5, 'the queues and cron runs above')
    for (const row of rows) assert.equal(row.counted, row.running, row.queue)
    assert.equal(rows.find((row) => row.queue === 'wide')?.running, 1, `${stuck} runs`)
  })

  test("each queue's due mark is at or before its earliest waiting job, after every way a job came to wait above", async () => {
    await enqueued('backoff', { mode: 'ok' }, 'waits-at-the-end', { delaySeconds: 60 })
    const rows = await h.t.db.query<{ queue: string; mark: Date | null; earliest: Date | null }>(
      `select q.queue, m.next_run_at as mark,
              (select min(j.run_at) from platform.jobs j
                where j.namespace_id = q.namespace_id and j.queue = q.queue and j.state in ('queued', 'retry_wait')) as earliest
         from platform.job_queues q left join platform.job_queue_marks m using (namespace_id, queue)
        where q.namespace_id = $1 order by q.queue`, [namespace.id])
    assert.ok(rows.some((row) => row.earliest !== null), 'some jobs wait')
    for (const row of rows) {
      if (row.earliest === null) continue
      assert.ok(row.mark !== null && row.mark.getTime() <= row.earliest.getTime(), `${row.queue}: mark ${row.mark?.toISOString()}, earliest ${row.earliest.toISOString()}`)
    }
  })
})
