/**
 * One Web Push request (RFC 8030) and what its answer means. web-push builds it
 * (`generateRequestDetails`: the payload encrypted as aes128gcm per RFC 8291, the VAPID
 * `Authorization: vapid t=<JWT>, k=<public key>` of RFC 8292, TTL, Urgency, Topic); the POST
 * is ours, with `fetch`, so it has a timeout, never follows a redirect and reaches the
 * loopback endpoints of tests over http (web-push's own sender speaks https only).
 */
import webpush from 'web-push'
import type { VapidKeys } from './vapid-keys.ts'

/** How long the push service holds a message for an offline browser: one day. */
export const PUSH_TTL_SECONDS = 24 * 60 * 60
/** Longest wait for a push service's answer. */
export const PUSH_REQUEST_TIMEOUT_MS = 30_000
/** The longest Retry-After of a 429 or 503 honoured (longer ones wait this long). */
const MAX_RETRY_AFTER_SECONDS = 60 * 60

export interface PushTarget {
  readonly endpoint: string
  readonly p256dh: string
  readonly auth: string
}

export type PushOutcome =
  /** The push service took the message (2xx, usually 201). */
  | { readonly kind: 'delivered'; readonly status: number }
  /** 404 or 410: the subscription expired or was unsubscribed; remove it. */
  | { readonly kind: 'gone'; readonly status: number }
  /** 429, 5xx, a timeout or a network failure: try again later (`retryAfterSeconds` when the service said). */
  | { readonly kind: 'retry'; readonly status?: number; readonly message: string; readonly retryAfterSeconds?: number }
  /** Any other answer (400, 401, 403, 413, a redirect): the same message will not succeed. */
  | { readonly kind: 'rejected'; readonly status: number; readonly message: string }

/** A Topic header (RFC 8030 5.4) from a notification's tag, when the tag is one (at most 32 base64url characters). */
export function topicOf(tag: unknown): string | undefined {
  return typeof tag === 'string' && /^[A-Za-z0-9_-]{1,32}$/.test(tag) ? tag : undefined
}

function retryAfter(header: string | null, now: number): number | undefined {
  if (header === null) return undefined
  const seconds = /^\d+$/.test(header.trim()) ? Number(header.trim()) : (Date.parse(header) - now) / 1000
  if (!Number.isFinite(seconds) || seconds < 0) return undefined
  return Math.min(Math.ceil(seconds), MAX_RETRY_AFTER_SECONDS)
}

/** At most `limit` bytes of the answer's body as text; the rest is not read (an endpoint is anyone's server). */
async function firstBytes(response: Response, limit: number): Promise<string> {
  if (response.body === null) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    while (size < limit) {
      const step = await reader.read()
      if (step.done) break
      chunks.push(step.value)
      size += step.value.byteLength
    }
  } catch {
    // A body that breaks off says nothing more.
  } finally {
    reader.cancel().catch(() => {})
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, limit))
}

/**
 * Encrypts `payload` for `target`, signs for its push service and POSTs it.
 *
 * @example
 * const outcome = await sendPush({ target, payload: JSON.stringify(notification), vapid: await keys.keys(), subject: 'mailto:ops@example.com' })
 */
export async function sendPush(input: {
  target: PushTarget
  payload: string
  vapid: VapidKeys
  subject: string
  topic?: string
  timeoutMs?: number
}): Promise<PushOutcome> {
  const details = webpush.generateRequestDetails(
    { endpoint: input.target.endpoint, keys: { p256dh: input.target.p256dh, auth: input.target.auth } },
    input.payload,
    {
      vapidDetails: { subject: input.subject, publicKey: input.vapid.publicKey, privateKey: input.vapid.privateKey },
      contentEncoding: 'aes128gcm',
      TTL: PUSH_TTL_SECONDS,
      urgency: 'normal',
      ...(input.topic === undefined ? {} : { topic: input.topic }),
    },
  )
  const headers = new Headers()
  for (const [name, value] of Object.entries(details.headers)) {
    // fetch sets the length from the body itself.
    if (name.toLowerCase() !== 'content-length') headers.set(name, String(value))
  }
  let response: Response
  try {
    response = await fetch(details.endpoint, {
      method: 'POST',
      headers,
      body: details.body === null ? null : new Uint8Array(details.body),
      redirect: 'manual',
      signal: AbortSignal.timeout(input.timeoutMs ?? PUSH_REQUEST_TIMEOUT_MS),
    })
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
    return { kind: 'retry', message: timedOut ? 'the push service did not answer in time' : `the push service could not be reached: ${error instanceof Error ? error.message : String(error)}` }
  }
  const text = await firstBytes(response, 1024)
  const status = response.status
  const said = text.slice(0, 200).replace(/\s+/g, ' ').trim()
  if (status >= 200 && status < 300) return { kind: 'delivered', status }
  if (status === 404 || status === 410) return { kind: 'gone', status }
  if (status === 429 || status >= 500) {
    const after = retryAfter(response.headers.get('retry-after'), Date.now())
    return { kind: 'retry', status, message: `the push service answered ${status}${said ? `: ${said}` : ''}`, ...(after === undefined ? {} : { retryAfterSeconds: after }) }
  }
  return { kind: 'rejected', status, message: `the push service refused the message (${status})${said ? `: ${said}` : ''}` }
}
