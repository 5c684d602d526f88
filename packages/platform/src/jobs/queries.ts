/**
 * The jobs engine's SQL, one function per statement. Times always come from the caller's
 * clock (never `now()`), so tests can cross delays, leases and retention with a ManualClock.
 *
 * Concurrency: a claim is one statement. It locks the `platform.job_queues` rows of the
 * queues it takes (FOR UPDATE SKIP LOCKED, so claimers never wait for each other) and reads
 * through that lock the queue's `claimed` counter, which only claims change: the latest
 * committed value. Every statement that moves a job out of `running` adds to the queue's
 * `job_queue_ends.ended` in the same statement (its own row, so ending an attempt never
 * blocks or deflects a claim); the claim reads `ended` from its snapshot, which can only be
 * behind, so `claimed - ended` is never below what runs and processes together never exceed
 * a queue's concurrency (migration 0026).
 *
 * Due marks: `platform.job_queue_marks` holds, per queue, a lower bound of its waiting jobs'
 * run_at, so a claim walks only queues with due work (migration 0032). Every statement that
 * makes a job wait lowers the mark and raises its `version` in the same statement; a claim
 * moves the marks of the queues it took from forward, in a later snapshot, only where the
 * version is unchanged, so a waiting job is never behind its queue's mark.
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
  /** `claimed`: the statement also started the job for `claimFor`'s dispatcher (else null). */
  | { readonly kind: 'inserted'; readonly row: JobRow; readonly claimed: ClaimedJob | null }
  /** The namespace already has `limit` active jobs. */
  | { readonly kind: 'limit' }
  /** Another producer inserted the same key meanwhile; this statement counted an active job it must give back. */
  | { readonly kind: 'raced' }

/** A dispatcher with a free slot, for which an enqueue may start its job at once. */
export interface ClaimFor {
  readonly owner: string
  readonly leaseGraceSeconds: number
}

/**
 * Enqueues in ONE statement (so the namespace's counter row is locked only for the moment
 * of one statement; platform.enqueue_job, migrations 0026 and 0032): returns the job with this
 * key if there is one; otherwise counts one more active job unless the namespace has `limit`
 * (null: no limit), records the queue, inserts the job and lowers its queue's due mark. When
 * the job is due now: with `claimFor`, it starts at once (`running`, attempt 1, leased to
 * that dispatcher) if a claim could take it now (the queue's row free, room under the job's
 * concurrency, nothing older due in the queue, the app active); otherwise the dispatchers are
 * woken at commit.
 */
export async function insertJobOnce(db: Queryable, job: NewJob, limit: number | null, claimFor: ClaimFor | null = null): Promise<InsertOutcome> {
  // platform.enqueue_job (migration 0032): the statement, prepared on the platform's own connections.
  const rows = await db.query<{ existing: Record<string, unknown> | null; inserted: Record<string, unknown> | null; counted: boolean; claimed: ClaimedJob | null }>(
    `select existing, inserted, counted, claimed from platform.enqueue_job($1::uuid, $2::uuid, $3::text, $4::text, $5::jsonb, $6::text,
       $7::text, $8::uuid, $9::int, $10::int, $11::int, $12::boolean, $13::int, $14::timestamptz, $15::timestamptz, $16::int, $17::text, $18::int)`,
    [job.appId, job.namespaceId, job.kind, job.queue, JSON.stringify(job.payload), job.payloadSha256, job.idempotencyKey,
      job.enqueuedBy, job.concurrency, job.maxAttempts, job.retryDelaySeconds, job.retryBackoff, job.timeoutSeconds, job.runAt, job.now, limit,
      claimFor?.owner ?? null, claimFor?.leaseGraceSeconds ?? null],
    // One round trip (a named statement on the platform's own connections), not a describe and an execute.
    { platformPrepared: true },
  )
  const row = rows[0]!
  if (row.existing !== null) return { kind: 'existing', row: jobFromJson(row.existing) }
  if (row.inserted !== null) return { kind: 'inserted', row: jobFromJson(row.inserted), claimed: row.claimed }
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
 * Claims up to `limit` due jobs in ONE statement: walks the queues whose due mark has come,
 * oldest mark first, and locks up to `limit` of them (of active apps) that have due work,
 * room to run it and no other claimer (a queue another process holds is skipped, so
 * processes claiming at the same moment spread over the queues), and moves their due jobs
 * to `running` (attempt + 1, a lease): at most each job's pinned concurrency minus what runs
 * in its queue, oldest due first (ties by id: the order of the jobs_pending index, so a deep
 * backlog is read a page at a time, never sorted whole) and round-robin across queues; the
 * queues' `claimed` counters move in the same statement. A second statement of the same
 * call then moves the marks of the queues it took from to their next waiting job.
 *
 * The jobs are read from the statement's snapshot, which may predate a claim that committed
 * just before this one took the queue's lock: the update checks each job again (a job
 * another process took is skipped, so this pass claims fewer) and counts only what it moved.
 */
export async function claimDueJobs(
  db: Queryable,
  options: { now: Date; limit: number; owner: string; leaseGraceSeconds: number },
): Promise<ClaimedJob[]> {
  // platform.claim_jobs (migration 0039): prepared on the platform's own connections.
  return await db.query<ClaimedJob>(
    `select id, app_id, namespace_id, kind, queue, payload, attempts, timeout_seconds, app_slug, app_status, app_release_id
       from platform.claim_jobs($1::timestamptz, $2::int, $3::text, $4::int)`,
    [options.now, options.limit, options.owner, options.leaseGraceSeconds],
    { platformPrepared: true },
  )
}

