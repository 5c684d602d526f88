/**
 * The caller's company as its administrators manage it, for the owner API
 * (`/v1/organisation…`) and the dashboard alike: its members with their organisation roles,
 * the invitations still open, and inviting someone (which emails them the link). Members and
 * invitations are shown to confirmed administrators only; anyone else gets FORBIDDEN.
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { normaliseEmail, type User } from '../accounts/users.ts'
import { isOrganisationAdmin } from '../access/organisation-admin.ts'
import type { Mail } from '../sign-in/routes.ts'
import { invite } from './companies.ts'

/** Companies are small; the lists are bounded all the same. */
const MAX_LISTED = 1000

function administeredOrganisation(user: User): string {
  if (user.organisationId === null || !isOrganisationAdmin(user, user.organisationId)) {
    throw new ServiceError('FORBIDDEN', 'only a confirmed administrator of the company sees its members and invitations')
  }
  return user.organisationId
}

export interface OrganisationMember {
  userId: string
  email: string
  displayName: string | null
  role: 'admin' | 'member'
  confirmed: boolean
}

/**
 * The caller's company and its members, administrators first, then by address.
 *
 * @example
 * const { organisation, members } = await organisationMembers(db, { user })
 */
export async function organisationMembers(db: Db, input: { user: User }) {
  const organisationId = administeredOrganisation(input.user)
  const [organisation] = await db.query<{ id: string; name: string }>('select id, name from platform.organisations where id = $1', [organisationId])
  const rows = await db.query<{ id: string; email: string; display_name: string | null; organisation_role: 'admin' | 'member'; email_confirmed_at: Date | null }>(
    `select id, email, display_name, organisation_role, email_confirmed_at from platform.users
      where organisation_id = $1 order by organisation_role = 'admin' desc, email limit ${MAX_LISTED}`, [organisationId])
  const members: OrganisationMember[] = rows.map((row) => ({
    userId: row.id, email: row.email, displayName: row.display_name, role: row.organisation_role, confirmed: row.email_confirmed_at !== null,
  }))
  return { organisation: { id: organisation!.id, name: organisation!.name }, members }
}

export interface OpenInvitation {
  id: string
  email: string
  invitedBy: string | null
  createdAt: string
  expiresAt: string
}

/**
 * The company's invitations not yet accepted and not expired, newest first.
 *
 * @example
 * const invitations = await openInvitations(db, clock, { user })
 */
export async function openInvitations(db: Db, clock: Clock, input: { user: User }): Promise<OpenInvitation[]> {
  const organisationId = administeredOrganisation(input.user)
  const rows = await db.query<{ id: string; email: string; invited_by: string | null; created_at: Date; expires_at: Date }>(
    `select i.id, i.email, u.email as invited_by, i.created_at, i.expires_at
       from platform.invitations i left join platform.users u on u.id = i.invited_by
      where i.organisation_id = $1 and i.accepted_at is null and i.expires_at > $2
      order by i.created_at desc, i.id limit ${MAX_LISTED}`, [organisationId, clock.now()])
  return rows.map((row) => ({
    id: row.id, email: row.email, invitedBy: row.invited_by, createdAt: row.created_at.toISOString(), expiresAt: row.expires_at.toISOString(),
  }))
}

/**
 * Invites `email` into the caller's company (a confirmed administrator) and emails the link,
 * valid 7 days.
 *
 * @example
 * const invitation = await inviteToOrganisation(deps, { user, email: 'ana@acme.test' }) // { id, email, expiresAt }
 */
export async function inviteToOrganisation(
  deps: { db: Db; clock: Clock; mailer: Mail; urls: HostUrls }, input: { user: User; email: unknown },
): Promise<{ id: string; email: string; expiresAt: string }> {
  const email = normaliseEmail(input.email)
  const { invitation, key } = await invite(deps.db, deps.clock, input.user, email)
  const link = `${deps.urls.auth}/invitations/${invitation.id}?k=${key}`
  await deps.mailer.send({
    to: email,
    subject: `Join ${invitation.organisationName}`,
    text: `${input.user.email} invites you to join ${invitation.organisationName}. Open this link to accept (valid 7 days):\n\n${link}`,
  })
  return { id: invitation.id, email, expiresAt: invitation.expiresAt.toISOString() }
}
