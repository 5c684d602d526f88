// Enqueue at the storage level: producers racing for one idempotency key at the edge of the
// active-job limit (the limit is a parameter of insertIdempotent, so a small one stands in
// for 10,000), and the active counter kept exact.
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { seedJobNamespace } from './test-namespace.ts'
import type { ServiceError } from '../lib/errors.ts'
import { insertIdempotent, payloadHash } from './enqueue.ts'
import { reconcileActiveCounts } from './retention.ts'
import type { NewJob } from './queries.ts'

describe(`enqueue (${backend})`, () => {
  let t: TestDb
  let appId: string
  let namespaceId: string

  before(async () => {
    t = await createTestDb()
    ;({ appId, namespaceId } = await seedJobNamespace(t.db, { slug: 'race-app', schema: 'app_race', rolePrefix: 'ns_0123456789ab' }))
  })
  after(() => t.cleanup())
  beforeEach(async () => {
    await t.db.query('delete from platform.jobs')
    await t.db.query('delete from platform.job_namespaces')
  })

  function job(key: string, payload: Record<string, unknown>): NewJob {
    const now = new Date('2026-11-22T00:00:00Z')
    return {
      appId, namespaceId, kind: 'queue', queue: 'q', payload, payloadSha256: payloadHash(payload), idempotencyKey: key, enqueuedBy: null,
      concurrency: 1, maxAttempts: 3, retryDelaySeconds: 1, retryBackoff: false, timeoutSeconds: 60, runAt: now, now,
    }
  }

  async function active(): Promise<number> {
    const rows = await t.db.query<{ active: number }>('select active from platform.job_namespaces where namespace_id = $1', [namespaceId])
    return rows[0]?.active ?? 0
  }

  /** Runs `loser` while `winner`'s transaction holds the namespace counter, then commits the winner. */
  async function race<T>(winner: NewJob, loser: () => Promise<T>, limit: number): Promise<PromiseSettledResult<T>> {
    let pending: Promise<T> | undefined
    await t.db.transaction(async (tx) => {
      const won = await insertIdempotent(tx, winner, limit)
      assert.equal(won.created, true)
      pending = loser()
      pending.catch(() => {})
      if (backend === 'postgres') {
        // Commit only once the loser's statement waits for the winner's lock on the counter.
        for (let waited = 0; ; waited += 1) {
          const rows = await t.db.query(
            `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)
          if (rows.length > 0) break
          assert.ok(waited < 500, 'the second enqueue never waited for the first')
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
      }
    })
    const [settled] = await Promise.allSettled([pending!])
    return settled
  }

  test('two enqueues of one key racing for the last free slot: the loser gets the original job, not JOBS_LIMIT_REACHED', async () => {
    await t.db.query('insert into platform.job_namespaces (namespace_id, active) values ($1, 9)', [namespaceId])
    const settled = await race(job('edge', { e: 1 }), () => insertIdempotent(t.db, job('edge', { e: 1 }), 10), 10)
    assert.equal(settled.status, 'fulfilled', settled.status === 'rejected' ? String((settled.reason as ServiceError).code) : '')
    const [row] = await t.db.query<{ id: string }>('select id from platform.jobs where idempotency_key = $1', ['edge'])
    assert.deepEqual({ id: settled.value.row.id, created: settled.value.created }, { id: row!.id, created: false })
    assert.equal(await active(), 10, 'one job counted')
  })

  test('the same race with a different payload is IDEMPOTENCY_KEY_REUSED; a new key at the limit is JOBS_LIMIT_REACHED', async () => {
    await t.db.query('insert into platform.job_namespaces (namespace_id, active) values ($1, 9)', [namespaceId])
    const settled = await race(job('edge', { e: 1 }), () => insertIdempotent(t.db, job('edge', { e: 2 }), 10), 10)
    assert.equal(settled.status, 'rejected')
    assert.equal((settled.reason as ServiceError).code, 'IDEMPOTENCY_KEY_REUSED')
    await assert.rejects(insertIdempotent(t.db, job('other', { e: 1 }), 10), { code: 'JOBS_LIMIT_REACHED' })
    assert.equal(await active(), 10)
  })

  test('a drifted active-job counter (a process died between an enqueue and its give-back) is set right by the hourly reconciliation', async () => {
    await insertIdempotent(t.db, job('one', { n: 1 }), 10)
    await insertIdempotent(t.db, job('two', { n: 2 }), 10)
    await t.db.query('update platform.job_namespaces set active = 7 where namespace_id = $1', [namespaceId])
    assert.equal(await reconcileActiveCounts(t.db), 1, 'one namespace corrected')
    assert.equal(await active(), 2)
    assert.equal(await reconcileActiveCounts(t.db), 0, 'nothing left to correct')
  })
})
