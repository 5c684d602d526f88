/**
 * The jobs engine's SQL, one function per statement. Times always come from the caller's
 * clock (never `now()`), so tests can cross delays, leases and retention with a ManualClock.
 *
 * Concurrency: a process claims from a queue only while it holds that queue's
 * `platform.job_queues` row (FOR UPDATE SKIP LOCKED, so claimers never wait for each other),
 * and counts the queue's running jobs in a later statement of the same transaction, whose
 * snapshot is taken after the lock was granted: every claim that committed before is
 * visible, so processes together never exceed the concurrency.
 */
import type { Queryable } from '../db/db.ts'

export const JOBS_CHANNEL = 'platform_jobs'

export type JobState = 'queued' | 'running' | 'retry_wait' | 'succeeded' | 'dead_lettered'
export type JobKind = 'queue' | 'cron'

export interface JobError {
  readonly code: string
  readonly message: string
  readonly details?: unknown
}

export interface JobRow extends Record<string, unknown> {
  id: string
  app_id: string
  namespace_id: string
  kind: JobKind
  queue: string
  state: JobState
  payload_sha256: string
  attempts: number
  max_attempts: number
  concurrency: number
  run_at: Date
  last_error: JobError | null
  created_at: Date
  updated_at: Date
  started_at: Date | null
  finished_at: Date | null
}

export const JOB_COLUMNS = `id, app_id, namespace_id, kind, queue, state, payload_sha256, attempts, max_attempts,
  concurrency, run_at, last_error, created_at, updated_at, started_at, finished_at`

/** The delay before the next attempt after attempt `attempts` failed (retryable). */
const RETRY_DELAY = `make_interval(secs => case when retry_backoff
  then least(retry_delay_seconds * power(2, least(attempts - 1, 20)), 86400)
  else retry_delay_seconds end)`

export interface NewJob {
  readonly appId: string
  readonly namespaceId: string
  readonly kind: JobKind
  readonly queue: string
  readonly payload: unknown
  readonly payloadSha256: string
  readonly idempotencyKey: string
  readonly enqueuedBy: string | null
  readonly concurrency: number
  readonly maxAttempts: number
  readonly retryDelaySeconds: number
  readonly retryBackoff: boolean
  readonly timeoutSeconds: number | null
  readonly runAt: Date
  readonly now: Date
}

export async function findByKey(db: Queryable, key: { namespaceId: string; queue: string; idempotencyKey: string }): Promise<JobRow | undefined> {
  const rows = await db.query<JobRow>(
    `select ${JOB_COLUMNS} from platform.jobs where namespace_id = $1 and queue = $2 and idempotency_key = $3`,
    [key.namespaceId, key.queue, key.idempotencyKey],
  )
  return rows[0]
}

const JOB_TIMES = ['run_at', 'created_at', 'updated_at', 'started_at', 'finished_at'] as const

/** A job row that travelled as JSON (timestamps as text). */
function jobFromJson(json: Record<string, unknown>): JobRow {
  const row = { ...json } as Record<string, unknown>
  for (const column of JOB_TIMES) row[column] = row[column] === null ? null : new Date(row[column] as string)
  return row as JobRow
}

export type InsertOutcome =
  | { readonly kind: 'existing'; readonly row: JobRow }
  | { readonly kind: 'inserted'; readonly row: JobRow }
  /** The namespace already has `limit` active jobs. */
  | { readonly kind: 'limit' }
  /** Another producer inserted the same key meanwhile; this statement counted an active job it must give back. */
  | { readonly kind: 'raced' }

/**
 * Enqueues in ONE statement (so the namespace's counter row is locked only for the moment
 * of one statement): returns the job with this key if there is one; otherwise counts one
 * more active job unless the namespace has `limit` (null: no limit), records the queue,
 * inserts the job and, when it is due now, wakes the dispatchers at commit.
 */
