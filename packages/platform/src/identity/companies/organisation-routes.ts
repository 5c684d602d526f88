/**
 * Owner API for the caller's company (mounted at /v1/organisation): its members and open
 * invitations (`GET /members`, `GET /invitations`) and inviting someone (`POST /invitations`),
 * for its confirmed administrators.
 */
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { readObject } from '../../http/json.ts'
import { requireOwner, type OwnerEnv } from '../accounts/owner-auth.ts'
import type { Mail } from '../sign-in/routes.ts'
import { inviteToOrganisation, openInvitations, organisationMembers } from './organisation.ts'

export function organisationRoutes(deps: { db: Db; clock: Clock; mailer: Mail; urls: HostUrls }) {
  const routes = new Hono<OwnerEnv>()
  routes.use('*', requireOwner(deps))
  routes.get('/members', async (c) => c.json(await organisationMembers(deps.db, { user: c.var.user })))
  routes.get('/invitations', async (c) => c.json({ invitations: await openInvitations(deps.db, deps.clock, { user: c.var.user }) }))
  routes.post('/invitations', async (c) => {
    const invitation = await inviteToOrganisation(deps, { user: c.var.user, email: (await readObject(c)).email })
    return c.json({ invitation }, 201)
  })
  return routes
}
