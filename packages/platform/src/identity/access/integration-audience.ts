/**
 * A provider app's integration audiences (issue 12; spec 2.6, 5.6). The Use audience decides
 * who may use the app's integration: the whole organisation (the default and usual choice)
 * or named people; the Administer audience, named people, decides who may change it. The
 * owner belongs to both, and someone who may administer may use. Nobody outside the provider
 * app's organisation belongs to either, whatever is stored: the organisation is compared on
 * every check, with the person's and the app's current rows.
 */
import { first, type Queryable } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import type { App } from '../../apps/apps.ts'
import { findUserByEmail, findUserById, normaliseEmail, type User } from '../accounts/users.ts'
import { effectiveRole, holdsRole } from './roles.ts'

export type UseScope = 'organisation' | 'people'

export interface AudiencePerson {
  userId: string
  email: string
}

export interface IntegrationAudience {
  useScope: UseScope
  /** Named people of the Use audience (kept, but unused, while the scope is `organisation`). */
  usePeople: AudiencePerson[]
  administerPeople: AudiencePerson[]
}

/** At most this many named people per audience. */
export const MAX_AUDIENCE_PEOPLE = 500

/**
 * The facts both audience checks read about one person and one provider app, live: the SQL
 * function platform.integration_audience_facts (migration 0020), which the broker's one
 * statement also joins (platform.integration_call_facts).
 */
export interface AudienceFacts extends Record<string, unknown> {
  owner_id: string
  app_organisation: string | null
  user_organisation: string | null
  confirmed: boolean
  use_scope: UseScope
  named_use: boolean
  named_administer: boolean
}

/** One statement: everything both checks need, read live. Undefined when app or user is gone. */
async function standing(db: Queryable, userId: string, appId: string): Promise<AudienceFacts | undefined> {
  return first<AudienceFacts>(db, 'select * from platform.integration_audience_facts($1, $2)', [appId, userId])
}

function sameOrganisation(s: AudienceFacts): boolean {
  return s.app_organisation !== null && s.user_organisation === s.app_organisation && s.confirmed
}

/**
 * Whether `user` may change the integration `providerApp` publishes: its owner, or a
 * confirmed member of its organisation named in its Administer audience. Read live; call it
 * per request.
 *
 * @example
 *   if (!(await mayAdministerIntegration(db, { user, providerApp }))) throw …
 */
export async function mayAdministerIntegration(
  db: Queryable, input: { user: Pick<User, 'id'>; providerApp: Pick<App, 'id'> },
): Promise<boolean> {
  const s = await standing(db, input.user.id, input.providerApp.id)
  if (!s) return false
  if (s.owner_id === input.user.id) return true
  return sameOrganisation(s) && s.named_administer
}

/**
 * Who may change the audiences (the integration page's form and `PUT
 * /v1/apps/{app}/integration-audience`): the integration's Administer audience, and the app's
 * own administrators (the Administer role: they manage who reaches the app, and its
 * integration is part of the app). One rule for both surfaces (decisions.md, "Who changes an
 * integration's audiences").
 *
 * @example
 *   if (!(await mayChangeIntegrationAudience(db, { user, app }))) throw …
 */
export async function mayChangeIntegrationAudience(db: Queryable, input: { user: User; app: App }): Promise<boolean> {
  return holdsRole(await effectiveRole(db, input), 'administer') || mayAdministerIntegration(db, { user: input.user, providerApp: input.app })
}

/**
 * The Use rule on facts already read (AudienceFacts): the owner always; otherwise a
 * confirmed member of the provider app's organisation when the Use audience is the
 * organisation, else one named in the Use or Administer audience. Undefined facts (app or
 * person gone): no.
 */
export function usesIntegration(facts: AudienceFacts | undefined, userId: string): boolean {
  if (!facts) return false
  if (facts.owner_id === userId) return true
  if (!sameOrganisation(facts)) return false
  return facts.use_scope === 'organisation' || facts.named_use || facts.named_administer
}

/**
 * Whether `user` may use the integration `providerApp` publishes (usesIntegration, read
 * live in one statement); call it per request.
 *
 * @example
 *   if (!(await mayUseIntegration(db, { user: bindingCreator, providerApp }))) suspend…
 */
export async function mayUseIntegration(
  db: Queryable, input: { user: Pick<User, 'id'>; providerApp: Pick<App, 'id'> },
): Promise<boolean> {
  return usesIntegration(await standing(db, input.user.id, input.providerApp.id), input.user.id)
}

