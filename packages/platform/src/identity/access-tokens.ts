/**
 * Access tokens: HS256 JWTs (jose) for one app, signed with a key derived from the master
 * key. They carry the user, the app (audience) and the app session (`sid`), which is checked
 * on every request so a signed-out session's token stops working at once.
 */
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose'
import type { Clock } from '../lib/clock.ts'

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
