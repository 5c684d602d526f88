// The `integrations` section: consumer slots (spec 2.7). Each slot names an integration
// another app of the organisation publishes, whose account it uses, and the capabilities
// it needs; an `account: app` slot may also receive the integration's events. When the
// caller knows what is published, slots that cannot be satisfied yet produce warnings.

import type { Node } from 'yaml'
import { CAPABILITY_NAME, EVENT_TYPE, INTEGRATION_NAME, LOWER_SNAKE_NAME } from './names.ts'
import {
  choiceField,
  freeMembers,
  member,
  readMapping,
  stringEntries,
  stringField,
  stringListField,
  type Fields,
  type Item,
} from './read-fields.ts'
import { requireSdk, systemFunctionField, type SectionContext } from './section-context.ts'
import type { IntegrationSlot, PublishedIntegration, SlotAccount, SlotEvents } from './types.ts'

export const SLOT_ACCOUNTS = ['app', 'calling_user'] as const satisfies readonly SlotAccount[]

export function readIntegrationSlots(context: SectionContext, root: Fields): Record<string, IntegrationSlot> | undefined {
  const { problems } = context
  const item = member(problems, root, 'integrations', false)
  if (item === undefined) return {}
  const slots = readMapping(problems, item, 'integrations')
  if (slots === undefined) return undefined
  if (slots.entries.size > 0) requireSdk(context, item, { gate: 'integrationSlots', feature: 'integration slots' })
  const result: [string, IntegrationSlot][] = []
  let valid = true
  for (const slot of freeMembers(slots)) {
    const value = readSlot(context, slot)
    if (value === undefined) valid = false
    else result.push([slot.name, value])
  }
  return valid ? Object.fromEntries(result) : undefined
}

function readSlot(
  context: SectionContext,
  slot: { name: string; key: Node; path: string; item: Item | undefined },
): IntegrationSlot | undefined {
  const { problems } = context
  const validName = LOWER_SNAKE_NAME.pattern.test(slot.name)
  if (!validName) {
    problems.report('MANIFEST_INVALID_FORMAT', slot.key, slot.path, `"${slot.name}" is not a valid slot name: ${LOWER_SNAKE_NAME.format}`)
  }
  if (slot.item === undefined) {
    problems.report('MANIFEST_MISSING_FIELD', slot.key, slot.path, `the slot "${slot.name}" has no fields; declare provider, integration, account, cardinality and capabilities`)
    return undefined
  }
  const fields = readMapping(problems, slot.item, 'integrations.<slot>')
  if (fields === undefined) return undefined
  const provider = choiceField(problems, fields, 'provider', { required: true, choices: ['custom'] })
  const integration = stringField(problems, fields, 'integration', { required: true, ...INTEGRATION_NAME })
  const account = choiceField(problems, fields, 'account', { required: true, choices: SLOT_ACCOUNTS })
  const cardinality = choiceField(problems, fields, 'cardinality', { required: true, choices: ['one'] })
  const capabilities = stringListField(problems, fields, 'capabilities', { required: true, minItems: 1, ...CAPABILITY_NAME })
  const { events, eventFields } = readSlotEvents(context, fields, account)
  if (integration !== undefined) warnAboutPublication(context, { fields, eventFields, integration })
  if (
    !validName || provider === undefined || integration === undefined || account === undefined ||
    cardinality === undefined || capabilities === undefined || events === 'invalid'
  ) {
    return undefined
  }
  return { provider, integration, account, cardinality, capabilities, ...(events === undefined ? {} : { events }) }
}

function readSlotEvents(
  context: SectionContext,
  fields: Fields,
  account: SlotAccount | undefined,
): { events: SlotEvents | undefined | 'invalid'; eventFields: Fields | undefined } {
  const { problems } = context
  const item = member(problems, fields, 'events', false)
  if (item === undefined) return { events: undefined, eventFields: undefined }
  if (account === 'calling_user') {
    problems.report(
      'MANIFEST_SLOT_EVENTS_NOT_ALLOWED',
      item.node,
      item.path,
      'events are only delivered to slots with account: app; remove events or use account: app',
    )
    return { events: 'invalid', eventFields: undefined }
  }
  const eventFields = readMapping(problems, item, 'integrations.<slot>.events')
  if (eventFields === undefined) return { events: 'invalid', eventFields }
  const handler = systemFunctionField(context, eventFields, 'function', { required: true, role: 'an integration event handler' })
  const typesGiven = member(problems, eventFields, 'types', false) !== undefined
  const types = stringListField(problems, eventFields, 'types', { required: false, ...EVENT_TYPE })
  if (handler === undefined || (typesGiven && types === undefined)) return { events: 'invalid', eventFields }
  return { events: { function: handler, ...(types === undefined ? {} : { types }) }, eventFields }
}

/** Warnings when the caller knows which integrations other active apps publish. */
function warnAboutPublication(
  context: SectionContext,
  slot: { fields: Fields; eventFields: Fields | undefined; integration: string },
): void {
  const { fields, eventFields, integration } = slot
  const published = context.validation.publishedIntegrations
  if (published === undefined) return
  const { problems } = context
  const offer = published.get(integration)
  if (offer === undefined) {
    const at = member(problems, fields, 'integration', true)
    if (at !== undefined) {
      problems.report(
        'MANIFEST_INTEGRATION_NOT_PUBLISHED',
        at.node,
        at.path,
        `no other active app of this organisation publishes the integration "${integration}" yet; the slot cannot be connected until one does`,
      )
    }
    return
  }
  warnAboutMissing(context, { entries: stringEntries(fields, 'capabilities'), offered: offer.capabilities, kind: 'capability', integration, offer })
  if (eventFields === undefined) return
  warnAboutMissing(context, { entries: stringEntries(eventFields, 'types'), offered: offer.eventTypes, kind: 'event type', integration, offer })
}

function warnAboutMissing(
  context: SectionContext,
  check: {
    entries: { value: string; item: Item }[]
    offered: readonly string[]
    kind: 'capability' | 'event type'
    integration: string
    offer: PublishedIntegration
  },
): void {
  for (const { value, item } of check.entries) {
    if (check.offered.includes(value)) continue
    const offered = check.offered.length === 0 ? 'none' : check.offered.join(', ')
    context.problems.report(
      check.kind === 'capability' ? 'MANIFEST_CAPABILITY_NOT_OFFERED' : 'MANIFEST_EVENT_TYPE_NOT_OFFERED',
      item.node,
      item.path,
      `the integration "${check.integration}" (published by app "${check.offer.appSlug}") does not ${check.kind === 'capability' ? 'offer the capability' : 'declare the event type'} "${value}" (it has: ${offered})`,
    )
  }
}
