// Typed reading of YAML mappings, arrays and scalars for the manifest sections. Each
// reader reports what is wrong (missing, wrong type, out of range, bad format, unknown
// field) at the offending node and returns undefined for an absent or invalid value, so
// a section can read all its fields and let every problem surface at once.
//
// Absent and null are the same for optional fields (`secrets:` with every entry
// commented out is simply no secrets); a required field that is null is "missing".

import { isAlias, isMap, isPair, isScalar, isSeq, type Node, type YAMLMap } from 'yaml'
import { allowedFields, misplacedFieldHint, type ManifestMapping } from './fields.ts'
import { fieldPath, itemPath, type ProblemCollector } from './problems.ts'

export interface FieldEntry {
  /** The key node (positions for "unknown field" and "has no value"). */
  readonly key: Node
  /** The value node; null when the key has no value at all. */
  readonly value: Node | null
}

export interface Fields {
  readonly node: YAMLMap
  readonly path: string
  /** Members by key text, in document order; the first wins when a key repeats. */
  readonly entries: ReadonlyMap<string, FieldEntry>
}

export interface Item {
  readonly node: Node
  readonly path: string
}

export interface StringRule {
  /** The value must match; `format` says in words what is expected. */
  readonly pattern?: RegExp
  readonly format?: string
  readonly maxLength?: number
}

export interface IntegerRule {
  readonly min: number
  readonly max: number
}

export interface ListRule {
  readonly minItems?: number
  readonly maxItems?: number
}

/**
 * Reads the mapping `mapping` names in MANIFEST_FIELDS: reports a non-mapping value and
 * every key the catalog does not list for it. A mapping with free keys (secrets,
 * integrations) takes any key.
 */
export function readMapping(
  problems: ProblemCollector,
  item: Item,
  mapping: ManifestMapping,
): Fields | undefined {
  const { node, path } = item
  const allowed = allowedFields(mapping)
  if (!acceptsValue(problems, item)) return undefined
  if (!isMap(node)) {
    problems.report('MANIFEST_WRONG_TYPE', node, path, `expected a mapping of fields but found ${describeNode(node)}`)
    return undefined
  }
  const entries = new Map<string, FieldEntry>()
  for (const pair of node.items) {
    if (!isPair(pair)) continue
    const key = pair.key as Node | null
    if (!isScalar(key) || key.value === null) {
      problems.report('MANIFEST_WRONG_TYPE', key ?? node, path, 'mapping keys must be plain names')
      continue
    }
    const name = String(key.value)
    if (allowed !== null && !allowed.includes(name)) {
      problems.report('MANIFEST_UNKNOWN_FIELD', key, fieldPath(path, name), unknownFieldMessage(name, { allowed, mapping }))
      continue
    }
    if (!entries.has(name)) entries.set(name, { key, value: (pair.value as Node | null) ?? null })
  }
  return { node, path, entries }
}

/**
 * The value of a member, or undefined when it is absent or null. A required member that
 * is absent is reported at the parent mapping; one with no value, at its key.
 */
export function member(problems: ProblemCollector, fields: Fields, key: string, required: boolean): Item | undefined {
  const path = fieldPath(fields.path, key)
  const entry = fields.entries.get(key)
  if (entry === undefined) {
    if (required) problems.report('MANIFEST_MISSING_FIELD', fields.node, path, `the required field "${key}" is missing`)
    return undefined
  }
  if (entry.value === null || isNullScalar(entry.value)) {
    if (required) problems.report('MANIFEST_MISSING_FIELD', entry.key, path, `the required field "${key}" has no value`)
    return undefined
  }
  return { node: entry.value, path }
}

export function mappingField(
  problems: ProblemCollector,
  fields: Fields,
  key: string,
  options: { required: boolean; mapping: ManifestMapping },
): Fields | undefined {
  const item = member(problems, fields, key, options.required)
  return item === undefined ? undefined : readMapping(problems, item, options.mapping)
}

export function readString(problems: ProblemCollector, item: Item, rule: StringRule = {}): string | undefined {
  const { node, path } = item
  if (!acceptsValue(problems, item)) return undefined
  if (!isScalar(node) || typeof node.value !== 'string') {
    problems.report('MANIFEST_WRONG_TYPE', node, path, `expected a string but found ${describeNode(node)}`)
    return undefined
  }
  const value = node.value
  if (value.trim() === '') {
    problems.report('MANIFEST_EMPTY_STRING', node, path, 'must not be empty')
    return undefined
  }
  if (rule.maxLength !== undefined && value.length > rule.maxLength) {
    problems.report('MANIFEST_TOO_LONG', node, path, `is ${value.length} characters long; the limit is ${rule.maxLength}`)
    return undefined
  }
  if (rule.pattern !== undefined && !rule.pattern.test(value)) {
    problems.report('MANIFEST_INVALID_FORMAT', node, path, `"${value}" is not valid: ${rule.format ?? `it must match ${String(rule.pattern)}`}`)
    return undefined
  }
  return value
}

