// An enqueue that starts its own job (migration 0032) at the storage level: with a
// dispatcher's slot it starts the job in its own statement exactly when a claim could take
// it then (due, the queue's row free, room under the job's pinned concurrency, nothing older
// due in the queue, the app active), counted as a claim, and otherwise leaves it queued for
// the claims.
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { seedJobNamespace } from './test-namespace.ts'
import type { HandOff } from './dispatcher.ts'
import { insertIdempotent, payloadHash } from './enqueue.ts'
import { claimDueJobs, type NewJob } from './queries.ts'

const NOW = new Date('2026-11-22T00:00:00Z')
const OWNER = 'host:1:handoff'

/** What insertIdempotent reads of a hand-off; running and releasing are the dispatcher's part. */
const slot: HandOff = { owner: OWNER, leaseGraceSeconds: 60, run: () => {}, release: () => {} }

describe(`an enqueue starting its own job (${backend})`, () => {
  let t: TestDb
  let appId: string
  let namespaceId: string

  before(async () => {
    t = await createTestDb()
    ;({ appId, namespaceId } = await seedJobNamespace(t.db, { slug: 'handoff-app', schema: 'app_handoff', rolePrefix: 'ns_0123456789cd' }))
  })
  after(() => t.cleanup())
  async function reset(): Promise<void> {
    await t.db.query(`update platform.apps set status = 'active' where id = $1`, [appId])
    await t.db.query('delete from platform.jobs')
    await t.db.query('delete from platform.job_queues')
    await t.db.query('delete from platform.job_namespaces')
  }
  beforeEach(reset)

  function job(key: string, options: { concurrency?: number; delaySeconds?: number } = {}): NewJob {
    const payload = { key }
    return {
      appId, namespaceId, kind: 'queue', queue: 'q', payload, payloadSha256: payloadHash(payload), idempotencyKey: key, enqueuedBy: null,
      concurrency: options.concurrency ?? 2, maxAttempts: 3, retryDelaySeconds: 1, retryBackoff: false, timeoutSeconds: 60,
      runAt: new Date(NOW.getTime() + (options.delaySeconds ?? 0) * 1000), now: NOW,
    }
  }

  async function row(key: string): Promise<{ state: string; attempts: number; lease_owner: string | null; lease_expires_at: Date | null }> {
    const [found] = await t.db.query<{ state: string; attempts: number; lease_owner: string | null; lease_expires_at: Date | null }>(
      'select state, attempts, lease_owner, lease_expires_at from platform.jobs where idempotency_key = $1', [key])
    assert.ok(found, `job ${key} exists`)
    return found
  }

  async function counted(): Promise<number> {
    const [found] = await t.db.query<{ n: number }>(
      `select (q.claimed - e.ended)::int as n from platform.job_queues q join platform.job_queue_ends e using (namespace_id, queue)
        where q.namespace_id = $1 and q.queue = 'q'`, [namespaceId])
    return found?.n ?? 0
  }

  /** The queue exists (its first job ever cannot start at once: the queue's row is created by that enqueue). */
  async function queueExists(): Promise<void> {
    await insertIdempotent(t.db, job('first', { delaySeconds: 3600 }), null)
  }

  test('with a free slot, a job that a claim could take starts in the enqueue: running, attempt 1, leased to that dispatcher, counted', async () => {
    await queueExists()
    const { row: answered, created, claimed } = await insertIdempotent(t.db, job('now'), null, slot)
    assert.equal(created, true)
    assert.ok(claimed, 'the statement started the job')
    assert.deepEqual([claimed.id, claimed.attempts, claimed.queue, claimed.payload, claimed.app_status, claimed.timeout_seconds],
      [answered.id, 1, 'q', { key: 'now' }, 'active', 60])
    assert.deepEqual([answered.state, answered.attempts, answered.started_at], ['queued', 0, null], 'the producer is answered the job as enqueued')
    const stored = await row('now')
    assert.deepEqual([stored.state, stored.attempts, stored.lease_owner], ['running', 1, OWNER])
    assert.equal(stored.lease_expires_at?.getTime(), NOW.getTime() + (60 + 60) * 1000, 'the lease of a claim: timeout plus grace')
    assert.equal(await counted(), 1, "the queue's running count includes it")
    assert.equal((await claimDueJobs(t.db, { now: NOW, limit: 10, owner: 'other', leaseGraceSeconds: 60 })).length, 0, 'no claim takes it again')
    const again = await insertIdempotent(t.db, job('now'), null, slot)
    assert.deepEqual([again.created, again.claimed], [false, null], 'the same key returns the job and starts nothing')
  })

  test('it stays queued when a claim could not take it: the queue new, no room, an older job due, the job delayed, the app not active', async () => {
    const stays = async (key: string, options: { concurrency?: number; delaySeconds?: number } = {}) => {
      const { claimed } = await insertIdempotent(t.db, job(key, options), null, slot)
      assert.equal(claimed, null, key)
      assert.deepEqual([(await row(key)).state, (await row(key)).attempts], ['queued', 0], key)
    }
    await stays('brand-new')

    await reset()
    await queueExists()
    assert.ok((await insertIdempotent(t.db, job('one', { concurrency: 1 }), null, slot)).claimed)
    await stays('full', { concurrency: 1 })
    assert.equal(await counted(), 1)

    await reset()
    await queueExists()
    await insertIdempotent(t.db, job('older'), null)
    await stays('behind', { concurrency: 5 })

    await reset()
    await queueExists()
    await stays('later', { delaySeconds: 1 })

    await reset()
    await queueExists()
    await t.db.query(`update platform.apps set status = 'paused' where id = $1`, [appId])
    await stays('paused')
    assert.equal(await counted(), 0)
  })

  test("a queue's row held by a claimer is skipped, not awaited: the job stays queued for the claims", { skip: backend !== 'postgres' && 'needs two sessions' }, async () => {
    await queueExists()
    let skipped: Awaited<ReturnType<typeof insertIdempotent>> | undefined
    await t.db.transaction(async (tx) => {
      // As a claim in another process holds it, between locking and committing.
      await tx.query(`select 1 from platform.job_queues where namespace_id = $1 and queue = 'q' for update`, [namespaceId])
      skipped = await insertIdempotent(t.db, job('skipped'), null, slot)
    })
    assert.equal(skipped?.claimed, null)
    assert.equal((await row('skipped')).state, 'queued')
    assert.equal(await counted(), 0)
  })
})
