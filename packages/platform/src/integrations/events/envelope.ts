/**
 * What an event handler receives (spec 2.9, 6.1): `{ id, type, occurredAt, integration,
 * provider, bindingId, data }`, run as the consumer app's system identity (`user: null`).
 * The delivery worker uses it for every attempt; development mode's
 * `inject_dev_integration_event` uses `runEventHandler` to hand an event to a development
 * session's slot handler.
 */
import type { App } from '../../apps/apps.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { FunctionHost, InvokeResult } from '../../functions/index.ts'

/** The handler's input. */
export interface EventEnvelope {
  /** The provider's stable identifier for the change: handlers deduplicate on it. */
  readonly id: string
  readonly type: string
  /** When the provider emitted it (ISO 8601). */
  readonly occurredAt: string
  /** The consumer's slot name. */
  readonly integration: string
  /** The slot's `provider`: `custom` for organisation-built integrations (spec 2.7). */
  readonly provider: string
  readonly bindingId: string
  readonly data: Record<string, unknown>
}

/**
 * @example
 * eventEnvelope({ id: 'c-1', type: 'contact.created', occurredAt: new Date(), slot: 'crm', provider: 'custom', bindingId, data: {} })
 */
export function eventEnvelope(input: {
  id: string; type: string; occurredAt: Date; slot: string; provider: string; bindingId: string; data: Record<string, unknown>
}): EventEnvelope {
  return {
    id: input.id, type: input.type, occurredAt: input.occurredAt.toISOString(), integration: input.slot, provider: input.provider,
    bindingId: input.bindingId, data: input.data,
  }
}

/**
 * Runs the system Function `handler` of the app's active production release (`devName` '' or
 * absent) or of a development namespace's active release, with `envelope` as input and no
 * user. FUNCTION_NOT_FOUND when that release has no such system Function.
 *
 * @example
 * const result = await runEventHandler(functions, { app, devName: 'alice', handler: 'onContact', envelope })
 */
export async function runEventHandler(
  functions: FunctionHost,
  input: { app: App; devName?: string; handler: string; envelope: EventEnvelope; requestId?: string; awaitLogs?: boolean },
): Promise<InvokeResult> {
  const devName = input.devName ?? ''
  const fn = devName === '' ? await functions.resolve(input.app, input.handler) : await functions.resolveDev(input.app, devName, input.handler)
  if (fn === null || fn.declaration.access !== 'system') {
    throw new ServiceError('FUNCTION_NOT_FOUND', `the event handler "${input.handler}" is not a declared system Function`, { details: { function: input.handler } })
  }
  return await functions.run(fn, {
    input: input.envelope, user: null,
    ...(input.requestId === undefined ? {} : { requestId: input.requestId }), ...(input.awaitLogs ? { awaitLogs: true } : {}),
  })
}
