/**
 * `ctx.integration.emit({ type, id, data })` (spec 2.10, 4.3, 6.1): a provider's operation,
 * sync or webhook Function records a declared change of its connection for every subscribed
 * binding, once per (binding, event id), and learns how many deliveries are new.
 *
 * Rules, in order: only inside an integration invocation whose trigger is operation, sync or
 * webhook and that may emit (never OAuth exchange or refresh): INTEGRATION_EMIT_UNAVAILABLE;
 * the event an object of exactly `type`, `id`, `data`, with `id` a string of 1 to 255
 * characters and `data` a JSON object: INTEGRATION_EVENT_INVALID; `data` at most 64 KiB as
 * compact JSON in UTF-8: INTEGRATION_EVENT_TOO_LARGE; `type` declared in the provider's
 * published contract (in a development invocation: the development revision's):
 * INTEGRATION_EVENT_TYPE_NOT_DECLARED. A development invocation validates and delivers
 * nothing (returns 0). The new deliveries are inserted in one transaction, deduplicated by
 * the (binding, event id) unique key, and the delivery workers are notified at commit.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { IntegrationContract } from '../../manifest/index.ts'
import { everyCandidate, insertDeliveries, selectEmitFacts, selectReleaseContract, type NewDelivery } from './queries.ts'
import { bindingReceives, receivingFacts, slotHandler } from './subscription.ts'

/** Largest `data` (compact JSON, UTF-8 bytes; spec 8). */
export const MAX_EVENT_DATA_BYTES = 64 * 1024
/** Longest event `id` (characters). */
export const MAX_EVENT_ID_LENGTH = 255

/** An `integration.emit` call with the invocation as the Functions host knows it. */
export interface EmitCall {
  /** The provider app whose Function runs. */
  readonly appId: string
  readonly releaseId: string
  /** '' for production, else the development namespace. */
  readonly devName: string
  /** `ctx.integration` of the invocation (null outside an integration invocation). */
  readonly integration: { readonly connectionId: string; readonly trigger: string } | null
  /** False for OAuth exchange and refresh (provider-invocation.ts `mayEmit`). */
  readonly mayEmit: boolean
  readonly args: readonly unknown[]
}

/** A validated event. */
export interface EmittedEvent {
  readonly type: string
  readonly id: string
  readonly data: Record<string, unknown>
}

const EMITTING_TRIGGERS: ReadonlySet<string> = new Set(['operation', 'sync', 'webhook'])

function invalid(field: string, message: string): ServiceError {
  return new ServiceError('INTEGRATION_EVENT_INVALID', message, { details: { field } })
}

/** The event argument of `emit`, checked (shape, id, data size); the type is checked against a contract later. */
export function readEvent(value: unknown): EmittedEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid('event', 'integration.emit takes one object { type, id, data }')
  }
  const extra = Object.keys(value).filter((key) => key !== 'type' && key !== 'id' && key !== 'data')
  if (extra.length > 0) throw invalid(extra[0]!.slice(0, 64), `integration.emit takes only type, id and data; remove "${extra[0]!.slice(0, 64)}"`)
  const { type, id, data } = value as Record<string, unknown>
  if (typeof type !== 'string' || type === '') throw invalid('type', 'type must be a declared event type such as "contact.created"')
  if (typeof id !== 'string' || id.length < 1 || id.length > MAX_EVENT_ID_LENGTH) {
    throw invalid('id', `id must be the provider's stable identifier for the change: a string of 1 to ${MAX_EVENT_ID_LENGTH} characters`)
  }
  if (id.includes('\u0000')) throw invalid('id', 'id must not contain U+0000')
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw invalid('data', 'data must be a JSON object')
  let nul = false
  const text = JSON.stringify(data, (key, inner: unknown) => {
    if (key.includes('\u0000') || (typeof inner === 'string' && inner.includes('\u0000'))) nul = true
    return inner
  })
  // PostgreSQL's jsonb cannot hold U+0000.
  if (nul) throw invalid('data', 'data must not contain the character U+0000')
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes > MAX_EVENT_DATA_BYTES) {
    throw new ServiceError('INTEGRATION_EVENT_TOO_LARGE', `data is ${bytes} bytes as JSON; an event's data is at most ${MAX_EVENT_DATA_BYTES} bytes`,
      { details: { bytes, maxBytes: MAX_EVENT_DATA_BYTES } })
  }
  return { type, id, data: data as Record<string, unknown> }
}

