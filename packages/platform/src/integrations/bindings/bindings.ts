/**
 * Bindings (spec 2.7, 2.8, 3.5, 5.6): a consumer app's slot (`integrations.<slot>` of its
 * active release) bound to one connection, granting the capabilities both the slot requests
 * and the contract declares.
 *
 * Who binds: an `account: app` slot, a person who may Edit the consumer app, with a personal
 * connection of their own or an organisation connection of an integration they may use; a
 * `calling_user` slot, each person for themself, with a personal connection of their own,
 * only on a page (never an agent: owner tokens get BINDING_NEEDS_PERSON).
 *
 * Delegation (3.5), computed by `bindingStanding` at every broker call and every listing:
 * SUSPENDED while the binding's creator may not use the provider's integration (restored
 * when the audience widens; nothing stored); REVOKED for good (stored) when a personal
 * connection's owner leaves the organisation or, for an `account: app` slot, loses Edit on
 * the consumer app.
 */
import { randomUUID } from 'node:crypto'
import type { Db, Queryable } from '../../db/db.ts'
import { findAppByIdOrSlug, type App } from '../../apps/apps.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { IntegrationContract, IntegrationSlot, Manifest } from '../../manifest/index.ts'
import {
  appForRole, effectiveRole, findUserById, holdsRole, mayUseIntegration, roleFrom, usesIntegration, type AppRole, type User,
} from '../../identity/index.ts'
import { isUuid } from '../../lib/ids.ts'
import { findConnection, seesConnection, toConnection, type Connection, type ConnectionRow, type CredentialRow } from '../connections/index.ts'
import {
  deleteActiveBinding, insertBinding, selectActiveBinding, selectCallFacts, selectPublishedContract, selectReleaseManifest, updateRevoked,
  type BindingRow,
} from './queries.ts'

export interface Binding {
  readonly id: string
  readonly consumerAppId: string
  readonly slot: string
  readonly connectionId: string
  /** The person of a `calling_user` binding; null for an `account: app` slot. */
  readonly userId: string | null
  readonly createdBy: string
  readonly capabilities: readonly string[]
  readonly createdAt: Date
}

/** How a binding stands right now. */
export type BindingStanding = 'active' | 'suspended' | 'revoked'

function toBinding(row: BindingRow): Binding {
  return {
    id: row.id, consumerAppId: row.consumer_app_id, slot: row.slot, connectionId: row.connection_id, userId: row.user_id,
    createdBy: row.created_by, capabilities: row.capabilities, createdAt: new Date(row.created_at),
  }
}

/** The published contract (and its provider app) an organisation knows by name, or null. */
export async function publishedContract(
  db: Queryable, key: { organisationId: string | null; name: string },
): Promise<{ providerAppId: string; contract: IntegrationContract } | null> {
  if (key.organisationId === null) return null
  const row = await selectPublishedContract(db, { organisationId: key.organisationId, name: key.name })
  return row ? { providerAppId: row.app_id, contract: row.contract } : null
}

/** The slots of the app's active production release (none without one). */
export async function slotsOf(db: Queryable, app: App): Promise<Readonly<Record<string, IntegrationSlot>>> {
  if (app.activeReleaseId === null) return {}
  const manifest: Manifest | null = await selectReleaseManifest(db, app.activeReleaseId)
  return manifest?.integrations ?? {}
}

function slotOf(slots: Readonly<Record<string, IntegrationSlot>>, app: App, slot: string): IntegrationSlot {
  const declared = Object.hasOwn(slots, slot) ? slots[slot] : undefined
  if (!declared) {
    throw new ServiceError('SLOT_NOT_FOUND', `the active release of "${app.slug}" declares no integration slot "${slot.slice(0, 64)}"`,
      { details: { slot: slot.slice(0, 64) } })
  }
  return declared
}

/** The binding of a slot for `userId` (null: the app's), or null. */
export async function activeBinding(db: Queryable, key: { appId: string; slot: string; userId: string | null }): Promise<Binding | null> {
  const row = await selectActiveBinding(db, key)
  return row ? toBinding(row) : null
}

export interface BindingDeps {
  readonly db: Db
  readonly clock: Clock
}

/**
 * Binds the consumer `app`'s `slot` to a connection for `actor`. `via: 'api'` is an owner
 * token (an agent): `calling_user` slots refuse it. The caller has checked Edit on the app
 * for `account: app` slots (appForRole); this checks everything about the connection.
 *
 * @example
 *   const binding = await bindSlot(deps, { actor: user, app, slot: 'orders', connectionId, via: 'api' })
 */
