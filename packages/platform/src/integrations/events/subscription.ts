/**
 * Who receives an event (spec 2.7, 6.1): an `account: app` slot of the consumer's active
 * production release that names the integration, declares `events.function` and, when it
 * lists `events.types`, the event's type; bound by a binding that is active now (bindings/
 * standingFrom: neither suspended nor revoked) and grants the event's capability. Checked
 * when an event is emitted (to record deliveries) and again at every delivery attempt (a
 * binding revoked or a slot changed meanwhile stops delivery).
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { ErrorCode } from '../../lib/errors.ts'
import type { IntegrationSlot } from '../../manifest/index.ts'
import { callFacts, settleStanding, type CallFacts } from '../bindings/index.ts'

/** Why a binding does not receive an event. */
export interface Refusal {
  readonly code: ErrorCode
  readonly message: string
}

/** The slot's handler Function when the slot subscribes to `type` of `integration`, else why not. */
export function slotHandler(slot: IntegrationSlot | null, event: { integration: string; type: string }): { handler: string } | Refusal {
  if (slot === null) return { code: 'INTEGRATION_EVENT_NOT_SUBSCRIBED', message: 'the consumer\'s active release no longer declares the slot' }
  if (slot.integration !== event.integration || slot.account !== 'app') {
    return { code: 'INTEGRATION_EVENT_NOT_SUBSCRIBED', message: 'the slot no longer uses this integration with account: app' }
  }
  if (slot.events === undefined) return { code: 'INTEGRATION_EVENT_NOT_SUBSCRIBED', message: 'the slot declares no events.function' }
  if (slot.events.types !== undefined && !slot.events.types.includes(event.type)) {
    return { code: 'INTEGRATION_EVENT_NOT_SUBSCRIBED', message: `the slot's events.types does not list "${event.type}"` }
  }
  return { handler: slot.events.function }
}

/**
 * The live facts of the consumer's slot binding (bindings' callFacts: one statement): the
 * consumer app, the contract its organisation publishes under the integration, the slot's
 * live binding and its standing facts. Null when the app is gone.
 */
export async function receivingFacts(db: Db, input: { consumerAppId: string; slot: string; integration: string }): Promise<CallFacts | null> {
  return await callFacts(db, { appId: input.consumerAppId, integration: input.integration, slot: input.slot, userId: null })
}

/**
 * Whether the binding `bindingId` is still the slot's live binding, reaches the provider
 * `providerAppId`'s published contract, which declares `type`, stands active now (revoking
 * it for good when it must, like a broker call) and grants the type's capability, which the
 * slot (`slotCapabilities`, its active release's declaration) still requests: a binding is
 * limited to what both sides declare (spec 2.8), as the broker's calls are.
 */
export async function bindingReceives(
  deps: { db: Db; clock: Clock },
  facts: CallFacts,
  input: { bindingId: string; providerAppId: string; type: string; slotCapabilities: readonly string[] },
): Promise<true | Refusal> {
  if (!facts.binding || facts.binding.id !== input.bindingId) {
    return { code: 'INTEGRATION_NOT_BOUND', message: 'the slot is no longer bound by this binding' }
  }
  if (!facts.published || facts.published.providerApp.id !== input.providerAppId) {
    return { code: 'INTEGRATION_NOT_FOUND', message: 'the provider app no longer publishes the integration to the consumer\'s organisation' }
  }
  const event = facts.published.contract.events.find((e) => e.type === input.type)
  if (!event) return { code: 'INTEGRATION_EVENT_TYPE_NOT_DECLARED', message: `the integration no longer declares the event type "${input.type}"` }
  if (!facts.standing) return { code: 'INTEGRATION_NOT_BOUND', message: 'the binding\'s connection is gone' }
  const standing = await settleStanding(deps, facts.standing)
  if (standing === 'revoked') return { code: 'INTEGRATION_BINDING_REVOKED', message: 'the binding was revoked' }
  if (standing === 'suspended') return { code: 'INTEGRATION_BINDING_SUSPENDED', message: 'the binding is suspended: the person who bound it may not use the integration now' }
  if (!facts.binding.capabilities.includes(event.capability)) {
    return { code: 'INTEGRATION_CAPABILITY_NOT_GRANTED', message: `the binding does not grant "${event.capability}"` }
  }
  if (!input.slotCapabilities.includes(event.capability)) {
    return { code: 'INTEGRATION_CAPABILITY_NOT_GRANTED', message: `the slot no longer requests "${event.capability}"` }
  }
  return true
}
