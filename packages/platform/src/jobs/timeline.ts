/**
 * What the dashboard's Background jobs section draws and lists beside the totals (spec 6.3):
 * jobs over time by state, counted in equal buckets of creation time over the same inclusive
 * range as the totals and history, and the per-queue policy of the namespace's active release.
 * Like every read of jobs, never a payload, idempotency key or enqueuing user.
 */
import type { Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { QueueDeclaration } from '../manifest/index.ts'
import { readRange, type HistoryQuery, type JobScope } from './history.ts'
import type { JobState } from './queries.ts'

/** Bucket lengths a timeline may use, shortest first; the shortest that gives at most MAX_BUCKETS wins. */
const BUCKET_SECONDS = [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 2 * 86_400, 7 * 86_400] as const
export const MAX_BUCKETS = 48
const STATES: readonly JobState[] = ['queued', 'running', 'retry_wait', 'succeeded', 'dead_lettered']

export type StateCounts = Record<JobState, number>

export interface JobTimeline {
  readonly from: string
  readonly to: string
  readonly bucketSeconds: number
  /** Every bucket from `from` on, empty ones included; each counts jobs created in [start, start + bucketSeconds) by their state now. */
  readonly buckets: ReadonlyArray<{ readonly start: string; readonly counts: StateCounts }>
}

/** One statement: the scope's jobs created in [from, to], counted per bucket and state. */
export async function countJobsByBucket(
  db: Queryable, options: JobScope & { from: Date; to: Date; bucketSeconds: number },
): Promise<Array<{ bucket: number; state: JobState; n: number }>> {
  return await db.query<{ bucket: number; state: JobState; n: number }>(
    `select floor(extract(epoch from (created_at - $3::timestamptz)) / $5)::int as bucket, state, count(*)::int as n
       from platform.jobs where app_id = $1 and namespace_id = $2 and created_at between $3 and $4
      group by 1, 2 order by 1, 2`,
    [options.appId, options.namespaceId, options.from, options.to, options.bucketSeconds])
}

/** The bucket length for a range of `spanMs` (inclusive ends, so one more millisecond). */
export function bucketSecondsFor(spanMs: number): number {
  const seconds = (spanMs + 1) / 1000
  return BUCKET_SECONDS.find((size) => Math.ceil(seconds / size) <= MAX_BUCKETS) ?? Math.ceil(seconds / MAX_BUCKETS)
}

/**
 * Jobs over time by state for the inclusive creation range `from`/`to` (the jobs API's
 * parameters and defaults).
 *
 * @example
 * const timeline = await jobTimeline(db, clock, scope, { from: '2026-10-24T22:00:00Z', to: '2026-10-25T03:59:59.999Z' })
 */
export async function jobTimeline(db: Queryable, clock: Clock, scope: JobScope, query: Pick<HistoryQuery, 'from' | 'to'>): Promise<JobTimeline> {
  const { from, to } = readRange(query, clock)
  const bucketSeconds = bucketSecondsFor(to.getTime() - from.getTime())
  const count = Math.max(1, Math.ceil((to.getTime() - from.getTime() + 1) / (bucketSeconds * 1000)))
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: new Date(from.getTime() + i * bucketSeconds * 1000).toISOString(),
    counts: Object.fromEntries(STATES.map((state) => [state, 0])) as StateCounts,
  }))
  for (const row of await countJobsByBucket(db, { ...scope, from, to, bucketSeconds })) {
    const bucket = buckets[Math.min(row.bucket, count - 1)]
    if (bucket !== undefined) bucket.counts[row.state] += row.n
  }
  return { from: from.toISOString(), to: to.toISOString(), bucketSeconds, buckets }
}

/** One statement: the queues the scope's active release declares (defaults filled in at deploy), or none before a deploy. */
export async function selectQueuePolicies(db: Queryable, scope: JobScope): Promise<QueueDeclaration[]> {
  const rows = await db.query<{ queues: QueueDeclaration[] | null }>(
    `select r.manifest -> 'queues' as queues
       from platform.namespaces n
       join platform.releases r on r.app_id = n.app_id and r.dev_name = n.dev_name and r.status = 'active'
      where n.id = $1 and n.app_id = $2`, [scope.namespaceId, scope.appId])
  return rows[0]?.queues ?? []
}

/**
 * The per-queue policy of the scope's active release, in declaration order.
 *
 * @example
 * const queues = await queuePolicies(db, scope) // [{ name: 'work', function: 'consume', concurrency: 1, maxAttempts: 3, ... }]
 */
export async function queuePolicies(db: Queryable, scope: JobScope) {
  return (await selectQueuePolicies(db, scope)).map((queue) => ({
    name: queue.name,
    function: queue.function,
    concurrency: queue.concurrency,
    maxAttempts: queue.maxAttempts,
    retryDelaySeconds: queue.retryDelaySeconds,
    retryBackoff: queue.retryBackoff,
    timeoutSeconds: queue.timeoutSeconds,
  }))
}