export async function bindSlot(
  deps: BindingDeps,
  input: { actor: User; app: App; slot: string; connectionId: string; via: 'api' | 'page' },
): Promise<Binding> {
  const { actor, app } = input
  const slot = slotOf(await slotsOf(deps.db, app), app, input.slot)
  if (slot.account === 'calling_user' && input.via === 'api') {
    throw new ServiceError('BINDING_NEEDS_PERSON',
      `the slot "${input.slot}" is bound by each person for themself on a page, never through the API`, { details: { slot: input.slot } })
  }
  const published = await publishedContract(deps.db, { organisationId: app.organisationId, name: slot.integration })
  if (!published) {
    throw new ServiceError('INTEGRATION_NOT_FOUND', `no active app of the organisation publishes the integration "${slot.integration}"`,
      { details: { integration: slot.integration } })
  }
  const connection = await findConnection(deps.db, input.connectionId)
  if (!connection || !seesConnection(actor, connection)) {
    throw new ServiceError('CONNECTION_NOT_FOUND', 'there is no connection you can see with this id')
  }
  if (connection.providerAppId !== published.providerAppId || connection.integration !== slot.integration) {
    throw new ServiceError('VALIDATION_FAILED', `the connection is not a connection to the integration "${slot.integration}" the slot uses`,
      { details: { field: 'connectionId' } })
  }
  if (connection.kind === 'personal' && connection.ownerId !== actor.id) {
    throw new ServiceError('FORBIDDEN', 'only its owner binds a personal connection')
  }
  if (slot.account === 'calling_user' && connection.kind !== 'personal') {
    throw new ServiceError('VALIDATION_FAILED', 'a calling_user slot is bound to a personal connection of the person', { details: { field: 'connectionId' } })
  }
  if (!(await mayUseIntegration(deps.db, { user: actor, providerApp: { id: published.providerAppId } }))) {
    throw new ServiceError('FORBIDDEN', 'you are not in the Use audience of this integration; ask its administrators')
  }
  const offered = new Set(published.contract.capabilities.map((c) => c.name))
  const capabilities = slot.capabilities.filter((name) => offered.has(name))
  const userId = slot.account === 'calling_user' ? actor.id : null
  const id = randomUUID()
  await deps.db.transaction(async (tx) => {
    await deleteActiveBinding(tx, { appId: app.id, slot: input.slot, userId })
    await insertBinding(tx, {
      id, appId: app.id, slot: input.slot, connectionId: connection.id, userId, createdBy: actor.id, capabilities, at: deps.clock.now(),
    })
  })
  return (await activeBinding(deps.db, { appId: app.id, slot: input.slot, userId }))!
}

/**
 * Binds a connection an OAuth flow just made into the `calling_user` slot whose
 * connect-and-bind page started the flow: the same rules as binding on the page, checked
 * now (the person may have lost the app or the slot meanwhile). The app's slug back, for
 * the page that says so.
 */
export async function bindAfterConnect(
  deps: BindingDeps, input: { actor: User; connectionId: string; bind: { appId: string; slot: string } },
): Promise<{ appSlug: string }> {
  const app = await findAppByIdOrSlug(deps.db, input.bind.appId)
  if (!app || app.organisationId === null || app.organisationId !== input.actor.organisationId) {
    throw new ServiceError('APP_NOT_FOUND', 'the app you connected for is no longer in your organisation')
  }
  // Only a slot each person binds for themself, as on the page (an app's slot needs Edit and the API).
  const slots = await slotsOf(deps.db, app)
  if (!Object.hasOwn(slots, input.bind.slot) || slots[input.bind.slot]!.account !== 'calling_user') {
    throw new ServiceError('SLOT_NOT_FOUND', `the app "${app.slug}" has no slot "${input.bind.slot}" that each person connects`)
  }
  await bindSlot(deps, { actor: input.actor, app, slot: input.bind.slot, connectionId: input.connectionId, via: 'page' })
  return { appSlug: app.slug }
}

/** Unbinds the slot (the app's binding, or `actor`'s own for a `calling_user` slot); BINDING_NOT_FOUND when unbound. */
export async function unbindSlot(db: Db, input: { actor: User; app: App; slot: string }): Promise<void> {
  const slot = slotOf(await slotsOf(db, input.app), input.app, input.slot)
  const userId = slot.account === 'calling_user' ? input.actor.id : null
  const removed = await db.transaction((tx) => deleteActiveBinding(tx, { appId: input.app.id, slot: input.slot, userId }))
  if (!removed) throw new ServiceError('BINDING_NOT_FOUND', `the slot "${input.slot}" is not bound`)
}

