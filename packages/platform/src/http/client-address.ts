/**
 * The client's network address, for per-client rate limits: the socket's peer, or the last
 * X-Forwarded-For entry when the platform runs behind a proxy it trusts (SERVICE_TRUST_PROXY).
 * The last entry, because proxies append (nginx's $proxy_add_x_forwarded_for, load
 * balancers): what the client sent comes first and could be anything, while the entry the
 * trusted proxy added, the address it saw, comes last.
 * In-process requests (tests) have no socket and share the address "unknown".
 */
import type { Context, MiddlewareHandler } from 'hono'
import { getConnInfo } from '@hono/node-server/conninfo'
import type { Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { createRateLimiter, rateLimited, type RateRule } from '../db/rate-limit.ts'

export function clientAddress(c: Context, trustProxy = false): string {
  return addressOf(c.req.raw.headers, () => getConnInfo(c).remote.address, trustProxy)
}

/**
 * The same for a request outside Hono (a WebSocket handshake): its headers and a reader of the
 * socket's peer address.
 */
export function addressOf(headers: Headers, peer: () => string | undefined, trustProxy = false): string {
  if (trustProxy) {
    const forwarded = headers.get('x-forwarded-for')?.split(',').at(-1)?.trim()
    if (forwarded) return forwarded
  }
  try {
    return peer() ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

/** Middleware: at most `rule.limit` requests per client address per window (429 beyond). */
export function limitPerClient(deps: { db: Queryable; clock: Clock; trustProxy?: boolean }, rule: RateRule): MiddlewareHandler {
  const limiter = createRateLimiter(deps)
  return async (c, next) => {
    const result = await limiter.hit(rule, clientAddress(c, deps.trustProxy ?? false))
    if (!result.allowed) throw rateLimited(result.retryAfterSeconds)
    await next()
  }
}
