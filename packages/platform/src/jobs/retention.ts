/**
 * Terminal jobs (succeeded, dead-lettered) are kept 14 days after they end, then deleted
 * in batches. Safe to run from several processes at once (plain deletes of old rows).
 * The same hourly pass sets right each namespace's active-job counter, which can drift
 * by one when a process dies between an enqueue that lost a same-key race and the
 * statement that gives its count back.
 */
import type { Db, Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { purgeEnded } from './queries.ts'

export const RETENTION_MS = 14 * 24 * 60 * 60 * 1000
const BATCH = 1000

/** Deletes every terminal job that ended more than 14 days ago; returns how many. */
export async function purgeExpiredJobs(db: Queryable, clock: Clock): Promise<number> {
  const before = new Date(clock.now().getTime() - RETENTION_MS)
  let total = 0
  for (;;) {
    const deleted = await purgeEnded(db, { before, limit: BATCH })
    total += deleted
    if (deleted < BATCH) return total
  }
}

/**
 * Recounts each namespace's active jobs and fixes its counter where it differs; returns
 * how many counters were fixed. Each namespace in its own transaction that first locks the
 * counter row: every change to a namespace's active jobs moves the counter in the same
 * statement, so while the lock is held none can commit, and the count (a later statement,
 * a later snapshot) sees every one that committed before. (A pass that falls between a
 * raced enqueue's two statements leaves that counter one low until the next pass.)
 */
export async function reconcileActiveCounts(db: Db): Promise<number> {
  const namespaces = await db.query<{ namespace_id: string }>('select namespace_id from platform.job_namespaces')
  let fixed = 0
  for (const { namespace_id: namespaceId } of namespaces) {
    const changed = await db.transaction(async (tx) => {
      const locked = await tx.query<{ active: number }>(
        'select active from platform.job_namespaces where namespace_id = $1 for update', [namespaceId])
      if (locked[0] === undefined) return false
      const counted = await tx.query<{ n: number }>(
        `select count(*)::int as n from platform.jobs where namespace_id = $1 and state in ('queued', 'running', 'retry_wait')`, [namespaceId])
      const n = counted[0]!.n
      if (n === locked[0].active) return false
      await tx.query('update platform.job_namespaces set active = $2 where namespace_id = $1', [namespaceId, n])
      return true
    })
    if (changed) fixed += 1
  }
  return fixed
}
