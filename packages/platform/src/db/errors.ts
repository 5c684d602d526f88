/**
 * Normalises the two drivers' database errors (PGlite's DatabaseError, postgres' PostgresError)
 * into one shape with the SQLSTATE and the positions PostgreSQL reports.
 */
export interface DatabaseErrorInfo {
  sqlState: string
  message: string
  detail?: string
  hint?: string
  /** 1-based character offset in the statement, when PostgreSQL names one. */
  position?: number
  /** Offset inside an internally executed statement (EXECUTE in PL/pgSQL). */
  internalPosition?: number
  internalQuery?: string
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined
}

function number(value: unknown): number | undefined {
  const n = typeof value === 'string' ? Number(value) : value
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : undefined
}

/** The database error inside `error`, or null when it is not one. */
export function databaseError(error: unknown): DatabaseErrorInfo | null {
  if (!(error instanceof Error)) return null
  const e = error as Error & Record<string, unknown>
  const sqlState = text(e.code)
  if (!sqlState || !/^[0-9A-Z]{5}$/.test(sqlState)) return null
  const info: DatabaseErrorInfo = { sqlState, message: e.message }
  const detail = text(e.detail)
  const hint = text(e.hint)
  const position = number(e.position)
  const internalPosition = number(e.internalPosition ?? e.internal_position)
  const internalQuery = text(e.internalQuery ?? e.internal_query)
  if (detail) info.detail = detail
  if (hint) info.hint = hint
  if (position) info.position = position
  if (internalPosition) info.internalPosition = internalPosition
  if (internalQuery) info.internalQuery = internalQuery
  return info
}

/** Line and column (1-based) of a 1-based character offset in a text. */
export function lineAndColumn(textValue: string, offset: number): { line: number; column: number } {
  const before = textValue.slice(0, Math.max(0, offset - 1))
  const lines = before.split('\n')
  return { line: lines.length, column: (lines.at(-1)?.length ?? 0) + 1 }
}

/** Driver codes of a connection lost, refused or timed out (postgres.js and Node's sockets). */
const CONNECTION_FAILURES = new Set([
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN',
])

/**
 * Whether a database failure is temporary, so the same statement may succeed later: a
 * statement timeout (57014), a serialization failure or deadlock (40001, 40P01), a connection
 * exception (08), the server out of resources (53) or shutting down (57P), or the driver's
 * connection lost or refused.
 *
 * @example
 * if (isTransientDatabaseFailure(error)) throw new ServiceError('DATA_UNAVAILABLE', 'try again', { cause: error })
 */
export function isTransientDatabaseFailure(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? String((error as { code?: unknown }).code ?? '') : ''
  return code === '57014' || code === '40001' || code === '40P01' || /^(08|53|57P)/.test(code) || CONNECTION_FAILURES.has(code)
}
