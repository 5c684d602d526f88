/**
 * Access to private apps. Access is separate from identity: the owner always has it, people
 * holding a role (Use, Edit or Administer: roles.ts) have it once their email is confirmed,
 * and platform administrators may open any active app for review with their own identity
 * (no membership, no control).
 */
import { first, type Queryable } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { App } from '../../apps/apps.ts'
import type { User } from '../accounts/users.ts'
import { checkMemberEligible } from './roles.ts'

export type AccessReason = 'owner' | 'granted' | 'platform_admin'

/**
 * Why `user` may use the private `app`, or null. `granted` is whether the user holds a grant
 * when the caller already read it (the app-session lookup does, in the same statement);
 * otherwise it is read here.
 *
 * @example
 *   const reason = await accessReason(db, { app, user, granted: state.granted })
 */
export async function accessReason(
  db: Queryable,
  input: { app: App; user: User; granted?: boolean | undefined },
): Promise<AccessReason | null> {
  const { app, user } = input
  if (app.ownerId === user.id) return 'owner'
  // Unconfirmed accounts cannot use private apps granted by others.
  if (user.emailConfirmedAt && (input.granted
    ?? Boolean(await first(db, 'select 1 from platform.app_grants where app_id = $1 and user_id = $2', [app.id, user.id])))) {
    return 'granted'
  }
  if (user.isPlatformAdmin && user.emailConfirmedAt) return 'platform_admin'
  return null
}

/**
 * Gives `grantee` Use (the grants API, an alias of the members API for Use): a person who
 * already holds a role keeps it. Refused for a person of another company (roles.ts).
 */
export async function grantAccess(db: Queryable, app: App, grantee: User, grantedBy: User): Promise<void> {
  if (grantee.id === app.ownerId) throw new ServiceError('CONFLICT', 'the owner already has access')
  checkMemberEligible({ app, member: grantee, role: 'use' })
  await db.query(
    `insert into platform.app_grants (app_id, user_id, granted_by) values ($1, $2, $3) on conflict do nothing`,
    [app.id, grantee.id, grantedBy.id])
}

export async function revokeAccess(db: Queryable, app: App, userId: string): Promise<boolean> {
  const rows = await db.query('delete from platform.app_grants where app_id = $1 and user_id = $2 returning user_id', [app.id, userId])
  return rows.length > 0
}

export async function listGrants(db: Queryable, app: App) {
  return db.query<{ user_id: string; email: string; created_at: Date }>(
    `select g.user_id, u.email, g.created_at from platform.app_grants g join platform.users u on u.id = g.user_id
      where g.app_id = $1 order by g.created_at limit 1000`, [app.id])
}