export async function insertJobOnce(db: Queryable, job: NewJob, limit: number | null): Promise<InsertOutcome> {
  const rows = await db.query<{ existing: Record<string, unknown> | null; inserted: Record<string, unknown> | null; counted: boolean }>(
    `with existing as (
       select ${JOB_COLUMNS} from platform.jobs where namespace_id = $2 and queue = $4 and idempotency_key = $7
     ), counted as (
       insert into platform.job_namespaces as n (namespace_id, active)
       select $2, 1 where not exists (select 1 from existing)
       on conflict (namespace_id) do update set active = n.active + 1 where $16::int is null or n.active < $16::int
       returning 1
     ), queue_row as (
       insert into platform.job_queues (namespace_id, queue) select $2, $4 where exists (select 1 from counted)
       on conflict do nothing
     ), inserted as (
       insert into platform.jobs (app_id, namespace_id, kind, queue, state, payload, payload_sha256, idempotency_key,
         enqueued_by, concurrency, max_attempts, retry_delay_seconds, retry_backoff, timeout_seconds, run_at, created_at, updated_at)
       select $1, $2, $3, $4, 'queued', $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15
        where exists (select 1 from counted)
       on conflict (namespace_id, queue, idempotency_key) do nothing
       returning ${JOB_COLUMNS}
     ), notified as (
       select pg_notify('${JOBS_CHANNEL}', '') from inserted where run_at <= $15
     )
     select (select to_jsonb(e) from existing e) as existing,
            (select to_jsonb(i) from inserted i) as inserted,
            exists (select 1 from counted) as counted,
            (select count(*) from notified) as notified`,
    [job.appId, job.namespaceId, job.kind, job.queue, JSON.stringify(job.payload), job.payloadSha256, job.idempotencyKey,
      job.enqueuedBy, job.concurrency, job.maxAttempts, job.retryDelaySeconds, job.retryBackoff, job.timeoutSeconds, job.runAt, job.now, limit],
  )
  const row = rows[0]!
  if (row.existing !== null) return { kind: 'existing', row: jobFromJson(row.existing) }
  if (row.inserted !== null) return { kind: 'inserted', row: jobFromJson(row.inserted) }
  return row.counted ? { kind: 'raced' } : { kind: 'limit' }
}

/** Gives back an active-job count taken by an enqueue that lost a race. */
export async function uncountActive(db: Queryable, namespaceId: string): Promise<void> {
  await db.query('update platform.job_namespaces set active = active - 1 where namespace_id = $1', [namespaceId])
}

export async function findJob(db: Queryable, key: { appId: string; namespaceId?: string; jobId: string }): Promise<JobRow | undefined> {
  const rows = await db.query<JobRow>(
    `select ${JOB_COLUMNS} from platform.jobs where id = $1 and app_id = $2 and ($3::uuid is null or namespace_id = $3::uuid)`,
    [key.jobId, key.appId, key.namespaceId ?? null],
  )
  return rows[0]
}

/**
 * Locks up to `limit` queues (of active apps) that have due work, room to run it and no
 * other claimer, in random order, so processes claiming at the same moment spread over the
 * queues instead of one taking them all.
 */
export async function lockDueQueues(db: Queryable, now: Date, limit: number): Promise<{ namespace_id: string; queue: string }[]> {
  // The lateral probe (one index step per queue, never flattened into a join over every due
  // job) finds the queue's next due job; a queue already running that job's concurrency is
  // skipped (a hint from this statement's snapshot: claimJobs checks exactly).
  return await db.query(
    `select q.namespace_id, q.queue
       from platform.job_queues q
      cross join lateral (
        select j.concurrency from platform.jobs j
         where j.namespace_id = q.namespace_id and j.queue = q.queue
           and j.state in ('queued', 'retry_wait') and j.run_at <= $1
         order by j.run_at, j.id
         limit 1) next
      where exists (select 1 from platform.namespaces n join platform.apps a on a.id = n.app_id
                     where n.id = q.namespace_id and a.status = 'active')
        and (select count(*) from platform.jobs r
              where r.namespace_id = q.namespace_id and r.queue = q.queue and r.state = 'running') < next.concurrency
      order by random()
      limit $2
      for update of q skip locked`,
    [now, limit],
  )
}

/** A job the dispatcher claimed: what it needs to run one attempt. */
export interface ClaimedJob extends Record<string, unknown> {
  id: string
  app_id: string
  namespace_id: string
  kind: JobKind
  queue: string
  payload: unknown
  attempts: number
  timeout_seconds: number | null
  /** The app's slug, status and active production release when the job was claimed. */
  app_slug: string
  app_status: string
  app_release_id: string | null
}

