/**
 * Access tokens: HS256 JWTs (jose) for one app, signed with a key derived from the master
 * key. They carry the user, the app (audience) and the app session (`sid`), which is checked
 * on every request so a signed-out session's token stops working at once.
 */
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose'
import type { Clock } from '../../lib/clock.ts'
import { sha256 } from '../../lib/crypto.ts'

export interface AccessClaims {
  sub: string
  role: 'authenticated'
  aud: string
  sid: string
  email?: string
}

const ISSUER = 'service-platform'

export async function mintAccessToken(
  key: Uint8Array,
  clock: Clock,
  claims: { userId: string; appId: string; appSessionId: string; email: string; expiresAt: Date },
): Promise<string> {
  const now = Math.floor(clock.now().getTime() / 1000)
  return new SignJWT({ role: 'authenticated', sid: claims.appSessionId, email: claims.email })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setSubject(claims.userId)
    .setAudience(claims.appId)
    .setIssuedAt(now)
    .setExpirationTime(Math.floor(claims.expiresAt.getTime() / 1000))
    .sign(key)
}

/** The claims of a valid token for this app, or null (bad signature, other app, expired). */
export async function verifyAccessToken(key: Uint8Array, clock: Clock, token: string, appId: string): Promise<AccessClaims | null> {
  try {
    const { payload } = await jwtVerify(token, key, {
      issuer: ISSUER,
      audience: appId,
      algorithms: ['HS256'],
      currentDate: clock.now(),
    })
    if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string') return null
    return payload as unknown as AccessClaims
  } catch (error) {
    if (error instanceof joseErrors.JOSEError) return null
    throw error
  }
}

/**
 * `verifyAccessToken` with a memory of tokens already verified, as PostgREST 12 caches JWTs:
 * a token that verified once is accepted again without the HMAC until its `exp` (checked
 * against the clock each time), for the same app only. Failures are not remembered. Whether
 * the token's app session is still active is not part of this; the edge checks that on every
 * request.
 *
 * @example
 *   const verify = createAccessTokenVerifier(jwtKey, clock)
 *   const claims = await verify(token, app.id)
 */
export function createAccessTokenVerifier(key: Uint8Array, clock: Clock, options: { maxEntries?: number } = {}) {
  const maxEntries = options.maxEntries ?? 10_000
  // Keyed by the token's SHA-256, never its value; beyond maxEntries the oldest is forgotten.
  const verified = new Map<string, { claims: AccessClaims; appId: string; expiresAtMs: number }>()
  return async (token: string, appId: string): Promise<AccessClaims | null> => {
    const hash = sha256(token).toString('base64')
    const hit = verified.get(hash)
    if (hit && hit.appId === appId && clock.now().getTime() < hit.expiresAtMs) return hit.claims
    const claims = await verifyAccessToken(key, clock, token, appId)
    const exp = (claims as { exp?: unknown } | null)?.exp
    if (claims && typeof exp === 'number') {
      verified.delete(hash)
      if (verified.size >= maxEntries) verified.delete(verified.keys().next().value!)
      verified.set(hash, { claims: Object.freeze(claims), appId, expiresAtMs: exp * 1000 })
    }
    return claims
  }
}
