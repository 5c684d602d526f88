/**
 * Companies (organisations): each account belongs to exactly one. A person without one sets
 * it up (becoming its administrator) or accepts an invitation from an administrator.
 * Nothing else ever assigns or moves an account: not sign-in, not an email change.
 */
import { first, type Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { APP_CHANGED } from '../../apps/apps.ts'
import { announceChange } from '../../db/notified-cache.ts'
import { ServiceError } from '../../lib/errors.ts'
import { LIFETIMES } from '../lifetimes.ts'
import { browserSecret, matchesHash } from '../browser-secrets.ts'
import type { User } from '../accounts/users.ts'

/** Creates a company with the person as its administrator (announced on APP_CHANGED: the caller drops local caches after commit). */
export async function setUpCompany(db: Queryable, user: User, name: string): Promise<{ id: string; name: string }> {
  const trimmed = name.trim()
  if (trimmed.length < 1 || trimmed.length > 120) {
    throw new ServiceError('VALIDATION_FAILED', 'a company name has 1 to 120 characters', { details: { field: 'name' } })
  }
  const [org] = await db.query<{ id: string; name: string }>(
    'insert into platform.organisations (name) values ($1) returning id, name', [trimmed])
  const updated = await db.query(
    `update platform.users set organisation_id = $2, organisation_role = 'admin' where id = $1 and organisation_id is null returning id`,
    [user.id, org!.id])
  if (updated.length === 0) throw new ServiceError('CONFLICT', 'your account already belongs to a company')
  // Personal apps made before the company existed join it.
  await db.query('update platform.apps set organisation_id = $2 where owner_id = $1 and organisation_id is null', [user.id, org!.id])
  await announceChange(db, APP_CHANGED, `owner:${user.id}`)
  return org!
}

export interface Invitation {
  id: string
  organisationId: string
  organisationName: string
  email: string
  expiresAt: Date
  acceptedAt: Date | null
}

/** An administrator invites an address into their company; returns the invitation and its link key. */
export async function invite(db: Queryable, clock: Clock, admin: User, email: string): Promise<{ invitation: Invitation; key: string }> {
  if (!admin.organisationId || admin.organisationRole !== 'admin' || !admin.emailConfirmedAt) {
    throw new ServiceError('FORBIDDEN', 'only a confirmed administrator of a company can invite people')
  }
  const key = browserSecret()
  const now = clock.now()
  const expiresAt = new Date(now.getTime() + 7 * 24 * 60 * 60 * 1000)
  const [row] = await db.query<{ id: string; name: string }>(
    `insert into platform.invitations (organisation_id, email, invited_by, key_hash, created_at, expires_at)
     values ($1, $2, $3, $4, $5, $6)
     returning id, (select name from platform.organisations where id = $1) as name`,
    [admin.organisationId, email, admin.id, key.hash, now, expiresAt])
  return {
    invitation: { id: row!.id, organisationId: admin.organisationId, organisationName: row!.name, email, expiresAt, acceptedAt: null },
    key: key.value,
  }
}

/** A valid invitation for this link, or null. */
export async function findInvitation(db: Queryable, clock: Clock, id: string, key: string): Promise<Invitation | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id) || key.length > 100) return null
  const row = await first<{ id: string; organisation_id: string; name: string; email: string; expires_at: Date; accepted_at: Date | null; key_hash: Uint8Array }>(db,
    `select i.id, i.organisation_id, o.name, i.email, i.expires_at, i.accepted_at, i.key_hash
       from platform.invitations i join platform.organisations o on o.id = i.organisation_id where i.id = $1`, [id])
  if (!row || !matchesHash(row.key_hash, key)) return null
  if (row.expires_at <= clock.now()) return null
  return { id: row.id, organisationId: row.organisation_id, organisationName: row.name, email: row.email, expiresAt: row.expires_at, acceptedAt: row.accepted_at }
}

/** The invited person (signed in with the invited address, without a company) joins (announced like `setUpCompany`). */
export async function acceptInvitation(db: Queryable, clock: Clock, invitation: Invitation, user: User): Promise<void> {
  if (user.email !== invitation.email) {
    throw new ServiceError('FORBIDDEN', `this invitation is for ${invitation.email}; sign in with that address`)
  }
  if (user.organisationId) throw new ServiceError('CONFLICT', 'your account already belongs to a company')
  if (invitation.acceptedAt) throw new ServiceError('CONFLICT', 'this invitation was already accepted')
  const accepted = await db.query('update platform.invitations set accepted_at = $2 where id = $1 and accepted_at is null returning id',
    [invitation.id, clock.now()])
  if (accepted.length === 0) throw new ServiceError('CONFLICT', 'this invitation was already accepted')
  await db.query(`update platform.users set organisation_id = $2, organisation_role = 'member' where id = $1 and organisation_id is null`,
    [user.id, invitation.organisationId])
  await db.query('update platform.apps set organisation_id = $2 where owner_id = $1 and organisation_id is null', [user.id, invitation.organisationId])
  await announceChange(db, APP_CHANGED, `owner:${user.id}`)
}
