/**
 * Control-plane identity routes: `GET /v1/me` for token holders, and the operator's
 * `POST /v1/operator/users`, which creates a confirmed user in a company and returns an
 * owner API token once. The operator key lives in the data directory (0600) or
 * SERVICE_OPERATOR_KEY and is compared in constant time.
 */
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import { safeEqual } from '../../lib/crypto.ts'
import { bearerToken, requireOwner, type OwnerEnv } from './owner-auth.ts'
import { readObject } from '../../http/json.ts'
import { issueOwnerToken } from './owner-tokens.ts'
import { createUser, ensureOrganisation, findUserByEmail, normaliseEmail, type User } from './users.ts'

export function userView(user: User) {
  return {
    id: user.id,
    email: user.email,
    displayName: user.displayName,
    organisationId: user.organisationId,
    organisationRole: user.organisationRole,
    isPlatformAdmin: user.isPlatformAdmin,
    emailConfirmed: user.emailConfirmedAt !== null,
  }
}

export function meRoutes(deps: { db: Db; clock: Clock }) {
  const routes = new Hono<OwnerEnv>()
  routes.use('*', requireOwner(deps))
  routes.get('/', (c) => c.json({ user: userView(c.var.user) }))
  return routes
}

export function operatorRoutes(deps: { db: Db; clock: Clock; operatorKey: string }) {
  const routes = new Hono()
  routes.use('*', async (c, next) => {
    const token = bearerToken(c.req.header('authorization'))
    if (!token || !safeEqual(token, deps.operatorKey)) {
      throw new ServiceError('UNAUTHENTICATED', 'operator calls need the operator key as a bearer token')
    }
    await next()
  })
  routes.post('/users', async (c) => {
    const body = await readObject(c)
    const email = normaliseEmail(body.email)
    const company = typeof body.company === 'string' ? body.company : ''
    const result = await deps.db.transaction(async (tx) => {
      const existing = await findUserByEmail(tx, email)
      if (existing && body.tokenForExisting !== true) {
        throw new ServiceError('USER_EXISTS', `an account for ${email} already exists`)
      }
      const organisation = existing ? null : await ensureOrganisation(tx, company)
      const user = existing ?? await createUser(tx, {
        email,
        organisationId: organisation!.id,
        organisationRole: body.admin === true || organisation!.created ? 'admin' : 'member',
        isPlatformAdmin: body.platformAdmin === true,
        confirmedAt: deps.clock.now(),
      })
      const token = await issueOwnerToken(tx, user.id, typeof body.tokenName === 'string' ? body.tokenName : 'operator')
      return { user, token }
    })
    return c.json({ user: userView(result.user), token: result.token.token, tokenId: result.token.id }, 201)
  })
  return routes
}
