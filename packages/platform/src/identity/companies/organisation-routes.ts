/** Owner API for the caller's company: invitations (mounted at /v1/organisation). */
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { readObject } from '../../http/json.ts'
import { requireOwner, type OwnerEnv } from '../accounts/owner-auth.ts'
import type { Mail } from '../sign-in/routes.ts'
import { invite } from './companies.ts'
import { normaliseEmail } from '../accounts/users.ts'

export function organisationRoutes(deps: { db: Db; clock: Clock; mailer: Mail; urls: HostUrls }) {
  const routes = new Hono<OwnerEnv>()
  routes.use('*', requireOwner(deps))
  routes.post('/invitations', async (c) => {
    const email = normaliseEmail((await readObject(c)).email)
    const { invitation, key } = await invite(deps.db, deps.clock, c.var.user, email)
    const link = `${deps.urls.auth}/invitations/${invitation.id}?k=${key}`
    await deps.mailer.send({
      to: email,
      subject: `Join ${invitation.organisationName}`,
      text: `${c.var.user.email} invites you to join ${invitation.organisationName}. Open this link to accept (valid 7 days):\n\n${link}`,
    })
    return c.json({ invitation: { id: invitation.id, email, expiresAt: invitation.expiresAt.toISOString() } }, 201)
  })
  return routes
}
