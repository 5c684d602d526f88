/**
 * Cron runs are jobs. The cron scheduler calls `enqueueCronRun` for each occurrence (and
 * for manual triggers); the jobs dispatcher runs it like a queue job, so a run survives a
 * process crash, several processes share the work, and it shows up in the jobs list and
 * signals under the queue name `cron:<cron name>`.
 *
 * - Exactly once per occurrence: a scheduled run's idempotency key is its occurrence
 *   (`scheduled:<ISO time>`), unique per namespace and cron, so every process may try to
 *   enqueue the same occurrence and one job results. A manual run gets a fresh key.
 * - Input: `{ source: 'service.cron', name, scheduledAt }` (spec 4.2).
 * - Target: resolved at dispatch from the active release's cron declaration of that name
 *   (a system Function). A run whose declaration is gone is dead-lettered CRON_NOT_ACTIVE.
 * - One run at a time per cron (concurrency 1), with the target Function's timeout pinned
 *   at enqueue (the lease follows it). Up to `CRON_RUN_POLICY.maxAttempts` attempts: a run
 *   lost with its process (lease expired), timed out, crashed or answered
 *   `errors.unavailable` is tried again after 30 s, then 60 s; any other failure
 *   dead-letters it. A Function whose strict schema rejects the envelope fails 400
 *   INPUT_INVALID before its handler; the run is dead-lettered with that error.
 * - A scheduled occurrence is never refused for capacity: the namespace's active-job limit
 *   may delay other work, it never drops a scheduled run. A manual run is an enqueue like
 *   any other and is refused JOBS_LIMIT_REACHED at the limit.
 * - `ctx.job` is null in a cron run (it is queue delivery metadata).
 */
import { randomUUID } from 'node:crypto'
import type { Db, Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { CronDeclaration } from '../manifest/index.ts'
import { insertIdempotent, JOB_LIMITS, payloadHash } from './enqueue.ts'
import type { NewJob } from './queries.ts'

/** The retry policy pinned on every cron run (its timeout is the target Function's). */
export const CRON_RUN_POLICY = { maxAttempts: 3, retryDelaySeconds: 30, retryBackoff: true } as const

/** The queue name of a cron's runs in the jobs list and signals. */
export function cronQueueName(cronName: string): string {
  return `cron:${cronName}`
}

export interface CronRun {
  readonly appId: string
  readonly namespaceId: string
  readonly cronName: string
  /** The occurrence; for a manual run, when it was asked for. */
  readonly scheduledAt: Date
  readonly manual?: boolean
}

/**
 * Enqueues one run of the cron declaration `cronName`; `created` is false when this
 * occurrence was already enqueued (by this or another process). Given a transaction
 * handle it runs inside it. The run is due at `scheduledAt` (or now, when that has
 * passed). Its timeout is that of the Function the namespace's active release names for
 * the cron (looked up here; a cron no longer declared keeps the 15-minute maximum and is
 * dead-lettered CRON_NOT_ACTIVE at dispatch).
 *
 * @example
 * const { jobId, created } = await enqueueCronRun(db, clock, { appId, namespaceId, cronName: 'nightly', scheduledAt })
 */
export async function enqueueCronRun(db: Db | Queryable, clock: Clock, run: CronRun): Promise<{ jobId: string; created: boolean }> {
  const now = clock.now()
  const scheduledAt = run.scheduledAt.toISOString()
  const payload = { source: 'service.cron', name: run.cronName, scheduledAt }
  const timeouts = await db.query<{ timeout_seconds: number | null }>(
    `select (f ->> 'timeoutSeconds')::int as timeout_seconds
       from platform.namespaces n
       join platform.releases r on r.app_id = n.app_id and r.dev_name = n.dev_name and r.status = 'active'
      cross join jsonb_array_elements(coalesce(r.manifest -> 'cron', '[]'::jsonb)) c
      cross join jsonb_array_elements(coalesce(r.manifest -> 'functions', '[]'::jsonb)) f
      where n.id = $1 and c ->> 'name' = $2 and f ->> 'name' = c ->> 'function'`,
    [run.namespaceId, run.cronName],
  )
  const job: NewJob = {
    appId: run.appId,
    namespaceId: run.namespaceId,
    kind: 'cron',
    queue: cronQueueName(run.cronName),
    payload,
    payloadSha256: payloadHash(payload),
    idempotencyKey: run.manual ? `manual:${randomUUID()}` : `scheduled:${scheduledAt}`,
    enqueuedBy: null,
    concurrency: 1,
    ...CRON_RUN_POLICY,
    timeoutSeconds: timeouts[0]?.timeout_seconds ?? null,
    runAt: run.scheduledAt.getTime() > now.getTime() ? run.scheduledAt : now,
    now,
  }
  const { row, created } = await insertIdempotent(db, job, run.manual ? JOB_LIMITS.activePerNamespace : null)
  return { jobId: row.id, created }
}

/** An app's production namespace with the cron declarations of its active release. */
export interface ActiveCrons {
  readonly appId: string
  /** `active`, `paused`, `suspended` or `archived`: only active apps' cron should fire. */
  readonly appStatus: string
  readonly namespaceId: string
  readonly releaseId: string
  readonly cron: readonly CronDeclaration[]
}

/** Every app whose active release declares cron entries (enabled or not). */
export async function listActiveCrons(db: Queryable): Promise<ActiveCrons[]> {
  const rows = await db.query<{ app_id: string; status: string; namespace_id: string; release_id: string; cron: CronDeclaration[] }>(
    `select a.id as app_id, a.status, n.id as namespace_id, r.id as release_id, r.manifest -> 'cron' as cron
       from platform.apps a
       join platform.releases r on r.id = a.active_release_id
       join platform.namespaces n on n.app_id = a.id and n.environment = 'production' and n.dev_name = ''
      where jsonb_typeof(r.manifest -> 'cron') = 'array' and jsonb_array_length(r.manifest -> 'cron') > 0
      order by a.id`,
  )
  return rows.map((row) => ({ appId: row.app_id, appStatus: row.status, namespaceId: row.namespace_id, releaseId: row.release_id, cron: row.cron }))
}
