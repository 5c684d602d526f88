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
import { activeReleaseOf } from '../../namespaces/dev-names.ts'
import { failureResponse, type FunctionHost } from '../../functions/index.ts'
import { listFunctionLogs, MAX_LOG_PAGE } from '../../functions/context-log.ts'
import { activeBinding, publishedContract } from '../bindings/index.ts'
import { selectReleaseManifest } from '../bindings/queries.ts'
import { eventEnvelope, readEvent, runEventHandler, slotHandler } from '../events/index.ts'

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
  const data = input.data === undefined ? event.fake : input.data
  if (data === undefined) {
    throw new ServiceError('VALIDATION_FAILED', `give data: the event type "${event.type}" declares no fake payload`, { details: { field: 'data' } })
  }
  // The checks emit makes (id, data a JSON object of at most 64 KiB), with emit's codes.
  const checked = readEvent({ type: event.type, id: input.id === undefined ? `dev-${randomUUID()}` : input.id, data })
  // Who would receive it in production (integrations/events slotHandler), requesting the event's capability.
  const slots = Object.entries(manifest.integrations).flatMap(([name, slot]) => {
    const receives = slotHandler(slot, { integration, type: event.type })
    return 'handler' in receives && slot.capabilities.includes(event.capability) ? [{ name, slot, handler: receives.handler }] : []
  })
  if (slots.length === 0) {
    throw new ServiceError('INTEGRATION_EVENT_NOT_SUBSCRIBED',
      `no slot of the development release of ${app.slug} (${devName}) receives "${event.type}" events of "${integration}": declare events.function on an account: app slot that requests "${event.capability}"`,
      { details: { integration, type: event.type } })
  }
  const occurredAt = deps.clock.now()
  const deliveries: InjectedDelivery[] = []
  for (const { name, slot, handler } of slots) {
    const binding = await activeBinding(deps.db, { appId: app.id, slot: name, userId: null })
    const envelope = eventEnvelope({
      id: checked.id, type: checked.type, occurredAt, slot: name, provider: slot.provider, bindingId: binding?.id ?? UNBOUND_BINDING_ID, data: checked.data,
    })
    const requestId = randomUUID()
    const result = await runEventHandler(deps.host(), { app, devName, handler, envelope, requestId, awaitLogs: true })
    const page = await listFunctionLogs(deps.db, { appId: app.id, devName, requestId, limit: MAX_LOG_PAGE })
    const logs = [...page.lines].reverse()
    if (result.ok) {
      deliveries.push({ slot: name, function: handler, requestId, ok: true, value: result.value, logs })
    } else {
      const { status, body } = failureResponse(result.error, { environment: 'development' })
      deliveries.push({ slot: name, function: handler, requestId, ok: false, status, error: body.error, logs })
    }
  }
  return { event: { id: checked.id, type: checked.type }, deliveries }
}
