/**
 * Test data for the dashboard's tests: jobs and Function log lines written straight into
 * their tables at chosen times and states (the dashboard is about reading them; the jobs
 * engine and the Functions host have their own tests), each job with a payload and an
 * idempotency key that must never reach a page.
 */
import type { Db } from '../db/db.ts'

export const SECRET_PAYLOAD = 'payload-that-must-not-show'
export const SECRET_KEY_PREFIX = 'idempotency-key-that-must-not-show'

export interface SeedJob {
  queue: string
  state: 'queued' | 'running' | 'retry_wait' | 'succeeded' | 'dead_lettered'
  createdAt: Date
  attempts?: number
  error?: { code: string; message: string }
}

async function productionNamespace(db: Db, slug: string): Promise<{ appId: string; namespaceId: string }> {
  const [row] = await db.query<{ app_id: string; id: string }>(
    `select n.app_id, n.id from platform.namespaces n join platform.apps a on a.id = n.app_id
      where a.slug = $1 and n.environment = 'production'`, [slug])
  if (!row) throw new Error(`the app ${slug} has no production namespace: deploy it first`)
  return { appId: row.app_id, namespaceId: row.id }
}

/** Writes `jobs` into the production namespace of the app `slug`. */
export async function seedJobs(db: Db, slug: string, jobs: readonly SeedJob[]): Promise<void> {
  const { appId, namespaceId } = await productionNamespace(db, slug)
  for (const [i, job] of jobs.entries()) {
    const terminal = job.state === 'succeeded' || job.state === 'dead_lettered'
    const attempts = job.attempts ?? (job.state === 'queued' ? 0 : 1)
    const started = job.state === 'queued' ? null : new Date(job.createdAt.getTime() + 500)
    const finished = terminal ? new Date(job.createdAt.getTime() + 1000) : null
    await db.query(
      `insert into platform.jobs (app_id, namespace_id, kind, queue, state, payload, payload_sha256, idempotency_key, concurrency,
         max_attempts, retry_delay_seconds, retry_backoff, timeout_seconds, attempts, run_at, last_error, created_at, updated_at, started_at, finished_at)
       values ($1, $2, 'queue', $3, $4, $5, 'seeded', $6, 1, 3, 30, false, 60, $7, $8, $9, $8, $10, $11, $12)`,
      [appId, namespaceId, job.queue, job.state, terminal ? null : JSON.stringify({ note: SECRET_PAYLOAD }),
        `${SECRET_KEY_PREFIX}-${job.queue}-${job.createdAt.getTime()}-${i}`, attempts, job.createdAt,
        job.error === undefined ? null : JSON.stringify(job.error), finished ?? started ?? job.createdAt, started, finished],
    )
  }
}

/** Writes one Function log line per entry into the active production release of the app `slug`. */
export async function seedLogs(
  db: Db, slug: string, lines: ReadonlyArray<{ level: 'debug' | 'info' | 'warn' | 'error'; fn: string; requestId: string; message: string; at: Date }>,
): Promise<void> {
  const [app] = await db.query<{ id: string; active_release_id: string }>('select id, active_release_id from platform.apps where slug = $1', [slug])
  if (!app?.active_release_id) throw new Error(`the app ${slug} has no active release`)
  for (const line of lines) {
    await db.query(
      `insert into platform.function_logs (app_id, dev_name, release_id, function_name, request_id, level, message, fields, created_at)
       values ($1, '', $2, $3, $4, $5, $6, $7, $8)`,
      [app.id, app.active_release_id, line.fn, line.requestId, line.level, line.message, JSON.stringify({ n: line.message.length }), line.at],
    )
  }
}
