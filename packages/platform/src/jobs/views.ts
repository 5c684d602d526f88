/**
 * The one shape a job leaves the platform in, for `ctx.jobs` and the owner API alike: its
 * id, queue, state, attempts, timestamps and latest bounded error. Never its payload,
 * idempotency key or enqueuing user (spec 2.12).
 */
import type { JobKind, JobRow, JobState } from './queries.ts'

export interface JobView {
  readonly id: string
  /** The queue, or `cron:<name>` for a cron run. */
  readonly queue: string
  readonly kind: JobKind
  readonly state: JobState
  /** Attempts started so far (the first delivery is attempt 1). */
  readonly attempts: number
  readonly maxAttempts: number
  readonly createdAt: string
  readonly updatedAt: string
  /** When the next attempt is due (queued, retry_wait); otherwise null. */
  readonly runAt: string | null
  /** When the latest attempt started. */
  readonly startedAt: string | null
  /** When the job succeeded or was dead-lettered. */
  readonly finishedAt: string | null
  readonly lastError: { readonly code: string; readonly message: string } | null
}

export function jobView(row: JobRow): JobView {
  const pending = row.state === 'queued' || row.state === 'retry_wait'
  return {
    id: row.id,
    queue: row.queue,
    kind: row.kind,
    state: row.state,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    runAt: pending ? row.run_at.toISOString() : null,
    startedAt: row.started_at?.toISOString() ?? null,
    finishedAt: row.finished_at?.toISOString() ?? null,
    lastError: row.last_error === null ? null : { code: row.last_error.code, message: row.last_error.message },
  }
}