/**
 * Moves up to `limit` due jobs of the locked queues to `running` (attempt + 1, a lease),
 * at most each job's pinned concurrency minus what already runs in its queue, oldest due
 * first (ties by id: the order of the jobs_pending index, so a deep backlog is read a page
 * at a time, never sorted whole) and round-robin across queues. Must run in the
 * transaction that locked the queues.
 */
export async function claimJobs(
  db: Queryable,
  options: { queues: readonly { namespace_id: string; queue: string }[]; now: Date; limit: number; owner: string; leaseGraceSeconds: number },
): Promise<ClaimedJob[]> {
  return await db.query<ClaimedJob>(
    `with q as (
       select * from unnest($1::uuid[], $2::text[]) as q (namespace_id, queue)
     ), candidates as (
       select j.id, j.concurrency, q.running,
              row_number() over (partition by q.namespace_id, q.queue order by j.run_at, j.id) as n
         from (select q.*, (select count(*) from platform.jobs r
                             where r.namespace_id = q.namespace_id and r.queue = q.queue and r.state = 'running') as running
                 from q) q
         cross join lateral (
           select j.id, j.concurrency, j.run_at from platform.jobs j
            where j.namespace_id = q.namespace_id and j.queue = q.queue
              and j.state in ('queued', 'retry_wait') and j.run_at <= $3
            order by j.run_at, j.id
            limit 100) j
     ), chosen as (
       select id from candidates where running + n <= concurrency order by n, id limit $4
     )
     update platform.jobs j
        set state = 'running', attempts = j.attempts + 1, started_at = $3, updated_at = $3, lease_owner = $5,
            lease_expires_at = $3::timestamptz + make_interval(secs => coalesce(j.timeout_seconds, 900) + $6)
       from platform.apps a
      where j.id = any (array(select id from chosen)) and j.state in ('queued', 'retry_wait') and a.id = j.app_id
      returning j.id, j.app_id, j.namespace_id, j.kind, j.queue, j.payload, j.attempts, j.timeout_seconds,
                a.slug as app_slug, a.status as app_status, a.active_release_id as app_release_id`,
    [options.queues.map((q) => q.namespace_id), options.queues.map((q) => q.queue), options.now, options.limit, options.owner, options.leaseGraceSeconds],
  )
}

/**
 * These attempts succeeded (one statement for a batch). Returns the ids recorded; an attempt
 * that is no longer its job's current one is ignored.
 */
export async function markSucceeded(db: Queryable, options: { attempts: readonly { id: string; attempt: number }[]; now: Date }): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `with done as (
       update platform.jobs j set state = 'succeeded', payload = null, finished_at = $3, updated_at = $3,
              lease_owner = null, lease_expires_at = null
         from unnest($1::uuid[], $2::int[]) as d (id, attempt)
        where j.id = any ($1::uuid[]) and j.id = d.id and j.state = 'running' and j.attempts = d.attempt
        returning j.id, j.namespace_id),
     counted as (
       update platform.job_namespaces n set active = n.active - c.ended
         from (select namespace_id, count(*)::int as ended from done group by namespace_id) c
        where n.namespace_id = c.namespace_id)
     select id from done`,
    [options.attempts.map((a) => a.id), options.attempts.map((a) => a.attempt), options.now],
  )
  return rows.map((row) => row.id)
}

/**
 * The attempt failed with `error`. Retryable and attempts left: `retry_wait` after the
 * pinned delay (with backoff); otherwise `dead_lettered`. Ignored (null) when the attempt
 * is no longer the job's current one.
 */