/** What decides how a binding stands, read live (bindingStanding, or the broker's one statement). */
export interface StandingFacts {
  readonly binding: Binding
  readonly connection: Connection
  readonly consumer: App
  readonly providerAppId: string
  /** A personal connection's owner now (null: gone); unread for an organisation connection. */
  readonly owner: Pick<User, 'id' | 'organisationId'> | null
  /** The owner's level on the consumer app now (identity's effectiveRole / roleFrom). */
  readonly ownerRole: AppRole | null
  /** Whether the binding's creator may use the provider's integration now (identity's usesIntegration). */
  readonly creatorMayUse: boolean
}

/**
 * How a binding stands (spec 3.5), on facts read live; the rules, once. REVOKED when a
 * personal connection's owner left the consumer's organisation or, for an `account: app`
 * slot, no longer holds Edit on the consumer app. SUSPENDED while the creator may not use
 * the provider's integration, or when consumer, provider and connection no longer share one
 * organisation.
 */
export function standingFrom(facts: StandingFacts): { standing: 'active' | 'suspended' } | { standing: 'revoked'; reason: string } {
  const { binding, connection, consumer, owner } = facts
  if (connection.kind === 'personal') {
    if (!owner || owner.organisationId === null || owner.organisationId !== consumer.organisationId) {
      return { standing: 'revoked', reason: 'the connection\'s owner left the organisation' }
    }
    if (binding.userId === null && !holdsRole(facts.ownerRole, 'edit')) {
      return { standing: 'revoked', reason: 'the connection\'s owner no longer holds Edit on the app' }
    }
  }
  if (consumer.organisationId === null || connection.organisationId !== consumer.organisationId
    || connection.providerAppId !== facts.providerAppId) {
    return { standing: 'suspended' }
  }
  return { standing: facts.creatorMayUse ? 'active' : 'suspended' }
}

/** standingFrom, storing a revocation (for good). */
export async function settleStanding(deps: BindingDeps, facts: StandingFacts): Promise<BindingStanding> {
  const decided = standingFrom(facts)
  if (decided.standing === 'revoked') await updateRevoked(deps.db, { id: facts.binding.id, reason: decided.reason, at: deps.clock.now() })
  return decided.standing
}

/** How a binding stands now (standingFrom on facts read here, a statement each), revoking it when it must. */
export async function bindingStanding(
  deps: BindingDeps,
  input: { binding: Binding; connection: Connection; consumer: App; providerAppId: string },
): Promise<BindingStanding> {
  const { binding, connection, consumer } = input
  const owner = connection.kind === 'personal' && connection.ownerId !== null ? await findUserById(deps.db, connection.ownerId) : null
  const ownerRole = owner && binding.userId === null ? await effectiveRole(deps.db, { app: consumer, user: owner }) : null
  const creator = await findUserById(deps.db, binding.createdBy)
  const creatorMayUse = creator !== null && await mayUseIntegration(deps.db, { user: creator, providerApp: { id: input.providerAppId } })
  return settleStanding(deps, { ...input, owner, ownerRole, creatorMayUse })
}

/** Everything one broker call checks, read in one statement (queries.ts selectCallFacts). */
export interface CallFacts {
  readonly consumer: App
  /** The contract an active app of the consumer's organisation publishes under the slot's integration, or null. */
  readonly published: { readonly providerApp: App; readonly contract: IntegrationContract } | null
  readonly binding: Binding | null
  /** The binding's connection (null: no binding, or the connection is gone) and its sealed credentials. */
  readonly connection: Connection | null
  readonly credentials: readonly CredentialRow[]
  /** The standing facts, when there are a binding, its connection and a published contract. */
  readonly standing: StandingFacts | null
}

/**
 * The facts of one broker call for the consumer `appId`'s `slot` (of `integration`) and
 * `userId` (null: the app's binding), live, in one statement; null when the app is gone.
 */
