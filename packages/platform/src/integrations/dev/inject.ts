/**
 * `inject_dev_integration_event` (spec 4.5, 6.1 "Development"): a made-up event delivered to
 * a consumer's development namespace, since production events never reach one. The event
 * must be declared by the integration the organisation publishes; `data` defaults to its
 * declared `fake`. Every slot of the namespace's release that would receive it in production
 * (an `account: app` slot of that integration with `events.function`, requesting the event's
 * capability, its `types` naming the type when given) runs its handler at once, as the app's
 * system identity, in the namespace (its schema, secrets and logs), and the answer carries
 * each handler's outcome and log lines, as a development invocation's does. Nothing is
 * stored: no delivery record, no retry.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { App } from '../../apps/apps.ts'
import { activeReleaseOf } from '../../deploy/dev-names.ts'
import type { IntegrationEvent, IntegrationSlot } from '../../manifest/index.ts'
import { failureResponse, type FunctionHost } from '../../functions/index.ts'
import { listFunctionLogs, MAX_LOG_PAGE } from '../../functions/context-log.ts'
import { activeBinding, publishedContract } from '../bindings/index.ts'
import { selectReleaseManifest } from '../bindings/queries.ts'

/** Longest JSON text of an event's `data` (spec 8: 64 KiB). */
export const MAX_EVENT_DATA_BYTES = 64 * 1024
/** The `bindingId` a handler sees for a slot not bound in production: the nil UUID. */
export const UNBOUND_BINDING_ID = '00000000-0000-0000-0000-000000000000'

export interface InjectDeps {
  readonly db: Db
  readonly clock: Clock
  readonly host: () => FunctionHost
}

export interface InjectedDelivery {
  readonly slot: string
  readonly function: string
  readonly requestId: string
  readonly ok: boolean
  readonly value?: unknown
  readonly status?: number
  readonly error?: unknown
  readonly logs: readonly unknown[]
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

function eventData(event: IntegrationEvent, data: unknown): Record<string, unknown> {
  const chosen = data === undefined ? event.fake : data
  if (chosen === undefined) {
    throw new ServiceError('VALIDATION_FAILED', `give data: the event type "${event.type}" declares no fake payload`, { details: { field: 'data' } })
  }
  // The codes emit answers for the same faults (integrations/events).
  if (!isPlainObject(chosen)) throw new ServiceError('INTEGRATION_EVENT_INVALID', 'data is a JSON object', { details: { field: 'data' } })
  if (Buffer.byteLength(JSON.stringify(chosen)) > MAX_EVENT_DATA_BYTES) {
    throw new ServiceError('INTEGRATION_EVENT_TOO_LARGE', `data is at most ${MAX_EVENT_DATA_BYTES} bytes of JSON`, { details: { field: 'data', maxBytes: MAX_EVENT_DATA_BYTES } })
  }
  return chosen
}

function subscribes(slot: IntegrationSlot, integration: string, event: IntegrationEvent): boolean {
  return slot.integration === integration && slot.account === 'app' && slot.events !== undefined
    && slot.capabilities.includes(event.capability)
    && (slot.events.types === undefined || slot.events.types.includes(event.type))
}

/**
 * @example
 * const { deliveries } = await injectDevEvent(deps, { app, devName: 'ada', integration: 'orders', type: 'order.created' })
 */
export async function injectDevEvent(
  deps: InjectDeps,
  input: { app: App; devName: string; integration: string; type: unknown; id?: unknown; data?: unknown },
): Promise<{ event: { id: string; type: string }; deliveries: InjectedDelivery[] }> {
  const { app, devName, integration } = input
  if (typeof input.type !== 'string' || input.type.length === 0) throw new ServiceError('VALIDATION_FAILED', 'type is the event type, a string', { details: { field: 'type' } })
  if (input.id !== undefined && (typeof input.id !== 'string' || input.id.length === 0 || input.id.length > 255)) {
    throw new ServiceError('VALIDATION_FAILED', 'id is a string of 1 to 255 characters', { details: { field: 'id' } })
  }
  const releaseId = await activeReleaseOf(deps.db, app.id, devName)
  const manifest = releaseId === null ? null : await selectReleaseManifest(deps.db, releaseId)
  if (!manifest) {
    throw new ServiceError('DEV_NAMESPACE_NOT_FOUND', `the development namespace ${devName} has no release; deploy to it with: service deploy <dir> --dev ${devName}`)
  }
  const published = await publishedContract(deps.db, { organisationId: app.organisationId, name: integration })
  if (!published) {
    throw new ServiceError('INTEGRATION_NOT_FOUND', `no active app of the organisation publishes the integration "${integration.slice(0, 64)}"`,
      { details: { integration: integration.slice(0, 64) } })
  }
  const event = published.contract.events.find((declared) => declared.type === input.type)
  if (!event) {
    throw new ServiceError('INTEGRATION_EVENT_TYPE_NOT_DECLARED', `the integration "${integration}" declares no event type "${input.type.slice(0, 128)}"`,
      { details: { integration, type: input.type.slice(0, 128) } })
  }
  const data = eventData(event, input.data)
  const slots = Object.entries(manifest.integrations).filter(([, slot]) => subscribes(slot, integration, event))
  if (slots.length === 0) {
    throw new ServiceError('INTEGRATION_EVENT_NOT_SUBSCRIBED',
      `no slot of the development release of ${app.slug} (${devName}) receives "${event.type}" events of "${integration}": declare events.function on an account: app slot that requests "${event.capability}"`,
      { details: { integration, type: event.type } })
  }
  const id = typeof input.id === 'string' ? input.id : `dev-${randomUUID()}`
  const occurredAt = deps.clock.now().toISOString()
  const host = deps.host()
  const deliveries: InjectedDelivery[] = []
  for (const [slotName, slot] of slots) {
    const functionName = slot.events!.function
    const fn = await host.resolveDev(app, devName, functionName)
    if (fn === null) throw new ServiceError('FUNCTION_NOT_FOUND', `the development namespace ${devName} has no Function ${functionName}`)
    const binding = await activeBinding(deps.db, { appId: app.id, slot: slotName, userId: null })
    const envelope = { id, type: event.type, occurredAt, integration: slotName, provider: slot.provider, bindingId: binding?.id ?? UNBOUND_BINDING_ID, data }
    const requestId = randomUUID()
    const result = await host.run(fn, { input: envelope, user: null, requestId, awaitLogs: true })
    const page = await listFunctionLogs(deps.db, { appId: app.id, devName, requestId, limit: MAX_LOG_PAGE })
    const logs = [...page.lines].reverse()
    if (result.ok) {
      deliveries.push({ slot: slotName, function: functionName, requestId, ok: true, value: result.value, logs })
    } else {
      const { status, body } = failureResponse(result.error, { environment: 'development' })
      deliveries.push({ slot: slotName, function: functionName, requestId, ok: false, status, error: body.error, logs })
    }
  }
  return { event: { id, type: event.type }, deliveries }
}
