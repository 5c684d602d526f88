/**
 * App roles (issue 12; spec 5.6): each person of an app holds one level, `use` (open the
 * app), `edit` (change code, deploy, bind integrations) or `administer` (manage access);
 * a level includes the ones below it and the owner holds all three. Roles stay inside the
 * app's organisation: Edit and Administer go only to confirmed members of it, Use also to a
 * person of no company (a guest, as grants always allowed), never to a person of another
 * company. The level is read live on every request, with the person's current organisation.
 */
import { first, type Queryable } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { findAppByIdOrSlug, type App, type AppRole } from '../../apps/apps.ts'
import type { User } from '../accounts/users.ts'

export type { AppRole }
export const APP_ROLES: readonly AppRole[] = ['use', 'edit', 'administer']
const RANK: Record<AppRole, number> = { use: 1, edit: 2, administer: 3 }

const ROLE_NAMES: Record<AppRole, string> = { use: 'Use', edit: 'Edit', administer: 'Administer' }

/** The roles a level holds, lowest first: `edit` is `['use', 'edit']`. */
export function impliedRoles(role: AppRole): AppRole[] {
  return APP_ROLES.filter((r) => RANK[r] <= RANK[role])
}

export function isAppRole(value: unknown): value is AppRole {
  return typeof value === 'string' && (APP_ROLES as readonly string[]).includes(value)
}

/**
 * The level a request body asks for: `{ role: "edit" }`, or `{ roles: [...] }` whose
 * highest entry is the level (`["use", "edit"]` and `["edit"]` both mean Edit).
 */
export function roleFromBody(body: Record<string, unknown>): AppRole {
  if (body.role !== undefined && body.roles !== undefined) {
    throw new ServiceError('VALIDATION_FAILED', 'send either role or roles, not both', { details: { field: 'role' } })
  }
  if (body.role !== undefined) {
    if (!isAppRole(body.role)) {
      throw new ServiceError('VALIDATION_FAILED', 'role must be "use", "edit" or "administer"', { details: { field: 'role' } })
    }
    return body.role
  }
  const roles = body.roles
  if (!Array.isArray(roles) || roles.length === 0 || roles.length > APP_ROLES.length || !roles.every(isAppRole)) {
    throw new ServiceError('VALIDATION_FAILED',
      'send role ("use", "edit" or "administer") or roles, a non-empty list of them', { details: { field: 'roles' } })
  }
  return roles.reduce<AppRole>((high, r) => (RANK[r] > RANK[high] ? r : high), 'use')
}

/** Whether `user` belongs to the app's organisation (an app without one has no members). */
function inAppOrganisation(app: Pick<App, 'organisationId'>, user: Pick<User, 'organisationId'>): boolean {
  return app.organisationId !== null && user.organisationId === app.organisationId
}

/**
 * The level a person holds on `app` given their stored grant (`grant`, null: none): the rule
 * itself, on facts already read. `administer` for the owner; otherwise the stored level,
 * counted only while the person is confirmed, and above Use only while they are a member of
 * the app's organisation. Null: no role.
 */
export function roleFrom(input: {
  app: Pick<App, 'ownerId' | 'organisationId'>; user: Pick<User, 'id' | 'organisationId' | 'emailConfirmedAt'>; grant: AppRole | null
}): AppRole | null {
  const { app, user, grant } = input
  if (app.ownerId === user.id) return 'administer'
  if (!user.emailConfirmedAt || grant === null) return null
  return inAppOrganisation(app, user) ? grant : 'use'
}

/** The level `user` holds on `app` right now (roleFrom, with the grant read live). */
export async function effectiveRole(db: Queryable, input: { app: App; user: User }): Promise<AppRole | null> {
  const { app, user } = input
  if (app.ownerId === user.id || !user.emailConfirmedAt) return roleFrom({ app, user, grant: null })
  const row = await first<{ role: AppRole }>(db,
    'select role from platform.app_grants where app_id = $1 and user_id = $2', [app.id, user.id])
  return roleFrom({ app, user, grant: row?.role ?? null })
}

/** Whether a level includes `role` (`administer` includes `edit`). */
export function holdsRole(held: AppRole | null, role: AppRole): boolean {
  return held !== null && RANK[held] >= RANK[role]
}

