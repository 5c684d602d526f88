/**
 * Errors of the data API's request parser, spelled the way PostgREST 12 spells them so that
 * PostgREST clients (supabase-js, postgrest-py, ...) can switch on `code`. The body shape is
 * PostgREST's `{ code, message, details, hint }`, not the platform's `ServiceError` body: the
 * data API answers in PostgREST's dialect, so its routes render these with `toBody()`.
 *
 * Codes raised here (PostgREST's catalog; statuses as PostgREST sends them):
 * - PGRST100 400: a query parameter does not parse (`select`, a filter, `order`, `and`/`or`,
 *   `columns`, `on_conflict`), or nests deeper than the parser allows.
 * - PGRST103 416: an unsatisfiable `Range` header, a negative or non-integer `limit`/`offset`.
 * - PGRST109 400: `limit`/`offset` on PATCH/DELETE without an explicit `order`.
 * - PGRST114 400: `limit`/`offset` on PUT.
 * - PGRST122 400: unrecognised preferences with `Prefer: handling=strict`.
 * - PGRST123 400: aggregate functions in `select` (not enabled on this platform).
 */

/** The parser's codes and the HTTP status each implies. */
export const PARSE_ERROR_STATUS = {
  PGRST100: 400,
  PGRST103: 416,
  PGRST109: 400,
  PGRST114: 400,
  PGRST122: 400,
  PGRST123: 400,
} as const

export type QueryParseErrorCode = keyof typeof PARSE_ERROR_STATUS

/** The HTTP status PostgREST answers with for `code`. */
export function httpStatusFor(code: QueryParseErrorCode): number {
  return PARSE_ERROR_STATUS[code]
}

/**
 * PostgREST's error body. `details` and `hint` are `null` when absent, as PostgREST sends them;
 * `details` is a list of objects where PostgREST sends one (the candidates of PGRST201).
 */
export interface PostgrestErrorBody {
  code: string
  message: string
  details: ErrorDetails
  hint: string | null
}

export type ErrorDetails = string | readonly Record<string, string>[] | null

export interface QueryParseErrorOptions {
  details?: string | null
  hint?: string | null
  cause?: unknown
}

/**
 * A request the parser rejects. Example:
 *
 * ```ts
 * try { parseReadRequest('people', new URLSearchParams('age=foo.1')) }
 * catch (error) {
 *   if (error instanceof QueryParseError) return Response.json(error.toBody(), { status: error.status })
 *   throw error
 * }
 * ```
 */
export class QueryParseError extends Error {
  override name = 'QueryParseError'
  readonly code: QueryParseErrorCode
  readonly status: number
  readonly details: string | null
  readonly hint: string | null

  constructor(code: QueryParseErrorCode, message: string, options: QueryParseErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = httpStatusFor(code)
    this.details = options.details ?? null
    this.hint = options.hint ?? null
  }

  toBody(): PostgrestErrorBody {
    return { code: this.code, message: this.message, details: this.details, hint: this.hint }
  }
}

/** Longest piece of user input echoed back in a message; longer input is cut with `…`. */
const MAX_ECHO = 200

/** Shortens user input for messages so a 1 MB parameter does not become a 1 MB error. */
export function echo(input: string): string {
  return input.length <= MAX_ECHO ? input : `${input.slice(0, MAX_ECHO)}…`
}

/**
 * PGRST100 in PostgREST's shape: the message names what failed to parse and where (Parsec's
 * `"failed to parse filter (noop.1)" (line 1, column 1)`), the details say what was found
 * and what was expected there.
 */
export function syntaxError(what: string, input: string, column: number, details: string): QueryParseError {
  return new QueryParseError('PGRST100', `"failed to parse ${what} (${echo(input)})" (line 1, column ${column})`, {
    details,
  })
}

/** PGRST103: PostgREST's "Requested range not satisfiable" with the reason in `details`. */
export function rangeError(details: string): QueryParseError {
  return new QueryParseError('PGRST103', 'Requested range not satisfiable', { details })
}

export function aggregatesNotAllowed(found: string): QueryParseError {
  return new QueryParseError('PGRST123', 'Use of aggregate functions is not allowed', {
    details: `aggregate functions are not enabled; found ${found} in the select parameter`,
  })
}

export function limitWithoutOrder(): QueryParseError {
  return new QueryParseError('PGRST109', "A 'limit' was applied without an explicit 'order'", {
    hint: "Apply an 'order' using unique column(s)",
  })
}

export function putLimitNotAllowed(): QueryParseError {
  return new QueryParseError('PGRST114', 'limit/offset querystring parameters are not allowed for PUT')
}

export function invalidPreferences(invalid: readonly string[]): QueryParseError {
  return new QueryParseError('PGRST122', 'Invalid preferences given with handling=strict', {
    details: `Invalid preferences: ${invalid.map(echo).join(', ')}`,
  })
}
