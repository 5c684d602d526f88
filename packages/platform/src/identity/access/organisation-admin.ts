/**
 * Organisation administrators (`organisation_role = 'admin'`) create and manage
 * organisation connections (issue 12; spec 2.8, 3.2).
 */
import type { User } from '../accounts/users.ts'

/**
 * Whether `user` administers the organisation `organisationId`: a confirmed member of it
 * whose organisation role is `admin`. Pass a user read for this request (the role is live).
 *
 * @example
 *   if (!isOrganisationAdmin(c.var.user, connection.organisationId)) throw …
 */
export function isOrganisationAdmin(
  user: Pick<User, 'organisationId' | 'organisationRole' | 'emailConfirmedAt'>, organisationId: string | null,
): boolean {
  return organisationId !== null && user.organisationId === organisationId && user.organisationRole === 'admin'
    && user.emailConfirmedAt !== null
}
