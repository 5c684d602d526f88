/**
 * Whose data an invocation reads and writes: the role, claims and write right a Function's
 * data calls (`ctx.data`, `ctx.data.search`) run with in its namespace, and when that
 * authorization ends (spec 5.5: a custom-domain session's within 60 seconds, never renewed).
 */
import { ServiceError } from '../lib/errors.ts'

/** Whose data an invocation reads and writes. */
export interface DataIdentity {
  readonly role: 'user' | 'system'
  /** `request.jwt.claims`: `{ sub, role, aud }` for a caller, `{ role: 'system', aud }` for a system Function. */
  readonly claims: Record<string, unknown>
  /** Writes need a signed-in user unless the Function is `system` (spec 5.5). */
  readonly canWrite: boolean
  /** When the authorization ends (epoch ms by the platform's clock); absent: with the invocation. */
  readonly expiresAt?: number
}

/**
 * Refuses a data call once the invocation's authorization has ended (never renewed).
 *
 * @example
 * checkDataAuthorization(meta.identity, clock.now()) // throws AUTH_EXPIRED past identity.expiresAt
 */
export function checkDataAuthorization(identity: DataIdentity, now: Date): void {
  if (identity.expiresAt === undefined || now.getTime() < identity.expiresAt) return
  throw new ServiceError('AUTH_EXPIRED',
    'this invocation\'s data authorization has expired (a custom-domain session keeps it for 60 seconds); ' +
    'do data work early, or return and let the browser call again', {
      details: { expiredAt: new Date(identity.expiresAt).toISOString() },
    })
}