/** A CTE that adds the attempts `moved` (rows with namespace_id, queue) ended to their queues' counters. */
function endedFrom(moved: string): string {
  return `update platform.job_queue_ends e set ended = e.ended + c.n
         from (select namespace_id, queue, count(*) as n from ${moved} group by namespace_id, queue) c
        where e.namespace_id = c.namespace_id and e.queue = c.queue`
}

/**
 * A CTE that lowers the due marks of the queues where `moved` (rows with namespace_id, queue,
 * state, run_at) made jobs wait again, and raises their versions (migration 0032).
 */
function markedFrom(moved: string): string {
  return `insert into platform.job_queue_marks as m (namespace_id, queue, next_run_at, version)
         select namespace_id, queue, min(run_at), 1 from ${moved} where state in ('queued', 'retry_wait') group by namespace_id, queue
         on conflict (namespace_id, queue) do update set next_run_at = least(m.next_run_at, excluded.next_run_at), version = m.version + 1`
}

/**
 * Due marks that are early (their queue has nothing due: its jobs were dead-lettered by a
 * deploy, or a claim's refresh lost a race) cost every claim a probe: sets up to `limit` of the
 * oldest right, each only where no statement made a job wait since this one's snapshot.
 * Returns how many it set.
 */
export async function repairEarlyMarks(db: Queryable, options: { now: Date; limit: number }): Promise<number> {
  const rows = await db.query(
    `with seen as (
       select m.namespace_id, m.queue, m.version, m.next_run_at,
              (select j.run_at from platform.jobs j
                where j.namespace_id = m.namespace_id and j.queue = m.queue and j.state in ('queued', 'retry_wait')
                order by j.run_at, j.id limit 1) as next
         from platform.job_queue_marks m
        where m.next_run_at <= $1
        order by m.next_run_at
        limit $2)
     update platform.job_queue_marks m set next_run_at = s.next
       from seen s
      where m.namespace_id = s.namespace_id and m.queue = s.queue and m.version = s.version
        and (s.next is null or s.next > $1)
     returning 1`,
    [options.now, options.limit],
  )
  return rows.length
}

/**
 * These attempts succeeded (one statement for a batch). Returns the ids recorded; an attempt
 * that is no longer its job's current one is ignored.
 */
export async function markSucceeded(db: Queryable, options: { attempts: readonly { id: string; attempt: number }[]; now: Date }): Promise<string[]> {
  // platform.complete_jobs (migration 0026): prepared on the platform's own connections.
  const rows = await db.query<{ id: string }>(
    `select id from platform.complete_jobs($1::uuid[], $2::int[], $3::timestamptz) as id`,
    [options.attempts.map((a) => a.id), options.attempts.map((a) => a.attempt), options.now],
    { platformPrepared: true },
  )
  return rows.map((row) => row.id)
}

/**
 * Records these successful attempts (as markSucceeded) and claims up to `limit` due jobs (as
 * claimDueJobs; 0: none) in one round trip: the claim runs after the successes, in the same
 * transaction, so it sees the slots they freed.
 */
export async function completeAndClaim(
  db: Queryable,
  options: { attempts: readonly { id: string; attempt: number }[]; now: Date; limit: number; owner: string; leaseGraceSeconds: number },
): Promise<ClaimedJob[]> {
  // platform.complete_and_claim_jobs (migration 0026): prepared on the platform's own connections.
  return await db.query<ClaimedJob>(
    `select id, app_id, namespace_id, kind, queue, payload, attempts, timeout_seconds, app_slug, app_status, app_release_id
       from platform.complete_and_claim_jobs($1::uuid[], $2::int[], $3::timestamptz, $4::int, $5::text, $6::int)`,
    [options.attempts.map((a) => a.id), options.attempts.map((a) => a.attempt), options.now, options.limit, options.owner, options.leaseGraceSeconds],
    { platformPrepared: true },
  )
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
        returning namespace_id, queue, state, run_at),
     ended as (${endedFrom('moved')}),
     marked as (${markedFrom('moved')}),
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
    `with moved as (
       update platform.jobs
          set state = case when attempts = 1 then 'queued' else 'retry_wait' end, attempts = attempts - 1,
              run_at = $4, updated_at = $3, lease_owner = null, lease_expires_at = null,
              started_at = case when attempts = 1 then null else started_at end
        where id = $1 and state = 'running' and attempts = $2
        returning namespace_id, queue, state, run_at),
     ended as (${endedFrom('moved')})
     ${markedFrom('moved')}`,
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
        returning namespace_id, queue),
     ended as (${endedFrom('moved')})
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
        returning j.namespace_id, j.queue, j.state, j.run_at
     ), ended as (${endedFrom('moved')}
     ), counted as (
       update platform.job_namespaces n set active = n.active - c.ended
         from (select namespace_id, count(*)::int as ended from moved where state = 'dead_lettered' group by namespace_id) c
        where n.namespace_id = c.namespace_id
       returning 1
     ), marked as (
       -- After the namespaces' counters (read first), as in an enqueue: the same lock order.
       ${markedFrom(`(select * from moved where (select count(*) from counted) >= 0) moved_after_counted`)})
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
