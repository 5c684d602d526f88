/**
 * Request ids: every request the platform serves gets one, logged on its request line and
 * returned in the `x-request-id` response header. An incoming `x-request-id` (from a proxy
 * or a client correlating its own calls) is kept when it is well-formed, so one id follows a
 * request through the proxy's and the platform's logs; anything else is replaced.
 */

export const REQUEST_ID_HEADER = 'x-request-id'

/** 1 to 128 letters, digits and `. _ : -`: a UUID, a ULID or a proxy's trace id fits. */
const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/

const ids = new WeakMap<Request, string>()

/**
 * The request's id, assigned now: the incoming header when well-formed, else a new UUID.
 * Routes read it back with `requestIdOf(c.req.raw)`.
 *
 * @example
 * const id = assignRequestId(request) // "3f0c…" or the proxy's "req-42"
 */
export function assignRequestId(request: Request): string {
  const incoming = request.headers.get(REQUEST_ID_HEADER)
  const id = incoming !== null && WELL_FORMED.test(incoming) ? incoming : crypto.randomUUID()
  ids.set(request, id)
  return id
}

/** The id `assignRequestId` gave this request, if it went through the dispatcher. */
export function requestIdOf(request: Request): string | undefined {
  return ids.get(request)
}
