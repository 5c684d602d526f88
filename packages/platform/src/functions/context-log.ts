/**
 * Function logs: `ctx.log.debug|info|warn|error(message, fields)` stores a line in
 * `platform.function_logs` with the app, namespace, release, Function and request it came
 * from, and the owner API reads them back newest first. Lines are bounded so a Function
 * cannot fill the database with one call: the message is cut to 4 KiB and fields over
 * 16 KiB of JSON are replaced by a note of their size; the host stores at most 1,000 lines
 * per invocation (then one line saying how many were dropped), none after the invocation
 * ended, and writes them in batches. The caller redacts secret values before a line is
 * stored (`redactor`), so a stored line never holds one. Lines are kept 14 days
 * (`purgeFunctionLogs`, run by main.ts every hour).
 */
import type { Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import type { Redactor } from '../secrets/index.ts'

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export const MAX_LOG_MESSAGE_CHARS = 4 * 1024
export const MAX_LOG_FIELDS_CHARS = 16 * 1024
/** Lines per INSERT when an invocation's lines are written. */
export const LOG_BATCH_LINES = 100
/** How long stored lines are kept. */
export const LOG_RETENTION_DAYS = 14

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value)
}
/** Lines per page of the owner API: default and most. */
export const DEFAULT_LOG_PAGE = 100
export const MAX_LOG_PAGE = 1000

export interface LogSource {
  readonly appId: string
  /** '' for production, else the development namespace. */
  readonly devName?: string
  readonly releaseId: string
  readonly functionName: string
  readonly requestId: string
}

/**
 * Stores `ctx.log` calls of one invocation, in order, with one INSERT.
 *
 * @example
 * await writeFunctionLogs(db, { clock, source, lines: [{ level: 'info', args: ['created', { id }] }], redactor })
 */
export async function writeFunctionLogs(
  db: Queryable,
  options: { clock: Clock; source: LogSource; lines: readonly { level: string; args: readonly unknown[] }[]; redactor?: Redactor },
): Promise<null> {
  if (options.lines.length === 0) return null
  const { source } = options
  const params: unknown[] = [source.appId, source.devName ?? '', source.releaseId, source.functionName, source.requestId, options.clock.now()]
  const rows: string[] = []
  for (const line of options.lines) {
    if (!isLogLevel(line.level)) throw new ServiceError('BAD_REQUEST', `ctx.log has no method ${line.level}`)
    const [message, fields] = options.redactor ? options.redactor.value(line.args) : line.args
    const text = (typeof message === 'string' ? message : JSON.stringify(message) ?? String(message)).slice(0, MAX_LOG_MESSAGE_CHARS)
    params.push(line.level, text, boundedFields(fields))
    const at = params.length
    rows.push(`($1, $2, $3, $4, $5, $${at - 2}, $${at - 1}, $${at}::jsonb, $6)`)
  }
  await db.query(
    `insert into platform.function_logs (app_id, dev_name, release_id, function_name, request_id, level, message, fields, created_at)
     values ${rows.join(', ')}`,
    params,
  )
  return null
}

/**
 * Deletes lines older than LOG_RETENTION_DAYS; returns how many went.
 *
 * @example
 * await purgeFunctionLogs(db, clock)
 */
export async function purgeFunctionLogs(db: Queryable, clock: Clock): Promise<number> {
  const cutoff = new Date(clock.now().getTime() - LOG_RETENTION_DAYS * 24 * 60 * 60 * 1000)
  const rows = await db.query<{ count: number }>(
    'with gone as (delete from platform.function_logs where created_at < $1 returning 1) select count(*)::int as count from gone', [cutoff])
  return rows[0]?.count ?? 0
}

function boundedFields(fields: unknown): string | null {
  if (fields === undefined || fields === null) return null
  const json = JSON.stringify(typeof fields === 'object' ? fields : { value: fields })
  if (json === undefined) return null
  if (json.length > MAX_LOG_FIELDS_CHARS) return JSON.stringify({ truncated: true, size: json.length })
  return json
}

export interface StoredLogLine {
  readonly id: string
  readonly time: string
  readonly level: LogLevel
  readonly function: string
  readonly requestId: string
  readonly releaseId: string
  readonly message: string
  readonly fields: unknown
}

export interface LogQuery {
  readonly appId: string
  readonly devName: string
  readonly functionName?: string
  /** Lines at this level and above. */
  readonly level?: LogLevel
  /** Inclusive bounds. */
  readonly from?: Date
  readonly to?: Date
  readonly requestId?: string
  readonly limit?: number
  /** Lines strictly older than this position (a page's `nextCursor`). */
  readonly before?: { readonly time: Date; readonly seq: string }
  /** Lines strictly newer than this position (a page's `newestCursor`): what a follower has not seen yet. */
  readonly after?: { readonly time: Date; readonly seq: string }
}

interface LogRow extends Record<string, unknown> {
  id: string
  seq: string
  created_at: Date
  level: LogLevel
  function_name: string
  request_id: string
  release_id: string
  message: string
  fields: unknown
}

/**
 * One page of an app namespace's logs, newest first, and the position after its last line
 * when there may be more.
 *
 * @example
 * const page = await listFunctionLogs(db, { appId, devName: '', level: 'warn', limit: 50 })
 */
export async function listFunctionLogs(db: Queryable, query: LogQuery): Promise<{
  lines: StoredLogLine[]
  next: { time: Date; seq: string } | null
  /** The position of the page's newest line (null for an empty page). */
  newest: { time: Date; seq: string } | null
}> {
  const limit = Math.min(Math.max(query.limit ?? DEFAULT_LOG_PAGE, 1), MAX_LOG_PAGE)
  const minLevel = query.level === undefined ? null : LOG_LEVELS.indexOf(query.level) + 1
  const rows = await db.query<LogRow>(
    `select id, seq::text as seq, created_at, level, function_name, request_id, release_id, message, fields
       from platform.function_logs
      where app_id = $1 and dev_name = $2
        and ($3::text is null or function_name = $3)
        and ($4::int is null or array_position(array['debug', 'info', 'warn', 'error'], level) >= $4::int)
        and ($5::timestamptz is null or created_at >= $5)
        and ($6::timestamptz is null or created_at <= $6)
        and ($7::text is null or request_id = $7)
        and ($8::timestamptz is null or (created_at, seq) < ($8, $9::bigint))
        and ($11::timestamptz is null or (created_at, seq) > ($11, $12::bigint))
      order by created_at desc, seq desc
      limit $10`,
    [query.appId, query.devName, query.functionName ?? null, minLevel, query.from ?? null, query.to ?? null,
      query.requestId ?? null, query.before?.time ?? null, query.before?.seq ?? null, limit + 1,
      query.after?.time ?? null, query.after?.seq ?? null],
  )
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  const first = page[0]
  return {
    lines: page.map((row) => ({
      id: row.id,
      time: row.created_at.toISOString(),
      level: row.level,
      function: row.function_name,
      requestId: row.request_id,
      releaseId: row.release_id,
      message: row.message,
      fields: row.fields ?? null,
    })),
    next: rows.length > limit && last !== undefined ? { time: last.created_at, seq: last.seq } : null,
    newest: first === undefined ? null : { time: first.created_at, seq: first.seq },
  }
}
