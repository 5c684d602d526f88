/**
 * An app's members and their roles as its administrators manage them, for the owner API
 * (`/v1/apps/{app}/members`) and the dashboard's Access screen alike: the owner and people
 * holding Administer; a lower role gets FORBIDDEN, anyone else APP_NOT_FOUND.
 */
import type { Db } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import { findUserByEmail, findUserById, normaliseEmail, type User } from '../accounts/users.ts'
import { appForRole, findMember, listMembers, memberView, removeMember, roleFromBody, setMemberRole } from './roles.ts'

/** Changing who may reach an app needs a confirmed email (spec 5.2: no owner-only actions before). */
export function requireConfirmedSharer(user: User): void {
  if (!user.emailConfirmedAt) {
    throw new ServiceError('CONFIRMATION_REQUIRED', 'confirm your email address before sharing apps')
  }
}

/** The person a path segment or form field names: a user id or an email address. */
async function personNamed(db: Db, value: string): Promise<User> {
  const person = isUuid(value) ? await findUserById(db, value) : await findUserByEmail(db, normaliseEmail(value))
  if (!person) throw new ServiceError('NOT_FOUND', `no account exists for ${value}; ask them to sign in once first`)
  return person
}

/**
 * The app's owner and members with their roles.
 *
 * @example
 * const { owner, members } = await appMembers(db, { user, appId: 'orders' })
 */
export async function appMembers(db: Db, input: { user: User; appId: string }) {
  const app = await appForRole(db, input.user, input.appId, 'administer')
  const owner = await findUserById(db, app.ownerId)
  const members = await listMembers(db, app)
  return {
    owner: { userId: app.ownerId, email: owner?.email ?? null, role: 'administer' as const, roles: ['use', 'edit', 'administer'] },
    members: members.map(memberView),
  }
}

/**
 * Gives `member` (a user id or email address) the role `body` asks for (`{ role }` or
 * `{ roles }`, roles.ts `roleFromBody`); `created` when they had none.
 *
 * @example
 * const { member, created } = await setAppMember(db, { user, appId: 'orders', member: 'ana@acme.test', body: { role: 'edit' } })
 */
export async function setAppMember(db: Db, input: { user: User; appId: string; member: string; body: Record<string, unknown> }) {
  requireConfirmedSharer(input.user)
  const app = await appForRole(db, input.user, input.appId, 'administer')
  const role = roleFromBody(input.body)
  const person = await personNamed(db, input.member)
  const { created } = await setMemberRole(db, { app, member: person, role, by: input.user })
  const member = (await findMember(db, { app, userId: person.id }))!
  return { member: memberView(member), created }
}

/**
 * Removes every role `member` (a user id or email address) holds on the app; NOT_FOUND when none.
 *
 * @example
 * await removeAppMember(db, { user, appId: 'orders', member: 'ana@acme.test' })
 */
export async function removeAppMember(db: Db, input: { user: User; appId: string; member: string }): Promise<void> {
  const app = await appForRole(db, input.user, input.appId, 'administer')
  const value = input.member
  const person = isUuid(value) ? { id: value } : await findUserByEmail(db, normaliseEmail(value))
  if (!person || !(await removeMember(db, { app, userId: person.id }))) {
    throw new ServiceError('NOT_FOUND', `${value} holds no role on this app`)
  }
}