export async function markFailed(
  db: Queryable,
  job: { id: string; attempt: number; now: Date; error: JobError; retryable: boolean },
): Promise<JobState | null> {
  const rows = await db.query<{ state: JobState }>(
    `with moved as (
       update platform.jobs
          set state = case when $4 and attempts < max_attempts then 'retry_wait' else 'dead_lettered' end,
              run_at = case when $4 and attempts < max_attempts then $3::timestamptz + ${RETRY_DELAY} else run_at end,
              finished_at = case when $4 and attempts < max_attempts then null else $3 end,
              payload = case when $4 and attempts < max_attempts then payload else null end,
              last_error = $5::jsonb, updated_at = $3, lease_owner = null, lease_expires_at = null
        where id = $1 and state = 'running' and attempts = $2
        returning namespace_id, state),
     counted as (
       update platform.job_namespaces n set active = n.active - 1
         from moved where n.namespace_id = moved.namespace_id and moved.state = 'dead_lettered')
     select state from moved`,
    [job.id, job.attempt, job.now, job.retryable, JSON.stringify(job.error)],
  )
  return rows[0]?.state ?? null
}

/**
 * The attempt never reached the consumer (the app stopped being active after the claim):
 * back to waiting at `runAt` without consuming the attempt.
 */
export async function markNotStarted(db: Queryable, job: { id: string; attempt: number; now: Date; runAt: Date }): Promise<void> {
  await db.query(
    `update platform.jobs
        set state = case when attempts = 1 then 'queued' else 'retry_wait' end, attempts = attempts - 1,
            run_at = $4, updated_at = $3, lease_owner = null, lease_expires_at = null,
            started_at = case when attempts = 1 then null else started_at end
      where id = $1 and state = 'running' and attempts = $2`,
    [job.id, job.attempt, job.now, job.runAt],
  )
}

/**
 * The job's queue (or cron) declaration is gone: dead-lettered with `error`; the claimed
 * attempt is not counted, since no consumer ran.
 */
export async function markNotActive(db: Queryable, job: { id: string; attempt: number; now: Date; error: JobError }): Promise<void> {
  await db.query(
    `with moved as (
       update platform.jobs
          set state = 'dead_lettered', attempts = attempts - 1, payload = null, last_error = $4::jsonb,
              finished_at = $3, updated_at = $3, lease_owner = null, lease_expires_at = null
        where id = $1 and state = 'running' and attempts = $2
        returning namespace_id)
     update platform.job_namespaces n set active = n.active - 1 from moved where n.namespace_id = moved.namespace_id`,
    [job.id, job.attempt, job.now, JSON.stringify(job.error)],
  )
}

/**
 * Running jobs whose lease expired (their process died or lost its connection): the attempt
 * they were on counts once, as a retryable failure. Returns how many moved.
 */
export async function recoverExpiredLeases(db: Queryable, options: { now: Date; error: JobError; limit: number }): Promise<number> {
  const rows = await db.query(
    `with expired as (
       select id from platform.jobs where state = 'running' and lease_expires_at <= $1
        order by lease_expires_at limit $3 for update skip locked
     ), moved as (
       update platform.jobs j
          set state = case when j.attempts < j.max_attempts then 'retry_wait' else 'dead_lettered' end,
              run_at = case when j.attempts < j.max_attempts then $1::timestamptz + ${RETRY_DELAY} else j.run_at end,
              finished_at = case when j.attempts < j.max_attempts then null else $1 end,
              payload = case when j.attempts < j.max_attempts then j.payload else null end,
              last_error = $2::jsonb, updated_at = $1, lease_owner = null, lease_expires_at = null
        where j.id = any (array(select id from expired))
        returning j.namespace_id, j.state
     ), counted as (
       update platform.job_namespaces n set active = n.active - c.ended
         from (select namespace_id, count(*)::int as ended from moved where state = 'dead_lettered' group by namespace_id) c
        where n.namespace_id = c.namespace_id)
     select 1 from moved`,
    [options.now, JSON.stringify(options.error), options.limit],
  )
  return rows.length
}

/**
 * Dead-letters the pending jobs of one namespace whose queue (or cron, for cron runs) is not
 * among `queues` (`crons`). Runs in the deploy transaction that activates a release.
 */