export function stringField(
  problems: ProblemCollector,
  fields: Fields,
  key: string,
  options: StringRule & { required: boolean },
): string | undefined {
  const item = member(problems, fields, key, options.required)
  return item === undefined ? undefined : readString(problems, item, options)
}

export function integerField(
  problems: ProblemCollector,
  fields: Fields,
  key: string,
  options: IntegerRule & { required: boolean },
): number | undefined {
  const item = member(problems, fields, key, options.required)
  return item === undefined ? undefined : readInteger(problems, item, options)
}

export function readInteger(problems: ProblemCollector, item: Item, rule: IntegerRule): number | undefined {
  const { node, path } = item
  if (!acceptsValue(problems, item)) return undefined
  if (!isScalar(node) || typeof node.value !== 'number') {
    problems.report('MANIFEST_WRONG_TYPE', node, path, `expected a whole number but found ${describeNode(node)}`)
    return undefined
  }
  // 30.0, 1e3 and 0x1e are numbers to YAML, but a manifest states integers plainly.
  if (!Number.isInteger(node.value) || !/^[-+]?[0-9]+$/.test(node.source ?? String(node.value))) {
    problems.report('MANIFEST_NOT_INTEGER', node, path, `${node.source ?? node.value} is not a whole number; write it as digits only, such as ${Math.round(node.value)}`)
    return undefined
  }
  if (node.value < rule.min || node.value > rule.max) {
    problems.report('MANIFEST_OUT_OF_RANGE', node, path, `${node.value} is out of range; use ${rule.min} to ${rule.max}`)
    return undefined
  }
  return node.value
}

export function booleanField(
  problems: ProblemCollector,
  fields: Fields,
  key: string,
): boolean | undefined {
  const item = member(problems, fields, key, false)
  if (item === undefined || !acceptsValue(problems, item)) return undefined
  if (!isScalar(item.node) || typeof item.node.value !== 'boolean') {
    problems.report('MANIFEST_WRONG_TYPE', item.node, item.path, `expected true or false but found ${describeNode(item.node)}`)
    return undefined
  }
  return item.node.value
}

export function choiceField<const Choice extends string>(
  problems: ProblemCollector,
  fields: Fields,
  key: string,
  options: { required: boolean; choices: readonly Choice[] },
): Choice | undefined {
  const item = member(problems, fields, key, options.required)
  if (item === undefined) return undefined
  const value = readString(problems, item)
  if (value === undefined) return undefined
  if (isChoice(value, options.choices)) return value
  const hint = options.choices.find((choice) => choice.toLowerCase() === value.toLowerCase())
  problems.report(
    'MANIFEST_INVALID_CHOICE',
    item.node,
    item.path,
    hint === undefined
      ? `"${value}" is not allowed; use ${listOfChoices(options.choices)}`
      : `"${value}" is not allowed; values are case-sensitive, write "${hint}"`,
  )
  return undefined
}

function isChoice<const Choice extends string>(value: string, choices: readonly Choice[]): value is Choice {
  return (choices as readonly string[]).includes(value)
}

/**
 * Reads an array's entries (not their contents); reports size limits. Too many entries
 * is reported but the entries are still returned so their own problems surface too.
 */
export function arrayField(
  problems: ProblemCollector,
  fields: Fields,
  key: string,
  options: ListRule & { required: boolean },
): Item[] | undefined {
  const item = member(problems, fields, key, options.required)
  return item === undefined ? undefined : readArray(problems, item, options)
}

export function readArray(problems: ProblemCollector, item: Item, rule: ListRule = {}): Item[] | undefined {
  const { node, path } = item
  if (!acceptsValue(problems, item)) return undefined
  if (!isSeq(node)) {
    problems.report('MANIFEST_WRONG_TYPE', node, path, `expected an array (a "- " list or [a, b]) but found ${describeNode(node)}`)
    return undefined
  }
  const count = node.items.length
  if (rule.minItems !== undefined && count < rule.minItems) {
    problems.report(
      'MANIFEST_EMPTY_ARRAY',
      node,
      path,
      rule.minItems === 1 ? 'must list at least one entry' : `must list at least ${rule.minItems} entries`,
    )
    return undefined
  }
  if (rule.maxItems !== undefined && count > rule.maxItems) {
    // Still return the entries, so problems inside them are reported too.
    problems.report('MANIFEST_TOO_MANY_ITEMS', node, path, `lists ${count} entries; at most ${rule.maxItems} are allowed`)
  }
  return node.items.map((entry, index) => ({ node: entry as Node, path: itemPath(path, index) }))
}

