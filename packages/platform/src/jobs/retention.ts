/**
 * Terminal jobs (succeeded, dead-lettered) are kept 14 days after they end, then deleted
 * in batches. Safe to run from several processes at once (plain deletes of old rows).
 */
import type { Queryable } from '../db/db.ts'
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