export async function callFacts(
  db: Db, key: { appId: string; integration: string; slot: string; userId: string | null },
): Promise<CallFacts | null> {
  if (!isUuid(key.appId) || (key.userId !== null && !isUuid(key.userId))) return null
  const facts = await selectCallFacts(db, key)
  if (!facts) return null
  const consumer = appFromJson(facts.consumer)
  const provider = facts.provider ? appFromJson(facts.provider) : null
  // The contract row keeps the organisation it was published in: the provider app must still
  // be in the consumer's (spec 5.6, live authority), as selectPublishedContract requires too.
  const published = provider && facts.contract && provider.organisationId === consumer.organisationId
    ? { providerApp: provider, contract: facts.contract }
    : null
  const binding = facts.binding ? toBinding(facts.binding as BindingRow) : null
  const connection = facts.connection ? toConnection(withDates(facts.connection, ['status_changed_at', 'created_at', 'updated_at']) as ConnectionRow) : null
  let standing: StandingFacts | null = null
  if (binding && connection && published) {
    const owner = facts.owner
      ? { id: facts.owner.id, organisationId: facts.owner.organisation_id, emailConfirmedAt: facts.owner.email_confirmed_at === null ? null : new Date(facts.owner.email_confirmed_at) }
      : null
    standing = {
      binding, connection, consumer, providerAppId: published.providerApp.id, owner,
      ownerRole: owner ? roleFrom({ app: consumer, user: owner, grant: facts.owner_grant }) : null,
      creatorMayUse: usesIntegration(facts.creator ?? undefined, binding.createdBy),
    }
  }
  return { consumer, published, binding, connection, credentials: connection ? facts.credentials : [], standing }
}

/** `row` with the named timestamp fields (JSON text) as Dates. */
function withDates(row: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out = { ...row }
  for (const field of fields) if (typeof out[field] === 'string') out[field] = new Date(out[field])
  return out
}

function appFromJson(json: Record<string, unknown>): App {
  const row = withDates(json, ['created_at', 'updated_at'])
  return {
    id: row.id as string, organisationId: row.organisation_id as string | null, ownerId: row.owner_id as string, slug: row.slug as string,
    name: row.name as string, visibility: row.visibility as App['visibility'], status: row.status as App['status'],
    pausedReason: (row.paused_reason ?? null) as string | null, activeReleaseId: row.active_release_id as string | null,
    createdAt: row.created_at as Date, updatedAt: row.updated_at as Date,
  }
}

/** A slot with the state of its binding, for the app integration API. */
export interface SlotView {
  readonly slot: string
  readonly integration: string
  readonly account: IntegrationSlot['account']
  readonly capabilities: readonly string[]
  readonly binding: null | {
    readonly id: string
    readonly connectionId: string
    readonly capabilities: readonly string[]
    readonly createdBy: string
    readonly createdAt: string
    /** active, suspended (the creator may not use the integration now), revoked, or reconnect_required (the connection's status). */
    readonly state: BindingStanding | 'reconnect_required'
  }
}

/**
 * The slots of the app `appId` with their bindings, for a person holding Edit on it: what the
 * app integration API (`GET …/integrations`) and the dashboard list.
 *
 * @example
 * const slots = await appIntegrationSlots(deps, { user, appId: 'desk' })
 */
export async function appIntegrationSlots(deps: BindingDeps, input: { user: User; appId: string }): Promise<SlotView[]> {
  const app = await appForRole(deps.db, input.user, input.appId, 'edit')
  return await listSlots(deps, { actor: input.user, app })
}

/**
 * The app's slots with their bindings (for a `calling_user` slot: the actor's own). Reading
 * it applies revocation like a call does.
 */
export async function listSlots(deps: BindingDeps, input: { actor: User; app: App }): Promise<SlotView[]> {
  const slots = await slotsOf(deps.db, input.app)
  const views: SlotView[] = []
  for (const [name, slot] of Object.entries(slots).sort(([a], [b]) => a.localeCompare(b))) {
    const binding = await activeBinding(deps.db, { appId: input.app.id, slot: name, userId: slot.account === 'calling_user' ? input.actor.id : null })
    let view: SlotView['binding'] = null
    if (binding) {
      const connection = await findConnection(deps.db, binding.connectionId)
      const published = await publishedContract(deps.db, { organisationId: input.app.organisationId, name: slot.integration })
      let state: BindingStanding | 'reconnect_required' = connection && published
        ? await bindingStanding(deps, { binding, connection, consumer: input.app, providerAppId: published.providerAppId })
        : 'suspended'
      if (state === 'active' && connection?.status === 'reconnect_required') state = 'reconnect_required'
      view = {
        id: binding.id, connectionId: binding.connectionId, capabilities: binding.capabilities, createdBy: binding.createdBy,
        createdAt: binding.createdAt.toISOString(), state,
      }
      if (state === 'revoked') view = null
    }
    views.push({ slot: name, integration: slot.integration, account: slot.account, capabilities: slot.capabilities, binding: view })
  }
  return views
}
