/**
 * Errors of the data API in PostgREST's shape (`{code, message, details, hint}`) with its
 * statuses: planning errors (PGRST2xx) and database errors passed through by SQLSTATE with
 * PostgREST's mapping, so PostgREST clients see exactly what they expect.
 */
import { databaseError } from '../db/errors.ts'
import { QueryParseError, type ErrorDetails, type PostgrestErrorBody } from './parse-errors.ts'

export class PostgrestError extends Error {
  override name = 'PostgrestError'
  readonly code: string
  readonly status: number
  readonly details: ErrorDetails
  readonly hint: string | null
  /** Response headers the error carries (the Content-Range of a 416). */
  readonly headers: Record<string, string>

  constructor(
    code: string,
    status: number,
    message: string,
    options: { details?: ErrorDetails; hint?: string | null; headers?: Record<string, string> } = {},
  ) {
    super(message)
    this.code = code
    this.status = status
    this.details = options.details ?? null
    this.hint = options.hint ?? null
    this.headers = options.headers ?? {}
  }

  toBody(): PostgrestErrorBody {
    return { code: this.code, message: this.message, details: this.details, hint: this.hint }
  }
}

/**
 * PostgREST's HTTP status for a SQLSTATE (its `pgErrorStatus`). `raise sqlstate 'PT402'` picks
 * the status itself, as in PostgREST.
 */
export function statusForSqlState(sqlState: string, authenticated: boolean, message = ''): number {
  if (sqlState === '42501') return authenticated ? 403 : 401
  if (sqlState === '21000') return message.endsWith('requires a WHERE clause') ? 400 : 500
  if (sqlState === '57P01') return 503
  if (/^PT[1-5]\d\d$/.test(sqlState)) return Number(sqlState.slice(2))
  const exact: Record<string, number> = {
    '23503': 409, '23505': 409, '25006': 405, P0001: 400, '42883': 404, '42P01': 404, '42P17': 500,
  }
  if (exact[sqlState]) return exact[sqlState]!
  const classes: Record<string, number> = {
    '08': 503, '09': 500, '0L': 403, '0P': 403, '25': 500, '28': 403, '2D': 500, '38': 500, '39': 500, '3B': 500,
    '40': 500, '53': 503, '54': 413, '55': 500, '57': 500, '58': 500, F0: 500, HV: 500, P0: 500, PT: 500, XX: 500,
  }
  return classes[sqlState.slice(0, 2)] ?? 400
}

/** The error as a PostgREST body and status, or null when it is not one we can describe. */
export function toPostgrestError(error: unknown, authenticated: boolean): { status: number; body: PostgrestErrorBody } | null {
  if (error instanceof PostgrestError || error instanceof QueryParseError) return { status: error.status, body: error.toBody() }
  const info = databaseError(error)
  if (!info) return null
  return {
    status: statusForSqlState(info.sqlState, authenticated, info.message),
    body: { code: info.sqlState, message: info.message, details: info.detail ?? null, hint: info.hint ?? null },
  }
}

export function tableNotFound(schema: string, name: string): PostgrestError {
  return new PostgrestError('PGRST205', 404, `Could not find the table '${schema}.${name}' in the schema cache`)
}

export function columnNotFound(table: string, column: string): PostgrestError {
  return new PostgrestError('42703', 400, `column ${table}.${column} does not exist`)
}
