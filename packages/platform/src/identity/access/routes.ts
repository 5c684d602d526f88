/**
 * Owner API for access (mounted under /v1/apps): the app's members and their roles, the
 * grants API (its alias for Use), and a provider app's integration audiences. Callable by
 * the owner and by people holding Administer on the app; the audiences also by the
 * integration's Administer audience (mayChangeIntegrationAudience).
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { findAppByIdOrSlug, type App } from '../../apps/apps.ts'
import type { OwnerEnv } from '../accounts/owner-auth.ts'
import { readObject } from '../../http/json.ts'
import { grantAccess, listGrants, revokeAccess } from './grants.ts'
import { findUserByEmail, normaliseEmail } from '../accounts/users.ts'
import { appForRole } from './roles.ts'
import { appMembers, removeAppMember, requireConfirmedSharer, setAppMember } from './members.ts'
import { audienceView, mayChangeIntegrationAudience, readIntegrationAudience, setIntegrationAudience } from './integration-audience.ts'

export function grantRoutes(deps: { db: Db }) {
  const routes = new Hono<OwnerEnv>()
  const administered = (c: Context<OwnerEnv>): Promise<App> =>
    appForRole(deps.db, c.var.user, c.req.param('appId')!, 'administer')

  routes.get('/:appId/grants', async (c) => {
    const app = await administered(c)
    const grants = await listGrants(deps.db, app)
    return c.json({ grants: grants.map((g) => ({ userId: g.user_id, email: g.email, createdAt: g.created_at.toISOString() })) })
  })
  routes.post('/:appId/grants', async (c) => {
    requireConfirmedSharer(c.var.user)
    const app = await administered(c)
    const email = normaliseEmail((await readObject(c)).email)
    const grantee = await findUserByEmail(deps.db, email)
    if (!grantee) throw new ServiceError('NOT_FOUND', `no account exists for ${email}; ask them to sign in once first`)
    await grantAccess(deps.db, app, grantee, c.var.user)
    return c.json({ grant: { userId: grantee.id, email: grantee.email } }, 201)
  })
  routes.delete('/:appId/grants/:userId', async (c) => {
    const app = await administered(c)
    const userId = c.req.param('userId')
    if (!/^[0-9a-f-]{36}$/i.test(userId) || !(await revokeAccess(deps.db, app, userId))) {
      throw new ServiceError('NOT_FOUND', 'no such grant')
    }
    return c.body(null, 204)
  })

  routes.get('/:appId/members', async (c) => c.json(await appMembers(deps.db, { user: c.var.user, appId: c.req.param('appId') })))
  routes.put('/:appId/members/:member', async (c) => {
    const body = await readObject(c)
    const { member, created } = await setAppMember(deps.db, { user: c.var.user, appId: c.req.param('appId'), member: c.req.param('member'), body })
    return c.json({ member }, created ? 201 : 200)
  })
  routes.delete('/:appId/members/:member', async (c) => {
    await removeAppMember(deps.db, { user: c.var.user, appId: c.req.param('appId'), member: c.req.param('member') })
    return c.body(null, 204)
  })

  /** The app when the caller may change its integration's audiences; otherwise appForRole's answer (APP_NOT_FOUND, or FORBIDDEN for a lower role). */
  const audienceManaged = async (c: Context<OwnerEnv>): Promise<App> => {
    const app = await findAppByIdOrSlug(deps.db, c.req.param('appId')!)
    if (app && await mayChangeIntegrationAudience(deps.db, { user: c.var.user, app })) return app
    await administered(c)
    throw new ServiceError('FORBIDDEN', 'only the integration\'s administrators change its audiences')
  }

  routes.get('/:appId/integration-audience', async (c) => {
    const app = await audienceManaged(c)
    return c.json({ audience: audienceView(await readIntegrationAudience(deps.db, app)) })
  })
  routes.put('/:appId/integration-audience', async (c) => {
    requireConfirmedSharer(c.var.user)
    const app = await audienceManaged(c)
    const body = await readObject(c)
    await deps.db.transaction((tx) => setIntegrationAudience(tx, { app, by: c.var.user, body }))
    return c.json({ audience: audienceView(await readIntegrationAudience(deps.db, app)) })
  })
  return routes
}
