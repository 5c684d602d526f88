/**
 * `ctx.log.debug|info|warn|error(message, fields)`: stores a Function's log line in
 * `platform.function_logs` with the app, release, Function and request it came from.
 * Lines are bounded so a Function cannot fill the database with one call: the message is
 * cut to 4 KiB and fields over 16 KiB of JSON are replaced by a note of their size.
 */
import type { Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export const MAX_LOG_MESSAGE_CHARS = 4 * 1024
export const MAX_LOG_FIELDS_CHARS = 16 * 1024

export interface LogSource {
  readonly appId: string
  readonly releaseId: string
  readonly functionName: string
  readonly requestId: string
}

/**
 * Stores one `ctx.log` call.
 *
 * @example
 * await writeFunctionLog(db, clock, { source, level: 'info', args: ['created', { id }] })
 */
export async function writeFunctionLog(
  db: Queryable,
  clock: Clock,
  options: { source: LogSource; level: string; args: readonly unknown[] },
): Promise<null> {
  const level = LOG_LEVELS.find((known) => known === options.level)
  if (level === undefined) throw new ServiceError('BAD_REQUEST', `ctx.log has no method ${options.level}`)
  const [message, fields] = options.args
  const text = (typeof message === 'string' ? message : JSON.stringify(message) ?? String(message)).slice(0, MAX_LOG_MESSAGE_CHARS)
  await db.query(
    `insert into platform.function_logs (app_id, release_id, function_name, request_id, level, message, fields, created_at)
     values ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)`,
    [options.source.appId, options.source.releaseId, options.source.functionName, options.source.requestId, level, text,
      boundedFields(fields), clock.now()],
  )
  return null
}

function boundedFields(fields: unknown): string | null {
  if (fields === undefined || fields === null) return null
  const json = JSON.stringify(typeof fields === 'object' ? fields : { value: fields })
  if (json === undefined) return null
  if (json.length > MAX_LOG_FIELDS_CHARS) return JSON.stringify({ truncated: true, size: json.length })
  return json
}