/** The declared event of `contract` for `type`, or INTEGRATION_EVENT_TYPE_NOT_DECLARED. */
function declared(contract: IntegrationContract | null, type: string): { capability: string } {
  const event = contract?.events.find((e) => e.type === type)
  if (!event) {
    throw new ServiceError('INTEGRATION_EVENT_TYPE_NOT_DECLARED',
      `the integration declares no event type "${type.slice(0, 128)}"; add it under provides.integration.events in service.yaml`,
      { details: { type: type.slice(0, 128) } })
  }
  return event
}

/**
 * Records the event for every subscribed binding of the invocation's connection; returns
 * how many deliveries are new (0 when each was recorded before, and in development).
 *
 * @example
 * case 'integration': return await emitEvent({ db, clock }, { appId, releaseId, devName, integration, mayEmit, args })
 */
export async function emitEvent(deps: { db: Db; clock: Clock }, call: EmitCall): Promise<number> {
  if (call.integration === null) {
    throw new ServiceError('INTEGRATION_EMIT_UNAVAILABLE', 'integration.emit works only inside an integration invocation (an operation, sync or webhook Function)')
  }
  if (!call.mayEmit || !EMITTING_TRIGGERS.has(call.integration.trigger)) {
    throw new ServiceError('INTEGRATION_EMIT_UNAVAILABLE', 'integration.emit is unavailable during OAuth exchange and refresh; emit from an operation, sync or webhook Function',
      { details: { trigger: call.integration.trigger } })
  }
  const event = readEvent(call.args[0])
  if (call.devName !== '') {
    // A provider's development session: validated against its own revision, never delivered (spec 6.1).
    declared(await selectReleaseContract(deps.db, call.releaseId), event.type)
    return 0
  }
  const connectionId = call.integration.connectionId
  const facts = await selectEmitFacts(deps.db, { providerAppId: call.appId, connectionId })
  if (!facts) {
    throw new ServiceError('INTEGRATION_EMIT_UNAVAILABLE', 'the provider app publishes no integration now (is it active?)')
  }
  const contract = facts.contract
  const { capability } = declared(contract, event.type)
  const target = facts.connection
  if (!target || target.provider_app_id !== call.appId || target.integration_name !== contract.name) return 0
  const deliveries: NewDelivery[] = []
  for await (const candidate of everyCandidate(deps.db, { connectionId, firstPage: facts.candidates })) {
    const slot = slotHandler(candidate.declaration, { integration: contract.name, type: event.type })
    if (!('handler' in slot)) continue
    if (!candidate.capabilities.includes(capability)) continue
    const live = await receivingFacts(deps.db, { consumerAppId: candidate.consumer_app_id, slot: candidate.slot, integration: contract.name })
    const receives = live && await bindingReceives(deps, live, {
      bindingId: candidate.binding_id, providerAppId: call.appId, type: event.type, slotCapabilities: candidate.declaration!.capabilities,
    })
    if (receives !== true) continue
    deliveries.push({
      id: randomUUID(), bindingId: candidate.binding_id, consumerAppId: candidate.consumer_app_id, slot: candidate.slot,
      provider: candidate.declaration?.provider ?? 'custom',
    })
  }
  if (deliveries.length === 0) return 0
  // One statement: one transaction, all deliveries or none.
  return await insertDeliveries(deps.db, {
    deliveries,
    event,
    source: { providerAppId: call.appId, integration: contract.name, connectionId },
    now: deps.clock.now(),
  })
}
