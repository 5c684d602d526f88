/**
 * How an invocation ends, and how a failure becomes an HTTP error. Typed `ServiceError`s
 * a Function throws keep their status, code, message and details; every other failure
 * has a `kind` so the platform can answer generically in production and in detail in
 * development (spec 7.1: "unknown production errors stay generic").
 */
import type { Redactor } from '../secrets/index.ts'
import { serviceErrorProblem, type WireFailure } from './protocol.ts'

/** Why an invocation failed. */
export type FunctionFailure =
  | WireFailure
  /**
   * The invocation ran (or waited) past its timeout; its worker was killed. `reason`
   * `not_started`: it only waited for a free worker, and no Function code ran (functions/pool.ts;
   * the jobs dispatcher does not count such an attempt).
   */
  | { readonly kind: 'timeout'; readonly message: string; readonly reason?: 'not_started' }
  /**
   * The worker process ended (killed, crashed, broke the protocol) while the invocation ran.
   * `reason` says why when the platform knows:
   * - `worker_replaced_for_timeout_of_another_invocation`: ANOTHER invocation on the worker
   *   timed out and the worker was killed; this one was a bystander (the jobs dispatcher does
   *   not count such an attempt).
   * - `memory_exceeded`: the worker went over its memory budget (resident memory, killed by
   *   the pool's watch) or V8's heap limit (Deno ended itself "out of memory"). Every
   *   invocation on the worker gets it: which one held the memory cannot be told. It is
   *   answered as `FUNCTION_MEMORY_EXCEEDED`, and for jobs it is a crash (retryable, counted).
   */
  | { readonly kind: 'crashed'; readonly message: string; readonly reason?: CrashReason }

export type FunctionFailureKind = FunctionFailure['kind']

/** Why a worker ended, when the platform knows (see `crashed` above). */
export type CrashReason = 'worker_replaced_for_timeout_of_another_invocation' | 'memory_exceeded'

/** What `invoke` resolves to; it never rejects. */
export type FunctionResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: FunctionFailure }

/** The HTTP status, code and generic message of each failure kind other than `service`. */
const GENERIC = {
  import: { status: 500, code: 'FUNCTION_IMPORT_FAILED', message: 'The Function could not be loaded' },
  invalid_return: { status: 500, code: 'FUNCTION_INVALID_RETURN', message: 'The Function returned a value that is not JSON' },
  unknown: { status: 500, code: 'FUNCTION_FAILED', message: 'The Function failed' },
  timeout: { status: 504, code: 'FUNCTION_TIMEOUT', message: 'The Function did not finish in time' },
  crashed: { status: 502, code: 'FUNCTION_CRASHED', message: 'The Function stopped unexpectedly' },
} as const

/** A `crashed` failure whose worker went over its memory budget: a 502 like any crash, with its own code. */
const MEMORY_EXCEEDED = { status: 502, code: 'FUNCTION_MEMORY_EXCEEDED', message: 'The Function went over its memory limit' } as const

export interface FailureResponse {
  readonly status: number
  readonly body: { readonly error: { readonly code: string; readonly message: string; readonly details?: unknown } }
}

/**
 * Whether the failure spent none of the invocation's own attempt: its worker was killed for
 * another invocation's timeout (a bystander), or it waited for a free worker until its
 * timeout and never started. Workers that count attempts (jobs, event deliveries, inbound
 * mail) give such an attempt back uncounted: one Function must not spend, or dead-letter,
 * its neighbours' attempts (spec 2.5: the timeout is per consumer attempt).
 */
export function attemptNotSpent(failure: FunctionFailure): boolean {
  return (failure.kind === 'crashed' && failure.reason === 'worker_replaced_for_timeout_of_another_invocation')
    || (failure.kind === 'timeout' && failure.reason === 'not_started')
}

/**
 * The HTTP answer for a failed invocation. In production only typed errors keep their
 * message and details; in development every failure carries its message (and stack).
 *
 * @example
 * const result = await pool.invoke({ entrypoint, input, meta })
 * if (!result.ok) { const { status, body } = failureResponse(result.error, { environment }); return c.json(body, status) }
 */
export function failureResponse(failure: FunctionFailure, options: { environment: 'production' | 'development' }): FailureResponse {
  if (failure.kind === 'service') {
    const problem = serviceErrorProblem(failure)
    // The pool already turns these into `unknown`; a failure built elsewhere gets the same treatment.
    if (problem !== null) return failureResponse({ kind: 'unknown', message: `a ServiceError that is not a valid error response: ${problem}` }, options)
    const error = { code: failure.code, message: failure.message }
    return { status: failure.status, body: { error: failure.details === undefined ? error : { ...error, details: failure.details } } }
  }
  const generic = failure.kind === 'crashed' && failure.reason === 'memory_exceeded' ? MEMORY_EXCEEDED : GENERIC[failure.kind]
  if (options.environment === 'production') return { status: generic.status, body: { error: { code: generic.code, message: generic.message } } }
  const stack = 'stack' in failure ? failure.stack : undefined
  const error = { code: generic.code, message: `${generic.message}: ${failure.message}` }
  return { status: generic.status, body: { error: stack === undefined ? error : { ...error, details: { stack } } } }
}

/**
 * The failure with every secret value redacted from its message, stack and details (the
 * code is left alone: it is a fixed identifier). The host applies it before a failure
 * leaves the runtime, so no caller renders or logs an unredacted one.
 *
 * @example
 * if (!result.ok) result = { ok: false, error: redactFailure(result.error, redactor) }
 */
export function redactFailure(failure: FunctionFailure, redactor: Redactor): FunctionFailure {
  if (redactor.empty) return failure
  if (failure.kind === 'service') {
    const message = redactor.text(failure.message)
    return failure.details === undefined ? { ...failure, message } : { ...failure, message, details: redactor.value(failure.details) }
  }
  const message = redactor.text(failure.message)
  if (failure.kind === 'timeout' || failure.kind === 'crashed' || failure.stack === undefined) return { ...failure, message }
  return { ...failure, message, stack: redactor.text(failure.stack) }
}
