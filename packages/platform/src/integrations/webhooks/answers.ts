/**
 * What the sender of a webhook is answered (spec 6.2), from the provider Function's outcome
 * or the receiver's own refusal. The Function's value is a 200 JSON body (a Function cannot
 * choose a status for a JSON value, docs/decisions.md); typed 401 and 403 pass through with
 * the provider's code, message and details; other typed 4xx become 400 with the same body;
 * everything else (typed 503, untyped throws, invalid results, crashes, timeouts, a result
 * over 1 MiB) is 503, so the sender retries, and says nothing about why.
 */
import { ServiceError, toErrorBody, type ErrorBody } from '../../lib/errors.ts'
import type { ProviderResult } from '../provider-invocation.ts'
import { MAX_WEBHOOK_BODY_BYTES } from './body.ts'

/** Longest JSON text of a webhook Function's value, like an operation's (spec 8: 1 MiB). */
export const MAX_WEBHOOK_RESULT_BYTES = 1024 * 1024

/** A response to the sender: a status and its JSON body. */
export interface SenderAnswer {
  readonly status: number
  readonly body: unknown
}

function refusal(error: ServiceError): SenderAnswer {
  return toErrorBody(error)
}

/** Every wrong or unusable URL: one status, one body, whatever was wrong. */
export const NOT_FOUND: SenderAnswer = refusal(new ServiceError('NOT_FOUND', 'there is no webhook at this address'))

export const METHOD_NOT_ALLOWED: SenderAnswer = refusal(new ServiceError('METHOD_NOT_ALLOWED', 'a webhook address takes POST only'))

export const TOO_LARGE: SenderAnswer = refusal(new ServiceError('BODY_TOO_LARGE',
  `a webhook body may be at most ${MAX_WEBHOOK_BODY_BYTES} bytes`, { details: { maxBytes: MAX_WEBHOOK_BODY_BYTES } }))

export const NOT_UTF8: SenderAnswer = refusal(new ServiceError('WEBHOOK_BODY_NOT_UTF8',
  'a webhook body must be UTF-8 text: it is given to the receiving Function as its exact text'))

/** The connection is Reconnect required: nothing runs until someone who manages it reconnects; the sender retries. */
export const RECONNECT_REQUIRED: SenderAnswer = refusal(new ServiceError('INTEGRATION_RECONNECT_REQUIRED',
  'this connection must be reconnected before it receives webhooks; try again later', { status: 503 }))

export const UNAVAILABLE: SenderAnswer = refusal(new ServiceError('INTEGRATION_PROVIDER_UNAVAILABLE',
  'the receiver is unavailable; try again later'))

/**
 * The answer for the webhook Function's outcome.
 *
 * @example
 * senderAnswer({ ok: true, value: { received: true } }) // { status: 200, body: { received: true } }
 * senderAnswer({ ok: false, kind: 'typed', error: { status: 404, code: 'ORDER_MISSING', message: 'no such order' } })
 * // { status: 400, body: { error: { code: 'ORDER_MISSING', message: 'no such order' } } }
 */
export function senderAnswer(result: ProviderResult): SenderAnswer {
  if (result.ok) {
    const value = result.value ?? null
    if (Buffer.byteLength(JSON.stringify(value)) > MAX_WEBHOOK_RESULT_BYTES) return UNAVAILABLE
    return { status: 200, body: value }
  }
  if (result.kind !== 'typed') return UNAVAILABLE
  const { status, code, message, details } = result.error
  if (status < 400 || status >= 500) return UNAVAILABLE
  const body: ErrorBody = { error: { code, message, ...(details === undefined ? {} : { details }) } }
  return { status: status === 401 || status === 403 ? status : 400, body }
}

/** Why the answer is what it is, for the platform's log line (never a value). */
export function outcomeOf(result: ProviderResult): string {
  if (result.ok) return 'value'
  if (result.kind === 'typed') return `typed ${result.error.status} ${result.error.code.slice(0, 64)}`
  return result.kind
}
