/**
 * An app namespace's Function logs as its owner reads them, for the owner API and the MCP
 * `read_logs` tool alike: newest first, one bounded page at a time. Filters: `function`,
 * `level` (that level and above), `from` and `to` (inclusive ISO 8601 times), `requestId`,
 * `limit` (1 to 1000, default 100), `cursor` (a page's `nextCursor`: older lines) and `after`
 * (a page's `newestCursor`: only newer lines, for a follower such as `service logs --follow`).
 * The owner and Edit holders: the people who change the code read what it logs.
 */
import type { Db } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import { appForRole, type User } from '../identity/index.ts'
import { checkDevName } from '../namespaces/dev-names.ts'
import { listFunctionLogs, LOG_LEVELS, MAX_LOG_PAGE, type LogLevel, type LogQuery } from './context-log.ts'

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/

function invalid(field: string, message: string): ServiceError {
  return new ServiceError('VALIDATION_FAILED', message, { details: { field } })
}

function time(value: string | undefined, field: string): Date | undefined {
  if (value === undefined) return undefined
  const parsed = ISO_TIME.test(value) ? new Date(value) : null
  if (parsed === null || Number.isNaN(parsed.getTime())) {
    throw invalid(field, `${field} must be an ISO 8601 time with a zone, like 2026-11-21T12:00:00Z`)
  }
  return parsed
}

/** A page position as an opaque token: the line's time and write order. */
export function encodeLogCursor(position: { time: Date; seq: string }): string {
  return Buffer.from(`${position.time.toISOString()}|${position.seq}`).toString('base64url')
}

function decodeCursor(value: string | undefined, field: 'cursor' | 'after' = 'cursor'): LogQuery['before'] {
  if (value === undefined) return undefined
  const [at, seq] = Buffer.from(value, 'base64url').toString('utf8').split('|')
  const parsed = at === undefined ? null : time(at, field)
  if (parsed === null || parsed === undefined || seq === undefined || !/^\d{1,19}$/.test(seq)) {
    throw invalid(field, `${field} is not a cursor this API returned`)
  }
  return { time: parsed, seq }
}

/** The filters of a logs request, checked. */
export function logQuery(q: (name: string) => string | undefined, scope: { appId: string; devName: string }): LogQuery {
  const level = q('level')
  if (level !== undefined && !LOG_LEVELS.includes(level as LogLevel)) throw invalid('level', `level is one of ${LOG_LEVELS.join(', ')}`)
  const limitText = q('limit')
  const limit = limitText === undefined ? undefined : Number(limitText)
  if (limit !== undefined && (!/^\d+$/.test(limitText!) || limit < 1 || limit > MAX_LOG_PAGE)) {
    throw invalid('limit', `limit is a whole number from 1 to ${MAX_LOG_PAGE}`)
  }
  const fn = q('function')
  if (fn !== undefined && (fn.length === 0 || fn.length > 64)) throw invalid('function', 'function is a Function name')
  const requestId = q('requestId')
  if (requestId !== undefined && (requestId.length === 0 || requestId.length > 128)) throw invalid('requestId', 'requestId is at most 128 characters')
  const from = time(q('from'), 'from')
  const to = time(q('to'), 'to')
  const before = decodeCursor(q('cursor'))
  const after = decodeCursor(q('after'), 'after')
  return {
    ...scope,
    ...(fn === undefined ? {} : { functionName: fn }),
    ...(level === undefined ? {} : { level: level as LogLevel }),
    ...(from === undefined ? {} : { from }),
    ...(to === undefined ? {} : { to }),
    ...(requestId === undefined ? {} : { requestId }),
    ...(limit === undefined ? {} : { limit }),
    ...(before === undefined ? {} : { before }),
    ...(after === undefined ? {} : { after }),
  }
}

/** The filters a logs request may carry (each a string, as in a query string). */
export const LOG_FILTERS = ['function', 'level', 'from', 'to', 'requestId', 'limit', 'cursor', 'after'] as const

/**
 * One page of logs of the app `appId` (production, or the development namespace `devName`).
 *
 * @example
 * const page = await readAppLogs(db, { user, appId: 'orders', devName: 'alice', filters: { level: 'warn' } })
 */
export async function readAppLogs(
  db: Db,
  input: { user: User; appId: string; devName?: string | undefined; filters: Partial<Record<(typeof LOG_FILTERS)[number], string | undefined>> },
) {
  const app = await appForRole(db, input.user, input.appId, 'edit')
  const devName = input.devName === undefined ? '' : checkDevName(input.devName)
  const filters: Record<string, string | undefined> = input.filters
  const page = await listFunctionLogs(db, logQuery((name) => filters[name], { appId: app.id, devName }))
  return {
    logs: page.lines,
    nextCursor: page.next === null ? null : encodeLogCursor(page.next),
    newestCursor: page.newest === null ? null : encodeLogCursor(page.newest),
  }
}
