/**
 * The one shape a job leaves the platform in, for `ctx.jobs` and the owner API alike: its
 * id, queue, state, attempts, timestamps and latest bounded error. Never its payload,
 * idempotency key or enqueuing user (spec 2.12).
 */
import type { Job } from '@service/server'
import type { JobRow } from './queries.ts'

/** Exactly the SDK's `Job`, so `ctx.jobs` and the owner API cannot drift apart. */
export type JobView = Job

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
