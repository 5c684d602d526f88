/**
 * Fixed-window rate limiting with the counters in the database, so several platform
 * processes over one PostgreSQL share one count. Sign-in and password attempts are limited
 * per address and per client; each limit is a `RateRule` (name, limit, window) from config.
 * A hit is one atomic upsert, so concurrent attempts can never both take the last slot.
 * Keys (emails, IP addresses) are stored only as SHA-256 hashes.
 */
import type { Queryable } from './db.ts'
import type { Clock } from '../lib/clock.ts'
import { sha256Hex } from '../lib/crypto.ts'
import { ServiceError } from '../lib/errors.ts'

/** A limit: at most `limit` hits per key in each fixed window of `windowSeconds`. */
export interface RateRule {
  /** Names the counter, e.g. 'sign-in:address'; keys of different rules never share one. */
  name: string
  limit: number
  windowSeconds: number
}

export interface RateLimitResult {
  /** True while this hit is within the limit (hits <= limit). */
  allowed: boolean
  /** Hits left in the current window after this one. */
  remaining: number
  /** Seconds until the window ends (at least 1) when not allowed; 0 when allowed. */
  retryAfterSeconds: number
}

export interface RateLimiter {
  /** Counts one attempt for `key` under `rule` and says whether it is allowed. */
  hit(rule: RateRule, key: string): Promise<RateLimitResult>
  /** Deletes windows that started more than a day ago; returns how many rows went. */
  purgeExpired(): Promise<number>
}

const DAY_SECONDS = 86_400

/**
 * Builds the limiter. Windows are aligned to the epoch (a 60-second window runs from :00 to
 * :59), so every process computes the same window for the same instant.
 *
 * @example
 * const limiter = createRateLimiter({ db, clock })
 * const rule = { name: 'sign-in:address', limit: 10, windowSeconds: 900 }
 * const result = await limiter.hit(rule, email.toLowerCase())
 * if (!result.allowed) throw rateLimited(result.retryAfterSeconds)
 */
export function createRateLimiter(deps: { db: Queryable; clock: Clock }): RateLimiter {
  const { db, clock } = deps
  return {
    async hit(rule, key) {
      checkRule(rule)
      const windowMs = rule.windowSeconds * 1000
      const nowMs = clock.now().getTime()
      const windowStartMs = Math.floor(nowMs / windowMs) * windowMs
      const bucket = `${rule.name}:${sha256Hex(key)}`
      // One statement: concurrent hits on the same row serialise on its lock, and each
      // sees its own count, so exactly `limit` of them are allowed.
      const rows = await db.query<{ hits: number }>(
        `insert into platform.rate_limits (bucket, window_start, hits)
         values ($1, $2::timestamptz, 1)
         on conflict (bucket, window_start)
         do update set hits = platform.rate_limits.hits + 1
         returning hits`,
        [bucket, new Date(windowStartMs)],
      )
      const hits = Number(rows[0]?.hits)
      if (!Number.isFinite(hits)) throw new Error('rate limit upsert returned no count')
      const allowed = hits <= rule.limit
      return {
        allowed,
        remaining: Math.max(0, rule.limit - hits),
        retryAfterSeconds: allowed
          ? 0
          : Math.max(1, Math.ceil((windowStartMs + windowMs - nowMs) / 1000)),
      }
    },

    async purgeExpired() {
      const cutoff = new Date(clock.now().getTime() - DAY_SECONDS * 1000)
      const rows = await db.query<{ purged: number }>(
        `with purged as (
           delete from platform.rate_limits where window_start < $1::timestamptz returning 1
         )
         select count(*)::integer as purged from purged`,
        [cutoff],
      )
      return rows[0]?.purged ?? 0
    },
  }
}

/**
 * Rules come from configuration; a wrong one is a programming or config error, not a
 * caller's. Windows are capped at a day because purgeExpired removes windows a day after
 * they start, which must be after they end.
 */
function checkRule(rule: RateRule): void {
  if (rule.name === '') throw new RangeError('a rate rule needs a name')
  if (!Number.isInteger(rule.limit) || rule.limit < 1) {
    throw new RangeError(`rate rule ${rule.name}: limit must be a positive integer`)
  }
  if (
    !Number.isInteger(rule.windowSeconds) ||
    rule.windowSeconds < 1 ||
    rule.windowSeconds > DAY_SECONDS
  ) {
    throw new RangeError(`rate rule ${rule.name}: windowSeconds must be an integer from 1 to ${DAY_SECONDS}`)
  }
}

/**
 * The error for an attempt over its limit: RATE_LIMITED (HTTP 429), with the seconds to wait
 * in `details.retryAfterSeconds` for the route to put in a Retry-After header.
 *
 * @example
 * const result = await limiter.hit(rule, key)
 * if (!result.allowed) throw rateLimited(result.retryAfterSeconds)
 */
export function rateLimited(retryAfterSeconds: number): ServiceError {
  const unit = retryAfterSeconds === 1 ? 'second' : 'seconds'
  return new ServiceError('RATE_LIMITED', `Too many attempts; try again in ${retryAfterSeconds} ${unit}`, {
    details: { retryAfterSeconds },
  })
}