export async function deadLetterUndeclared(
  db: Queryable,
  options: { namespaceId: string; queues: readonly string[]; crons: readonly string[]; now: Date; queueError: JobError; cronError: JobError },
): Promise<number> {
  const rows = await db.query(
    `with moved as (
       update platform.jobs
          set state = 'dead_lettered', payload = null, finished_at = $4, updated_at = $4,
              last_error = case when kind = 'queue' then $5::jsonb else $6::jsonb end
        where namespace_id = $1 and state in ('queued', 'retry_wait')
          and ((kind = 'queue' and queue <> all ($2::text[])) or (kind = 'cron' and queue <> all ($3::text[])))
        returning namespace_id)
     , counted as (
       update platform.job_namespaces n set active = n.active - (select count(*)::int from moved)
        where n.namespace_id = $1 and exists (select 1 from moved))
     select 1 from moved`,
    [options.namespaceId, options.queues, options.crons.map((name) => `cron:${name}`), options.now,
      JSON.stringify(options.queueError), JSON.stringify(options.cronError)],
  )
  return rows.length
}

/** Deletes up to `limit` terminal jobs that ended before `before`; returns how many. */
export async function purgeEnded(db: Queryable, options: { before: Date; limit: number }): Promise<number> {
  const rows = await db.query(
    `delete from platform.jobs where id in (
       select id from platform.jobs where state in ('succeeded', 'dead_lettered') and finished_at < $1 limit $2)
     returning 1`,
    [options.before, options.limit],
  )
  return rows.length
}

/** A page of an app namespace's jobs created in [from, to], newest first, after `before` (the cursor). */
export async function listJobs(
  db: Queryable,
  options: { appId: string; namespaceId: string; from: Date; to: Date; queue: string | null; state: JobState | null; before: { createdAt: Date; id: string } | null; limit: number },
): Promise<JobRow[]> {
  return await db.query<JobRow>(
    `select ${JOB_COLUMNS} from platform.jobs
      where app_id = $1 and namespace_id = $9 and created_at between $2 and $3
        and ($4::text is null or queue = $4::text) and ($5::text is null or state = $5::text)
        and ($6::timestamptz is null or (created_at, id) < ($6::timestamptz, $7::uuid))
      order by created_at desc, id desc
      limit $8`,
    [options.appId, options.from, options.to, options.queue, options.state, options.before?.createdAt ?? null, options.before?.id ?? null, options.limit, options.namespaceId],
  )
}

export interface QueueTotalsRow extends Record<string, unknown> {
  queue: string
  created: number
  retried: number
  succeeded: number
  failed: number
  waiting: number
  running: number
}

/** Per queue, over the app's jobs created in [from, to]: created, retries, outcomes, and what is still pending. */
export async function queueTotals(db: Queryable, options: { appId: string; namespaceId: string; from: Date; to: Date }): Promise<QueueTotalsRow[]> {
  return await db.query<QueueTotalsRow>(
    `select queue, count(*)::int as created,
            coalesce(sum(greatest(attempts - 1, 0)), 0)::int as retried,
            (count(*) filter (where state = 'succeeded'))::int as succeeded,
            (count(*) filter (where state = 'dead_lettered'))::int as failed,
            (count(*) filter (where state in ('queued', 'retry_wait')))::int as waiting,
            (count(*) filter (where state = 'running'))::int as running
       from platform.jobs where app_id = $1 and namespace_id = $4 and created_at between $2 and $3
      group by queue order by queue`,
    [options.appId, options.from, options.to, options.namespaceId],
  )
}

/** The namespace's jobs that are not terminal now. */
export async function countActiveJobs(db: Queryable, scope: { appId: string; namespaceId: string }): Promise<number> {
  const rows = await db.query<{ n: number }>(
    `select count(*)::int as n from platform.jobs
      where app_id = $1 and namespace_id = $2 and state in ('queued', 'running', 'retry_wait')`, [scope.appId, scope.namespaceId])
  return rows[0]?.n ?? 0
}

/** The app's latest dead-lettered jobs that ended in [from, to], newest first. */
export async function recentFailures(db: Queryable, options: { appId: string; namespaceId: string; from: Date; to: Date; limit: number }): Promise<JobRow[]> {
  return await db.query<JobRow>(
    `select ${JOB_COLUMNS} from platform.jobs
      where app_id = $1 and namespace_id = $5 and state = 'dead_lettered' and finished_at between $2 and $3
      order by finished_at desc, id desc limit $4`,
    [options.appId, options.from, options.to, options.limit, options.namespaceId],
  )
}