/**
 * An array of strings with no repeats; each string follows `rule`. A repeated value is
 * reported on its second occurrence.
 */
export function stringListField(
  problems: ProblemCollector,
  fields: Fields,
  key: string,
  options: ListRule & StringRule & { required: boolean },
): string[] | undefined {
  const items = arrayField(problems, fields, key, options)
  if (items === undefined) return undefined
  const values: string[] = []
  const firstLine = new Map<string, number>()
  let valid = true
  for (const item of items) {
    const value = readString(problems, item, options)
    if (value === undefined) {
      valid = false
      continue
    }
    const seenAt = firstLine.get(value)
    if (seenAt !== undefined) {
      problems.report('MANIFEST_DUPLICATE_VALUE', item.node, item.path, `"${value}" is already listed at line ${seenAt}`)
      valid = false
      continue
    }
    firstLine.set(value, problems.lineOf(item.node))
    values.push(value)
  }
  return valid ? values : undefined
}

/**
 * The members of a free-key mapping (secrets, integrations) with their key node and
 * path; `item` is undefined when a member has no value.
 */
export function freeMembers(fields: Fields): { name: string; key: Node; path: string; item: Item | undefined }[] {
  return [...fields.entries].map(([name, entry]) => {
    const path = fieldPath(fields.path, name)
    const item = entry.value === null || isNullScalar(entry.value) ? undefined : { node: entry.value, path }
    return { name, key: entry.key, path, item }
  })
}

/**
 * The string entries of an already validated array, with their positions, without
 * reporting anything (for checks that need each entry's location, such as warnings).
 */
export function stringEntries(fields: Fields, key: string): { value: string; item: Item }[] {
  const entry = fields.entries.get(key)
  if (entry === undefined || !isSeq(entry.value)) return []
  const path = fieldPath(fields.path, key)
  return entry.value.items.flatMap((node, index) =>
    isScalar(node) && typeof node.value === 'string'
      ? [{ value: node.value, item: { node: node as Node, path: itemPath(path, index) } }]
      : [],
  )
}

/** Reports an alias and returns false; aliases are not resolved in a manifest. */
export function acceptsValue(problems: ProblemCollector, item: Item): boolean {
  if (!isAlias(item.node)) return true
  problems.report(
    'MANIFEST_YAML_ALIAS',
    item.node,
    item.path,
    `YAML aliases (*${item.node.source}) are not supported in service.yaml; write the value out`,
  )
  return false
}

export function isNullScalar(node: Node): boolean {
  return isScalar(node) && node.value === null
}

/** "a string", "a number (5)", "a mapping", … for type messages. */
export function describeNode(node: Node): string {
  if (isMap(node)) return 'a mapping'
  if (isSeq(node)) return 'an array'
  if (isAlias(node)) return 'an alias'
  if (isScalar(node)) {
    const value = node.value
    if (value === null) return 'no value'
    if (typeof value === 'string') return `a string ("${value.length > 40 ? `${value.slice(0, 40)}…` : value}")`
    if (typeof value === 'number') return `a number (${node.source ?? value})`
    if (typeof value === 'boolean') return `a boolean (${value})`
  }
  return 'an unsupported value'
}

function listOfChoices(choices: readonly string[]): string {
  const quoted = choices.map((choice) => `"${choice}"`)
  if (quoted.length <= 2) return quoted.join(' or ')
  return `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`
}

function unknownFieldMessage(name: string, where: { allowed: readonly string[]; mapping: ManifestMapping }): string {
  const { allowed, mapping } = where
  const known = allowed.length === 0 ? 'this mapping takes no fields' : `known fields here: ${allowed.join(', ')}`
  const misplaced = misplacedFieldHint(name, mapping)
  if (misplaced !== undefined) return `unknown field "${name}" here; ${misplaced} (${known})`
  const suggestion = closestName(name, allowed)
  return suggestion === undefined
    ? `unknown field "${name}"; ${known}`
    : `unknown field "${name}"; did you mean "${suggestion}"? (${known})`
}

function closestName(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Math.max(2, Math.floor(name.length / 4)) + 1
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index)
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i]
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution))
    }
    previous = current
  }
  return previous[b.length] ?? 0
}
