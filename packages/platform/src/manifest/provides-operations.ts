// The operations and events of a provider contract (`provides.integration.operations`
// and `.events`): what consumers may call or receive, under which capability, handled
// by which system Function, with optional schemas and static `fake` values for
// development. Fakes are bounded by their serialized JSON size (spec section 8).

import { isMap } from 'yaml'
import { jsonByteLength, readJsonValue } from './json-value.ts'
import { readJsonSchema } from './json-schema.ts'
import { EVENT_TYPE, OPERATION_NAME } from './names.ts'
import type { ProblemCollector } from './problems.ts'
import { describeNode, member, readMapping, readString, stringField, type Fields, type Item } from './read-fields.ts'
import { reportDuplicateNames, systemFunctionField, type SectionContext } from './section-context.ts'
import type { IntegrationEvent, IntegrationOperation, JsonObject, JsonSchema, JsonValue } from './types.ts'

/** 16 KiB: the largest serialized operation `fake`. */
export const MAX_OPERATION_FAKE_BYTES = 16 * 1024
/** 64 KiB: the largest serialized event `fake` (the event data limit). */
export const MAX_EVENT_FAKE_BYTES = 64 * 1024

/** Declared capability names with their line, for references. */
export type CapabilityNames = ReadonlyMap<string, number>

export function readOperations(context: SectionContext, items: readonly Item[], capabilities: CapabilityNames): IntegrationOperation[] | undefined {
  const operations: IntegrationOperation[] = []
  const names: { name: string; item: Item }[] = []
  let valid = true
  for (const item of items) {
    const operation = readOperation(context, item, { capabilities, names })
    if (operation === undefined) valid = false
    else operations.push(operation)
  }
  reportDuplicateNames(context.problems, names, 'operation')
  return valid ? operations : undefined
}

function readOperation(
  context: SectionContext,
  item: Item,
  shared: { capabilities: CapabilityNames; names: { name: string; item: Item }[] },
): IntegrationOperation | undefined {
  const { problems } = context
  const fields = readMapping(problems, item, 'provides.integration.operations[]')
  if (fields === undefined) return undefined
  const nameItem = member(problems, fields, 'name', true)
  const name = nameItem === undefined ? undefined : readString(problems, nameItem, OPERATION_NAME)
  if (name !== undefined && nameItem !== undefined) shared.names.push({ name, item: nameItem })
  const capability = capabilityField(context, fields, shared.capabilities)
  const handler = systemFunctionField(context, fields, 'function', { required: true, role: 'an operation Function' })
  const description = stringField(problems, fields, 'description', { required: true })
  const input = schemaField(problems, fields, 'input')
  const output = schemaField(problems, fields, 'output')
  const fake = operationFake(problems, fields)
  if (
    name === undefined || capability === undefined || handler === undefined || description === undefined ||
    input === 'invalid' || output === 'invalid' || fake === 'invalid'
  ) {
    return undefined
  }
  return {
    name,
    capability,
    function: handler,
    description,
    ...(input === undefined ? {} : { input }),
    ...(output === undefined ? {} : { output }),
    ...(fake === undefined ? {} : { fake: fake.value }),
  }
}

export function readEvents(context: SectionContext, items: readonly Item[], capabilities: CapabilityNames): IntegrationEvent[] | undefined {
  const events: IntegrationEvent[] = []
  const types: { name: string; item: Item }[] = []
  let valid = true
  for (const item of items) {
    const event = readEvent(context, item, { capabilities, types })
    if (event === undefined) valid = false
    else events.push(event)
  }
  reportDuplicateNames(context.problems, types, 'event type')
  return valid ? events : undefined
}

function readEvent(
  context: SectionContext,
  item: Item,
  shared: { capabilities: CapabilityNames; types: { name: string; item: Item }[] },
): IntegrationEvent | undefined {
  const { problems } = context
  const fields = readMapping(problems, item, 'provides.integration.events[]')
  if (fields === undefined) return undefined
  const typeItem = member(problems, fields, 'type', true)
  const type = typeItem === undefined ? undefined : readString(problems, typeItem, EVENT_TYPE)
  if (type !== undefined && typeItem !== undefined) shared.types.push({ name: type, item: typeItem })
  const capability = capabilityField(context, fields, shared.capabilities)
  const description = stringField(problems, fields, 'description', { required: true })
  const fake = eventFake(problems, fields)
  if (type === undefined || capability === undefined || description === undefined || fake === 'invalid') return undefined
  return { type, capability, description, ...(fake === undefined ? {} : { fake }) }
}

function capabilityField(context: SectionContext, fields: Fields, capabilities: CapabilityNames): string | undefined {
  const item = member(context.problems, fields, 'capability', true)
  if (item === undefined) return undefined
  const capability = readString(context.problems, item)
  if (capability === undefined) return undefined
  if (capabilities.has(capability)) return capability
  const declared = capabilities.size === 0 ? 'none are declared' : `declared: ${[...capabilities.keys()].join(', ')}`
  context.problems.report(
    'MANIFEST_CAPABILITY_NOT_DECLARED',
    item.node,
    item.path,
    `the capability "${capability}" is not declared in provides.integration.capabilities (${declared})`,
  )
  return undefined
}

function schemaField(problems: ProblemCollector, fields: Fields, key: 'input' | 'output'): JsonSchema | undefined | 'invalid' {
  const item = member(problems, fields, key, false)
  if (item === undefined) return undefined
  return readJsonSchema(problems, item) ?? 'invalid'
}

/**
 * An operation's fake: any JSON value, null included (`fake: null` is a fake result of
 * null, unlike an absent fake), serialized to at most 16 KiB.
 */
function operationFake(problems: ProblemCollector, fields: Fields): { value: JsonValue } | undefined | 'invalid' {
  const entry = fields.entries.get('fake')
  if (entry === undefined) return undefined
  const item: Item = { node: entry.value ?? entry.key, path: `${fields.path}.fake` }
  const value = entry.value === null ? null : readJsonValue(problems, item)
  if (value === undefined) return 'invalid'
  if (!fitsFakeLimit(problems, item, value, MAX_OPERATION_FAKE_BYTES)) return 'invalid'
  return { value }
}

/** An event's fake payload: a JSON object, serialized to at most 64 KiB. */
function eventFake(problems: ProblemCollector, fields: Fields): JsonObject | undefined | 'invalid' {
  const item = member(problems, fields, 'fake', false)
  if (item === undefined) return undefined
  if (!isMap(item.node)) {
    problems.report('MANIFEST_WRONG_TYPE', item.node, item.path, `an event fake is the event's data object, a mapping, but found ${describeNode(item.node)}`)
    return 'invalid'
  }
  const value = readJsonValue(problems, item)
  if (value === undefined) return 'invalid'
  if (!fitsFakeLimit(problems, item, value, MAX_EVENT_FAKE_BYTES)) return 'invalid'
  return value as JsonObject
}

function fitsFakeLimit(problems: ProblemCollector, item: Item, value: JsonValue, limit: number): boolean {
  const size = jsonByteLength(value)
  if (size <= limit) return true
  problems.report(
    'MANIFEST_FAKE_TOO_LARGE',
    item.node,
    item.path,
    `the fake is ${size} bytes as JSON; the limit is ${limit} bytes (${limit / 1024} KiB). Shorten it to a representative sample`,
  )
  return false
}
