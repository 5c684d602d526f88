// Due marks (migration 0032) at the storage level: a claim walks only the queues whose mark
// has come, so a queue's mark must never be later than its earliest waiting job. The enqueue
// and a retry lower it, a claim moves it to the next waiting job, an enqueue that commits
// while a claim moves it keeps its job visible, and the maintenance sets early marks right.
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { seedJobNamespace } from './test-namespace.ts'
import { insertIdempotent, payloadHash } from './enqueue.ts'
import { claimDueJobs, deadLetterUndeclared, markFailed, repairEarlyMarks, type NewJob } from './queries.ts'

const T0 = new Date('2026-11-22T00:00:00Z')
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000)

describe(`due marks (${backend})`, () => {
  let t: TestDb
  let appId: string
  let namespaceId: string

  before(async () => {
    t = await createTestDb()
    ;({ appId, namespaceId } = await seedJobNamespace(t.db, { slug: 'marks-app', schema: 'app_marks', rolePrefix: 'ns_0123456789ef' }))
  })
  after(() => t.cleanup())
  beforeEach(async () => {
    await t.db.query('delete from platform.jobs')
    await t.db.query('delete from platform.job_queues')
    await t.db.query('delete from platform.job_namespaces')
  })

  function job(key: string, options: { queue?: string; now?: Date; delaySeconds?: number } = {}): NewJob {
    const payload = { key }
    const now = options.now ?? T0
    return {
      appId, namespaceId, kind: 'queue', queue: options.queue ?? 'q', payload, payloadSha256: payloadHash(payload), idempotencyKey: key,
      enqueuedBy: null, concurrency: 5, maxAttempts: 3, retryDelaySeconds: 30, retryBackoff: false, timeoutSeconds: 60,
      runAt: new Date(now.getTime() + (options.delaySeconds ?? 0) * 1000), now,
    }
  }

  async function mark(queue = 'q'): Promise<Date | null> {
    const [found] = await t.db.query<{ next_run_at: Date | null }>(
      'select next_run_at from platform.job_queue_marks where namespace_id = $1 and queue = $2', [namespaceId, queue])
    assert.ok(found, `queue ${queue} has a mark`)
    return found.next_run_at
  }

  const claim = (now: Date) => claimDueJobs(t.db, { now, limit: 10, owner: 'test', leaseGraceSeconds: 60 })

  test('the enqueue lowers the mark to the job; a claim takes it when due and moves the mark to the next waiting job, then to none', async () => {
    await insertIdempotent(t.db, job('later', { delaySeconds: 120 }), null)
    assert.equal((await mark())?.toISOString(), at(120).toISOString())
    await insertIdempotent(t.db, job('sooner', { delaySeconds: 60 }), null)
    assert.equal((await mark())?.toISOString(), at(60).toISOString(), 'lowered')
    await insertIdempotent(t.db, job('latest', { delaySeconds: 600 }), null)
    assert.equal((await mark())?.toISOString(), at(60).toISOString(), 'never raised by an enqueue')
    assert.equal((await claim(at(59))).length, 0, 'not yet')
    assert.deepEqual((await claim(at(60))).map((j) => j.payload), [{ key: 'sooner' }])
    assert.equal((await mark())?.toISOString(), at(120).toISOString(), 'the next waiting job')
    assert.deepEqual((await claim(at(700))).map((j) => j.payload).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [{ key: 'later' }, { key: 'latest' }])
    assert.equal(await mark(), null, 'none waits')
  })

  test('a retry lowers the mark to its run_at, and the claim then finds it', async () => {
    await insertIdempotent(t.db, job('flaky'), null)
    const [started] = await claim(T0)
    assert.equal(await mark(), null)
    assert.equal(await markFailed(t.db, { id: started!.id, attempt: 1, now: at(1), retryable: true, error: { code: 'X', message: 'x' } }), 'retry_wait')
    assert.equal((await mark())?.toISOString(), at(31).toISOString())
    assert.deepEqual((await claim(at(31))).map((j) => [j.id, j.attempts]), [[started!.id, 2]])
  })

  test("a claim that finds its queue's mark held by an uncommitted enqueue leaves it, and the enqueued job is claimed after", { skip: backend !== 'postgres' && 'needs two sessions' }, async () => {
    await insertIdempotent(t.db, job('first'), null)
    await t.db.transaction(async (tx) => {
      // Enqueued, not committed: the claim does not see this job and must not move the mark past it.
      await insertIdempotent(tx, job('second', { now: at(1) }), null)
      assert.deepEqual((await claim(at(1))).map((j) => j.payload), [{ key: 'first' }], 'the claim did not wait for the enqueue')
    })
    const moved = await mark()
    assert.ok(moved !== null && moved.getTime() <= at(1).getTime(), `the mark (${moved?.toISOString()}) is not past the second job`)
    assert.deepEqual((await claim(at(2))).map((j) => j.payload), [{ key: 'second' }])
  })

  test('producers and claimers at once over several queues: every job is claimed once, none left behind its queue\'s mark', { skip: backend !== 'postgres' && 'needs several sessions' }, async () => {
    const JOBS = 400
    let enqueued = 0
    // Set when the test ends, failed or not: no loop outlives it to touch the next test's queues.
    let ended = false
    const produce = async (producer: number) => {
      for (let k = 0; k < JOBS / 4 && !ended; k++) {
        const now = new Date(T0.getTime() + enqueued)
        await insertIdempotent(t.db, job(`p${producer}-${k}`, { queue: `q${k % 5}`, now }), null)
        enqueued += 1
      }
    }
    const seen = new Map<string, number>()
    const consume = async () => {
      for (let idle = 0; idle < 50 && !ended;) {
        const jobs = await claimDueJobs(t.db, { now: at(3600), limit: 8, owner: 'stress', leaseGraceSeconds: 60 })
        for (const claimed of jobs) seen.set(claimed.id, (seen.get(claimed.id) ?? 0) + 1)
        if (jobs.length > 0) {
          idle = 0
          await t.db.query(`select platform.complete_jobs($1::uuid[], $2::int[], $3::timestamptz)`,
            [jobs.map((j) => j.id), jobs.map((j) => j.attempts), at(3600)])
        } else {
          idle += enqueued === JOBS ? 1 : 0
          await new Promise((resolve) => setTimeout(resolve, 2))
        }
      }
    }
    // Two claimers and the results they write, beside producers: before migration 0039 a claim
    // could wait for a result write on one job's row while holding another's, which that write
    // needed (PostgreSQL "deadlock detected", about one run in four here).
    const loops = [produce(0), produce(1), produce(2), produce(3), consume(), consume()]
    try {
      await Promise.all(loops)
    } finally {
      ended = true
      await Promise.allSettled(loops)
    }
    assert.equal(seen.size, JOBS, 'every job was claimed')
    assert.ok([...seen.values()].every((n) => n === 1), 'once')
    const [{ waiting }] = await t.db.query<{ waiting: number }>(
      `select count(*)::int as waiting from platform.jobs where state in ('queued', 'retry_wait')`) as [{ waiting: number }]
    assert.equal(waiting, 0)
  })

  test('an early mark (its jobs dead-lettered by a deploy) is set right by the maintenance; a mark with due work is left', async () => {
    await insertIdempotent(t.db, job('removed', { queue: 'gone' }), null)
    await insertIdempotent(t.db, job('kept', { queue: 'q' }), null)
    await insertIdempotent(t.db, job('delayed', { queue: 'gone', delaySeconds: 3600 }), null)
    await deadLetterUndeclared(t.db, {
      namespaceId, queues: ['q'], crons: [], now: T0,
      queueError: { code: 'QUEUE_NOT_ACTIVE', message: 'gone' }, cronError: { code: 'CRON_NOT_ACTIVE', message: 'gone' },
    })
    assert.equal((await mark('gone'))?.toISOString(), T0.toISOString(), 'early: nothing waits there')
    assert.equal(await repairEarlyMarks(t.db, { now: at(1), limit: 100 }), 1)
    assert.equal(await mark('gone'), null)
    assert.equal((await mark('q'))?.toISOString(), T0.toISOString())
    assert.equal(await repairEarlyMarks(t.db, { now: at(1), limit: 100 }), 0)
  })
})