export async function readIntegrationAudience(db: Queryable, app: Pick<App, 'id'>): Promise<IntegrationAudience> {
  const scope = await first<{ use_scope: UseScope }>(db,
    'select use_scope from platform.integration_audiences where app_id = $1', [app.id])
  const people = await db.query<{ audience: 'use' | 'administer'; user_id: string; email: string }>(
    `select p.audience, p.user_id, u.email from platform.integration_audience_people p
       join platform.users u on u.id = p.user_id where p.app_id = $1 order by u.email limit ${2 * MAX_AUDIENCE_PEOPLE}`, [app.id])
  const pick = (audience: 'use' | 'administer') =>
    people.filter((p) => p.audience === audience).map((p) => ({ userId: p.user_id, email: p.email }))
  return { useScope: scope?.use_scope ?? 'organisation', usePeople: pick('use'), administerPeople: pick('administer') }
}

/** The people a list of emails or user ids names, each checked to be of the app's organisation. */
async function resolvePeople(db: Queryable, input: { app: App; field: string; value: unknown }): Promise<User[]> {
  const { app, field, value } = input
  if (!Array.isArray(value) || value.length > MAX_AUDIENCE_PEOPLE) {
    throw new ServiceError('VALIDATION_FAILED',
      `${field} must be a list of at most ${MAX_AUDIENCE_PEOPLE} email addresses or user ids`, { details: { field } })
  }
  const people = new Map<string, User>()
  for (const entry of value) {
    const person = typeof entry === 'string' && isUuid(entry)
      ? await findUserById(db, entry)
      : await findUserByEmail(db, normaliseEmail(entry))
    if (!person) {
      throw new ServiceError('NOT_FOUND', `no account exists for ${String(entry)}`, { details: { field } })
    }
    if (person.id === app.ownerId) continue
    if (app.organisationId === null || person.organisationId !== app.organisationId || !person.emailConfirmedAt) {
      throw new ServiceError('MEMBER_OUTSIDE_ORGANISATION',
        `${person.email} is not a confirmed member of the app's organisation; integration audiences stay inside it`,
        { details: { field } })
    }
    people.set(person.id, person)
  }
  return [...people.values()]
}

/**
 * Replaces the parts of the audiences the body names: `useScope` ("organisation" or
 * "people"), `usePeople` and `administerPeople` (lists of emails or user ids). In one
 * transaction; the caller has checked the right to change them.
 */
export async function setIntegrationAudience(
  db: Queryable, input: { app: App; by: User; body: Record<string, unknown> },
): Promise<void> {
  const { app, by, body } = input
  const known = new Set(['useScope', 'usePeople', 'administerPeople'])
  const unknown = Object.keys(body).find((key) => !known.has(key))
  if (unknown !== undefined) {
    throw new ServiceError('VALIDATION_FAILED', `unknown field ${unknown}; send useScope, usePeople or administerPeople`,
      { details: { field: unknown } })
  }
  if (Object.keys(body).length === 0) {
    throw new ServiceError('VALIDATION_FAILED', 'send useScope, usePeople or administerPeople')
  }
  if (body.useScope !== undefined && body.useScope !== 'organisation' && body.useScope !== 'people') {
    throw new ServiceError('VALIDATION_FAILED', 'useScope must be "organisation" or "people"', { details: { field: 'useScope' } })
  }
  const usePeople = body.usePeople === undefined ? undefined : await resolvePeople(db, { app, field: 'usePeople', value: body.usePeople })
  const administerPeople = body.administerPeople === undefined
    ? undefined : await resolvePeople(db, { app, field: 'administerPeople', value: body.administerPeople })
  await db.query(
    `insert into platform.integration_audiences (app_id, use_scope, updated_by, updated_at) values ($1, coalesce($2, 'organisation'), $3, now())
     on conflict (app_id) do update set use_scope = coalesce($2, platform.integration_audiences.use_scope),
       updated_by = excluded.updated_by, updated_at = now()`,
    [app.id, (body.useScope as UseScope | undefined) ?? null, by.id])
  for (const [audience, people] of [['use', usePeople], ['administer', administerPeople]] as const) {
    if (!people) continue
    await db.query('delete from platform.integration_audience_people where app_id = $1 and audience = $2', [app.id, audience])
    for (const person of people) {
      await db.query(
        'insert into platform.integration_audience_people (app_id, audience, user_id) values ($1, $2, $3)',
        [app.id, audience, person.id])
    }
  }
}

export function audienceView(audience: IntegrationAudience) {
  return {
    useScope: audience.useScope,
    usePeople: audience.usePeople,
    administerPeople: audience.administerPeople,
  }
}
