/**
 * Owner API for Function logs, mounted under /v1/apps: `GET /:appId/logs` (production) and
 * `GET /:appId/dev/:devName/logs`, newest first, one bounded page at a time. Filters:
 * `function`, `level` (that level and above), `from` and `to` (inclusive ISO 8601 times),
 * `requestId`, `limit` (1 to 1000, default 100) and `cursor` (a page's `nextCursor`).
 * The owner and Edit holders: the people who change the code read what it logs.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import { appForRole, type OwnerEnv } from '../identity/index.ts'
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

function decodeCursor(value: string | undefined): LogQuery['before'] {
  if (value === undefined) return undefined
  const [at, seq] = Buffer.from(value, 'base64url').toString('utf8').split('|')
  const parsed = at === undefined ? null : time(at, 'cursor')
  if (parsed === null || parsed === undefined || seq === undefined || !/^\d{1,19}$/.test(seq)) {
    throw invalid('cursor', 'cursor is not one this API returned')
  }
  return { time: parsed, seq }
}

/** The filters of a logs request, checked. */
export function logQuery(c: Context, scope: { appId: string; devName: string }): LogQuery {
  const q = (name: string) => c.req.query(name)
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
  return {
    ...scope,
    ...(fn === undefined ? {} : { functionName: fn }),
    ...(level === undefined ? {} : { level: level as LogLevel }),
    ...(from === undefined ? {} : { from }),
    ...(to === undefined ? {} : { to }),
    ...(requestId === undefined ? {} : { requestId }),
    ...(limit === undefined ? {} : { limit }),
    ...(before === undefined ? {} : { before }),
  }
}

export function logRoutes(deps: { db: Db }) {
  const routes = new Hono<OwnerEnv>()
  async function list(c: Context<OwnerEnv>) {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId')!, 'edit')
    const devParam = c.req.param('devName')
    const devName = devParam === undefined ? '' : checkDevName(devParam)
    const page = await listFunctionLogs(deps.db, logQuery(c, { appId: app.id, devName }))
    return c.json({ logs: page.lines, nextCursor: page.next === null ? null : encodeLogCursor(page.next) })
  }
  routes.get('/:appId/logs', list)
  routes.get('/:appId/dev/:devName/logs', list)
  return routes
}
