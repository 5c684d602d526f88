/** Owner API for access to private apps: grant, list, revoke (mounted under /v1/apps). */
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { getOwnedApp } from '../../apps/apps.ts'
import type { OwnerEnv } from '../accounts/owner-auth.ts'
import { readObject } from '../../http/json.ts'
import { grantAccess, listGrants, revokeAccess } from './grants.ts'
import { findUserByEmail, normaliseEmail } from '../accounts/users.ts'

export function grantRoutes(deps: { db: Db }) {
  const routes = new Hono<OwnerEnv>()
  routes.get('/:appId/grants', async (c) => {
    const app = await getOwnedApp(deps.db, c.var.user, c.req.param('appId'))
    const grants = await listGrants(deps.db, app)
    return c.json({ grants: grants.map((g) => ({ userId: g.user_id, email: g.email, createdAt: g.created_at.toISOString() })) })
  })
  routes.post('/:appId/grants', async (c) => {
    if (!c.var.user.emailConfirmedAt) {
      throw new ServiceError('CONFIRMATION_REQUIRED', 'confirm your email address before sharing apps')
    }
    const app = await getOwnedApp(deps.db, c.var.user, c.req.param('appId'))
    const email = normaliseEmail((await readObject(c)).email)
    const grantee = await findUserByEmail(deps.db, email)
    if (!grantee) throw new ServiceError('NOT_FOUND', `no account exists for ${email}; ask them to sign in once first`)
    await grantAccess(deps.db, app, grantee, c.var.user)
    return c.json({ grant: { userId: grantee.id, email: grantee.email } }, 201)
  })
  routes.delete('/:appId/grants/:userId', async (c) => {
    const app = await getOwnedApp(deps.db, c.var.user, c.req.param('appId'))
    const userId = c.req.param('userId')
    if (!/^[0-9a-f-]{36}$/i.test(userId) || !(await revokeAccess(deps.db, app, userId))) {
      throw new ServiceError('NOT_FOUND', 'no such grant')
    }
    return c.body(null, 204)
  })
  return routes
}
