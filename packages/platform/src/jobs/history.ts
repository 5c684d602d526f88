/**
 * What owners see of an app's jobs (spec 4.1, 6.3): history pages, per-queue totals and the
 * Agent Feed signals. Everything is over the retained jobs (14 days), filtered by creation
 * time with inclusive `from`/`to` (a date alone: from its start, to its end, UTC); `queue`
 * and `state` narrow only the history rows.
 */
import type { Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { countActiveJobs, listJobs, queueTotals, recentFailures, type JobState } from './queries.ts'
import { RETENTION_MS } from './retention.ts'
import { jobView, type JobView } from './views.ts'

const STATES: ReadonlySet<string> = new Set(['queued', 'running', 'retry_wait', 'succeeded', 'dead_lettered'])
export const PAGE_SIZES = { default: 50, max: 100 } as const
/** The built-in failure alert fires while a job was dead-lettered within this window. */
export const FAILURE_ALERT_WINDOW_MS = 60 * 60 * 1000

export interface HistoryQuery {
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly limit?: string | undefined
  readonly nextCursor?: string | undefined
  readonly queue?: string | undefined
  readonly state?: string | undefined
}

function invalid(field: string, message: string): ServiceError {
  return new ServiceError('VALIDATION_FAILED', message, { details: { field } })
}

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * An ISO 8601 date or date-time (with an offset or Z when a time is given). Calendar
 * overflow (2026-02-30, 24:00, :60) is refused, not rolled over. A date alone is that UTC
 * day's start, or with `endOfDay` its last millisecond (an inclusive `to`).
 */
function readTime(value: string | undefined, options: { field: string; fallback: Date; endOfDay?: boolean }): Date {
  const { field, fallback, endOfDay = false } = options
  if (value === undefined || value === '') return fallback
  const match = /^(\d{4})-(\d{2})-(\d{2})(T([01]\d|2[0-3]):([0-5]\d)(:([0-5]\d)(\.\d{1,9})?)?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d))?$/.exec(value)
  if (match === null) throw invalid(field, `${field} must be an ISO 8601 date-time such as 2026-11-21T09:00:00Z`)
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  if (month < 1 || month > 12 || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    throw invalid(field, `${field} is not a calendar date`)
  }
  const at = new Date(value)
  if (Number.isNaN(at.getTime())) throw invalid(field, `${field} is not a valid date-time`)
  return match[4] === undefined && endOfDay ? new Date(at.getTime() + DAY_MS - 1) : at
}

/** The inclusive creation-time range: default the whole retention window up to now. */
export function readRange(query: Pick<HistoryQuery, 'from' | 'to'>, clock: Clock): { from: Date; to: Date } {
  const now = clock.now()
  const from = readTime(query.from, { field: 'from', fallback: new Date(now.getTime() - RETENTION_MS) })
  const to = readTime(query.to, { field: 'to', fallback: now, endOfDay: true })
  if (from.getTime() > to.getTime()) throw invalid('from', 'from must not be after to')
  return { from, to }
}

function encodeCursor(row: { createdAt: string; id: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt, row.id])).toString('base64url')
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[]
    const at = new Date(String(createdAt))
    if (typeof createdAt === 'string' && typeof id === 'string' && !Number.isNaN(at.getTime())
      && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) {
      return { createdAt: at, id }
    }
  } catch { /* reported below */ }
  throw invalid('nextCursor', 'nextCursor is not a cursor this API returned')
}

export interface QueueTotals {
  readonly queue: string
  readonly created: number
  readonly retried: number
  readonly succeeded: number
  readonly failed: number
  /** Jobs still pending: waiting (queued or retry_wait) plus running. */
  readonly depth: number
  readonly waiting: number
  readonly running: number
}

export interface JobHistory {
  readonly from: string
  readonly to: string
  readonly jobs: JobView[]
  readonly nextCursor: string | null
  readonly totals: QueueTotals[]
}

/** The app namespace a request reads: production, or one development namespace. */
export interface JobScope {
  readonly appId: string
  readonly namespaceId: string
}

/** One page of history and the per-queue totals for the same range. */
export async function jobHistory(db: Queryable, clock: Clock, scope: JobScope, query: HistoryQuery): Promise<JobHistory> {
  const { from, to } = readRange(query, clock)
  const limit = query.limit === undefined ? PAGE_SIZES.default : Number(query.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_SIZES.max) throw invalid('limit', `limit must be an integer from 1 to ${PAGE_SIZES.max}`)
  if (query.state !== undefined && !STATES.has(query.state)) throw invalid('state', `state must be one of ${[...STATES].join(', ')}`)
  const before = query.nextCursor ? decodeCursor(query.nextCursor) : null
  const rows = await listJobs(db, {
    ...scope, from, to, queue: query.queue || null, state: (query.state as JobState | undefined) ?? null, before, limit: limit + 1,
  })
  const jobs = rows.slice(0, limit).map(jobView)
  const last = jobs[jobs.length - 1]
  const totals = (await queueTotals(db, { ...scope, from, to })).map((row) => ({ ...row, depth: row.waiting + row.running }))
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    jobs,
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last) : null,
    totals,
  }
}

export interface Signals {
  readonly from: string
  readonly to: string
  /** Counters over jobs created in the range; `jobs.active` is the current number of pending jobs. */
  readonly signals: {
    readonly 'jobs.created': number
    readonly 'jobs.retried': number
    readonly 'jobs.succeeded': number
    readonly 'jobs.failed': number
    readonly 'jobs.active': number
  }
  /** Job failure events: dead-lettered jobs that ended in the range, newest first (at most 50). */
  readonly events: { readonly type: 'job.failed'; readonly at: string; readonly job: JobView }[]
  readonly alerts: {
    readonly name: 'jobs.failures'
    readonly status: 'firing' | 'ok'
    readonly window: string
    readonly failed: number
    readonly message: string
  }[]
}

/** The Agent Feed's job signals, failure events and built-in failure alert for one app. */
export async function jobSignals(db: Queryable, clock: Clock, scope: JobScope, query: Pick<HistoryQuery, 'from' | 'to'>): Promise<Signals> {
  const { from, to } = readRange(query, clock)
  const totals = await queueTotals(db, { ...scope, from, to })
  const sum = (pick: (row: (typeof totals)[number]) => number) => totals.reduce((n, row) => n + pick(row), 0)
  const failures = await recentFailures(db, { ...scope, from, to, limit: 50 })
  const now = clock.now()
  const windowFailures = await recentFailures(db, { ...scope, from: new Date(now.getTime() - FAILURE_ALERT_WINDOW_MS), to: now, limit: 1000 })
  const firing = windowFailures.length > 0
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    signals: {
      'jobs.created': sum((row) => row.created),
      'jobs.retried': sum((row) => row.retried),
      'jobs.succeeded': sum((row) => row.succeeded),
      'jobs.failed': sum((row) => row.failed),
      'jobs.active': await countActiveJobs(db, scope),
    },
    events: failures.map((row) => ({ type: 'job.failed' as const, at: row.finished_at!.toISOString(), job: jobView(row) })),
    alerts: [{
      name: 'jobs.failures',
      status: firing ? 'firing' : 'ok',
      window: 'PT1H',
      failed: windowFailures.length,
      message: firing
        ? `${windowFailures.length}${windowFailures.length === 1000 ? '+' : ''} background job${windowFailures.length === 1 ? '' : 's'} failed in the last hour; latest: ${windowFailures[0]!.queue} ${windowFailures[0]!.last_error?.code ?? ''}`.trim()
        : 'No background job failed in the last hour',
    }],
  }
}
