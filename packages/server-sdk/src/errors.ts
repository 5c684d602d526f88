// The errors a Function throws on purpose (spec 7.1): `errors.badRequest`, `unauthorized`,
// `forbidden`, `notFound`, `conflict` and `unavailable`, each `(code, message, details?)`.
//
// They build a `ServiceError` with a stable UPPER_SNAKE code the caller can switch on, the
// HTTP status the helper implies, a message a person can act on and optional details.
// The platform turns one into the caller's error response; a provider Function's typed
// 4xx errors reach the consuming app unchanged. Only `unavailable` (503) is retryable:
// queue consumers retry it and treat every other expected error as terminal.
//
// The platform may load its own copy of this module, so it recognises these errors with
// `isServiceError` (a brand property plus the fields), never with `instanceof`.

import { isPlainObject } from './plain-object.ts'

/** Extra facts about an error; a plain JSON object such as `{ connectUrl }` or `{ issues }`. */
export type ErrorDetails = { readonly [key: string]: unknown }

/** What `ServiceError#toJSON` returns and what crosses the isolate boundary. */
export interface ServiceErrorJson {
  readonly code: string
  readonly message: string
  readonly status: number
  readonly details?: ErrorDetails
}

export interface ServiceErrorOptions {
  /** An HTTP error status, 400 to 599. The helpers fix it; see `errors`. */
  readonly status: number
  readonly details?: ErrorDetails
  /** The underlying failure, kept for logs; never sent to the caller. */
  readonly cause?: unknown
}

const CODE_PATTERN = /^[A-Z][A-Z0-9_]*$/

/**
 * An expected failure with a stable code. Build one with the `errors` helpers; the
 * constructor is public for the platform's own SDK operations (such as integration calls).
 *
 * @example
 * throw new ServiceError('ITEM_NOT_FOUND', 'The task no longer exists', { status: 404 })
 */
export class ServiceError extends Error {
  override readonly name = 'ServiceError'
  /** Brand the platform checks, because `instanceof` fails across module copies and realms. */
  readonly __serviceError = true
  readonly code: string
  readonly status: number
  readonly details: ErrorDetails | undefined
  /** True only for 503 (`errors.unavailable`): the work may succeed if tried again. */
  readonly retryable: boolean

  constructor(code: string, message: string, options: ServiceErrorOptions) {
    assertValid(code, message, options)
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = options.status
    this.details = options.details
    this.retryable = options.status === 503
  }

  /** `{ code, message, status, details? }`; `details` is left out when there are none. */
  toJSON(): ServiceErrorJson {
    const json = { code: this.code, message: this.message, status: this.status }
    return this.details === undefined ? json : { ...json, details: this.details }
  }
}

/**
 * True for a `ServiceError` from this or any other copy of the SDK (another module
 * instance or realm): the brand, the name and the fields must all be present.
 *
 * @example
 * try { await run() } catch (error) { if (isServiceError(error) && error.retryable) retryLater() }
 */
export function isServiceError(value: unknown): value is ServiceError {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as Record<string, unknown>
  return (
    candidate['__serviceError'] === true &&
    candidate['name'] === 'ServiceError' &&
    typeof candidate['code'] === 'string' &&
    typeof candidate['message'] === 'string' &&
    typeof candidate['status'] === 'number'
  )
}

function make(status: number, code: string, message: string, details: ErrorDetails | undefined): ServiceError {
  return new ServiceError(code, message, details === undefined ? { status } : { status, details })
}

/**
 * The error helpers a handler throws. Each takes `(code, message, details?)`: an
 * UPPER_SNAKE code (`^[A-Z][A-Z0-9_]*$`), a non-empty message and an optional plain-object
 * `details`. A malformed call throws a TypeError (a bug in the Function, not an input
 * problem).
 *
 * @example
 * if (!user) throw errors.unauthorized('SIGN_IN_REQUIRED', 'Sign in to create tasks')
 * throw errors.unavailable('UPSTREAM_DOWN', 'The shipping service is not answering; try again')
 */
export const errors = Object.freeze({
  /** 400: the input is wrong in a way the schema could not express. */
  badRequest(code: string, message: string, details?: ErrorDetails): ServiceError {
    return make(400, code, message, details)
  },
  /** 401: a signed-in caller (or, for providers, valid external credentials) is needed. */
  unauthorized(code: string, message: string, details?: ErrorDetails): ServiceError {
    return make(401, code, message, details)
  },
  /** 403: the caller is known but may not do this. */
  forbidden(code: string, message: string, details?: ErrorDetails): ServiceError {
    return make(403, code, message, details)
  },
  /** 404: the thing asked for does not exist (or is not visible to the caller). */
  notFound(code: string, message: string, details?: ErrorDetails): ServiceError {
    return make(404, code, message, details)
  },
  /** 409: the request clashes with the current state. */
  conflict(code: string, message: string, details?: ErrorDetails): ServiceError {
    return make(409, code, message, details)
  },
  /** 503, retryable: a temporary failure; queue consumers are retried. */
  unavailable(code: string, message: string, details?: ErrorDetails): ServiceError {
    return make(503, code, message, details)
  },
})

function assertValid(code: unknown, message: unknown, options: unknown): void {
  if (typeof code !== 'string' || !CODE_PATTERN.test(code)) {
    throw new TypeError(`a ServiceError code is UPPER_SNAKE_CASE such as ITEM_NOT_FOUND, got ${show(code)}`)
  }
  if (typeof message !== 'string' || message.trim() === '') {
    throw new TypeError(`the message of ServiceError ${code} must be a non-empty string, got ${show(message)}`)
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`ServiceError ${code} needs options with a status`)
  }
  const { status, details } = options as Record<string, unknown>
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) {
    throw new TypeError(`the status of ServiceError ${code} must be an HTTP error status (400 to 599), got ${show(status)}`)
  }
  if (details !== undefined && !isPlainObject(details)) {
    throw new TypeError(`the details of ServiceError ${code} must be a plain object such as { field: 'title' }, got ${show(details)}`)
  }
}


function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'function') return 'a function'
  if (value === null || typeof value !== 'object') return String(value)
  return 'an object'
}