/**
 * The app `idOrSlug` when `user` holds at least `role` on it. APP_NOT_FOUND when the app
 * does not exist or the person holds no role (exactly as for others' apps); FORBIDDEN with
 * `details.role` and `details.required` when they hold a lower one. Four positional
 * parameters, against STYLE.md's two, so it reads like `getOwnedApp(db, user, idOrSlug)`,
 * which it replaces where roles apply.
 *
 * @example
 *   const app = await appForRole(db, c.var.user, c.req.param('appId'), 'edit')
 */
export async function appForRole(db: Queryable, user: User, idOrSlug: string, role: AppRole): Promise<App> {
  const app = await findAppByIdOrSlug(db, idOrSlug)
  const held = app ? await effectiveRole(db, { app, user }) : null
  if (!app || !held) throw new ServiceError('APP_NOT_FOUND', `no app "${idOrSlug}" among your apps`)
  if (RANK[held] < RANK[role]) {
    throw new ServiceError('FORBIDDEN', `this needs ${ROLE_NAMES[role]} on "${app.slug}"; you hold ${ROLE_NAMES[held]}`, {
      details: { role: held, required: role },
    })
  }
  return app
}

/**
 * Refuses a person who may not hold `role` on `app`: the owner (who holds every role), a
 * person of another company (any role), a person of no company or an unconfirmed member
 * (Edit or Administer).
 */
export function checkMemberEligible(input: { app: App; member: User; role: AppRole }): void {
  const { app, member, role } = input
  if (member.id === app.ownerId) throw new ServiceError('CONFLICT', 'the owner already holds every role')
  if (member.organisationId !== null && member.organisationId !== app.organisationId) {
    throw new ServiceError('MEMBER_OUTSIDE_ORGANISATION',
      `${member.email} belongs to another organisation; roles stay inside the app's organisation`)
  }
  if (role !== 'use' && !(inAppOrganisation(app, member) && member.emailConfirmedAt)) {
    throw new ServiceError('MEMBER_OUTSIDE_ORGANISATION',
      `${ROLE_NAMES[role]} is only for confirmed members of the app's organisation; ${member.email} may hold Use`)
  }
}

/** Gives `member` exactly `role` (adding or changing it); `created` when they had none. */
export async function setMemberRole(
  db: Queryable, input: { app: App; member: User; role: AppRole; by: User },
): Promise<{ created: boolean }> {
  const { app, member, role, by } = input
  checkMemberEligible({ app, member, role })
  const rows = await db.query<{ created: boolean }>(
    `insert into platform.app_grants (app_id, user_id, granted_by, role) values ($1, $2, $3, $4)
     on conflict (app_id, user_id) do update set role = excluded.role, updated_at = now()
     returning (xmax = 0) as created`, [app.id, member.id, by.id, role])
  return { created: rows[0]!.created }
}

/** Removes every role `userId` holds on the app; false when they held none. */
export async function removeMember(db: Queryable, input: { app: App; userId: string }): Promise<boolean> {
  const { app, userId } = input
  const rows = await db.query('delete from platform.app_grants where app_id = $1 and user_id = $2 returning user_id', [app.id, userId])
  return rows.length > 0
}

export interface Member {
  userId: string
  email: string
  role: AppRole
  createdAt: Date
  updatedAt: Date
}

const MEMBER_SELECT = `select g.user_id, u.email, g.role, g.created_at, g.updated_at
  from platform.app_grants g join platform.users u on u.id = g.user_id`

interface MemberRow extends Record<string, unknown> {
  user_id: string
  email: string
  role: AppRole
  created_at: Date
  updated_at: Date
}

function memberFromRow(r: MemberRow): Member {
  return { userId: r.user_id, email: r.email, role: r.role, createdAt: r.created_at, updatedAt: r.updated_at }
}

export async function listMembers(db: Queryable, app: App): Promise<Member[]> {
  const rows = await db.query<MemberRow>(`${MEMBER_SELECT} where g.app_id = $1 order by g.created_at, u.email limit 1000`, [app.id])
  return rows.map(memberFromRow)
}

export async function findMember(db: Queryable, input: { app: App; userId: string }): Promise<Member | null> {
  const { app, userId } = input
  const row = await first<MemberRow>(db, `${MEMBER_SELECT} where g.app_id = $1 and g.user_id = $2`, [app.id, userId])
  return row ? memberFromRow(row) : null
}

export function memberView(member: Member) {
  return {
    userId: member.userId,
    email: member.email,
    role: member.role,
    roles: impliedRoles(member.role),
    createdAt: member.createdAt.toISOString(),
    updatedAt: member.updatedAt.toISOString(),
  }
}
