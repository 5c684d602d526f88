/**
 * Control-plane authentication: `Authorization: Bearer svc_owner_…`. App access tokens
 * (`svc_app_…`) act at runtime only and are refused here whatever they are worth.
 */
import type { MiddlewareHandler } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import { verifyOwnerToken } from './owner-tokens.ts'
import type { User } from './users.ts'

export type OwnerEnv = { Variables: { user: User } }

export function bearerToken(header: string | undefined): string | null {
  const match = /^Bearer ([^\s]+)$/i.exec(header ?? '')
  return match ? match[1]! : null
}

export function requireOwner(deps: { db: Db; clock: Clock }): MiddlewareHandler<OwnerEnv> {
  return async (c, next) => {
    const token = bearerToken(c.req.header('authorization'))
    if (!token) {
      throw new ServiceError('UNAUTHENTICATED', 'send an owner API token as "Authorization: Bearer svc_owner_…"')
    }
    if (token.startsWith('svc_app_')) {
      throw new ServiceError('APP_TOKEN_NOT_ALLOWED',
        'app access tokens work on runtime APIs only; the control plane needs an owner API token')
    }
    const verified = await verifyOwnerToken(deps.db, deps.clock, token)
    if (!verified) throw new ServiceError('UNAUTHENTICATED', 'the owner API token is unknown or revoked')
    c.set('user', verified.user)
    await next()
  }
}
