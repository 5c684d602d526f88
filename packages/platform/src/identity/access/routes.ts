/**
 * Owner API for access (mounted under /v1/apps): the app's members and their roles, the
 * grants API (its alias for Use), and a provider app's integration audiences. Callable by
 * the owner and by people holding Administer on the app; the audiences also by the
 * integration's Administer audience (mayChangeIntegrationAudience).
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import { findAppByIdOrSlug, type App } from '../../apps/apps.ts'
import type { OwnerEnv } from '../accounts/owner-auth.ts'
import { readObject } from '../../http/json.ts'
import { grantAccess, listGrants, revokeAccess } from './grants.ts'
import { findUserByEmail, findUserById, normaliseEmail, type User } from '../accounts/users.ts'
import { appForRole, findMember, listMembers, memberView, removeMember, roleFromBody, setMemberRole } from './roles.ts'
import { audienceView, mayChangeIntegrationAudience, readIntegrationAudience, setIntegrationAudience } from './integration-audience.ts'

function requireConfirmed(user: User): void {
  if (!user.emailConfirmedAt) {
    throw new ServiceError('CONFIRMATION_REQUIRED', 'confirm your email address before sharing apps')
  }
}

/** The person a path segment names: a user id or an email address. */
async function personNamed(db: Db, value: string): Promise<User> {
  const person = isUuid(value) ? await findUserById(db, value) : await findUserByEmail(db, normaliseEmail(value))
  if (!person) throw new ServiceError('NOT_FOUND', `no account exists for ${value}; ask them to sign in once first`)
  return person
}

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
    requireConfirmed(c.var.user)
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

  routes.get('/:appId/members', async (c) => {
    const app = await administered(c)
    const owner = await findUserById(deps.db, app.ownerId)
    const members = await listMembers(deps.db, app)
    return c.json({
      owner: { userId: app.ownerId, email: owner?.email ?? null, role: 'administer', roles: ['use', 'edit', 'administer'] },
      members: members.map(memberView),
    })
  })
  routes.put('/:appId/members/:member', async (c) => {
    requireConfirmed(c.var.user)
    const app = await administered(c)
    const role = roleFromBody(await readObject(c))
    const person = await personNamed(deps.db, c.req.param('member'))
    const { created } = await setMemberRole(deps.db, { app, member: person, role, by: c.var.user })
    const member = (await findMember(deps.db, { app, userId: person.id }))!
    return c.json({ member: memberView(member) }, created ? 201 : 200)
  })
  routes.delete('/:appId/members/:member', async (c) => {
    const app = await administered(c)
    const value = c.req.param('member')
    const person = isUuid(value) ? { id: value } : await findUserByEmail(deps.db, normaliseEmail(value))
    if (!person || !(await removeMember(deps.db, { app, userId: person.id }))) {
      throw new ServiceError('NOT_FOUND', `${value} holds no role on this app`)
    }
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
    requireConfirmed(c.var.user)
    const app = await audienceManaged(c)
    const body = await readObject(c)
    await deps.db.transaction((tx) => setIntegrationAudience(tx, { app, by: c.var.user, body }))
    return c.json({ audience: audienceView(await readIntegrationAudience(deps.db, app)) })
  })
  return routes
}
