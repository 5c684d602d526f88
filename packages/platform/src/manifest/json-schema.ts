// Light checks for the JSON Schemas a provider contract gives as operation `input` and
// `output`. They document operations for consumers and agents (the provider Function's
// own schema stays authoritative), so the manifest only insists on what would make
// them unreadable: a schema is a mapping or true/false, subschemas in the standard
// keywords are too, and every `type` keyword names JSON Schema types.

import { isMap, isScalar, isSeq, type Node, type Pair } from 'yaml'
import { fieldPath, itemPath, type ProblemCollector } from './problems.ts'
import { describeNode, type Item } from './read-fields.ts'
import { readJsonValue } from './json-value.ts'
import type { JsonSchema } from './types.ts'

export const JSON_SCHEMA_TYPES = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'] as const

/** Keywords whose value is one subschema. */
const SCHEMA_KEYWORDS = [
  'additionalItems', 'additionalProperties', 'contains', 'else', 'if', 'not', 'propertyNames',
  'then', 'unevaluatedItems', 'unevaluatedProperties',
]
/** Keywords whose value is an array of subschemas. */
const SCHEMA_ARRAY_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'prefixItems']
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAP_KEYWORDS = ['$defs', 'definitions', 'dependentSchemas', 'patternProperties', 'properties']

/** Reads and checks an `input`/`output` schema; undefined (after reporting) when unusable. */
export function readJsonSchema(problems: ProblemCollector, item: Item): JsonSchema | undefined {
  const value = readJsonValue(problems, item)
  if (value === undefined) return undefined
  if (!checkSchema(problems, item.node, item.path)) return undefined
  return value as JsonSchema
}

function checkSchema(problems: ProblemCollector, node: Node, path: string): boolean {
  if (isScalar(node) && typeof node.value === 'boolean') return true
  if (!isMap(node)) {
    problems.report('MANIFEST_JSON_SCHEMA_INVALID', node, path, `a JSON Schema must be a mapping or true/false, not ${describeNode(node)}`)
    return false
  }
  let valid = true
  for (const pair of node.items as Pair<Node, Node | null>[]) {
    if (!isScalar(pair.key) || pair.value === null) continue
    const keyword = String(pair.key.value)
    if (!checkKeyword(problems, keyword, pair.value, fieldPath(path, keyword))) valid = false
  }
  return valid
}

function checkKeyword(problems: ProblemCollector, keyword: string, value: Node, path: string): boolean {
  if (keyword === 'type') return checkType(problems, value, path)
  if (SCHEMA_KEYWORDS.includes(keyword)) return checkSchema(problems, value, path)
  if (keyword === 'items') return isSeq(value) ? checkSchemaList(problems, value, path) : checkSchema(problems, value, path)
  if (SCHEMA_ARRAY_KEYWORDS.includes(keyword)) {
    if (isSeq(value)) return checkSchemaList(problems, value, path)
    problems.report('MANIFEST_JSON_SCHEMA_INVALID', value, path, `"${keyword}" must be an array of schemas`)
    return false
  }
  if (SCHEMA_MAP_KEYWORDS.includes(keyword)) {
    if (!isMap(value)) {
      problems.report('MANIFEST_JSON_SCHEMA_INVALID', value, path, `"${keyword}" must map names to schemas`)
      return false
    }
    return checkSchemaMap(problems, value, path)
  }
  return true
}

function checkSchemaList(problems: ProblemCollector, list: Node & { items: unknown[] }, path: string): boolean {
  return (list.items as Node[])
    .map((entry, index) => checkSchema(problems, entry, itemPath(path, index)))
    .every(Boolean)
}

function checkSchemaMap(problems: ProblemCollector, map: Node & { items: unknown[] }, path: string): boolean {
  return (map.items as Pair<Node, Node | null>[])
    .map((pair) => {
      if (!isScalar(pair.key) || pair.value === null) return true
      return checkSchema(problems, pair.value, fieldPath(path, String(pair.key.value)))
    })
    .every(Boolean)
}

function checkType(problems: ProblemCollector, value: Node, path: string): boolean {
  const allowed = JSON_SCHEMA_TYPES.join(', ')
  if (isScalar(value) && typeof value.value === 'string') {
    if (isJsonSchemaType(value.value)) return true
    problems.report('MANIFEST_JSON_SCHEMA_INVALID', value, path, `"${value.value}" is not a JSON Schema type; use one of ${allowed}`)
    return false
  }
  if (!isSeq(value)) {
    problems.report('MANIFEST_JSON_SCHEMA_INVALID', value, path, `"type" must be a type name or an array of them (${allowed})`)
    return false
  }
  const seen = new Set<string>()
  let valid = true
  for (const [index, entry] of (value.items as Node[]).entries()) {
    const entryPath = itemPath(path, index)
    const name = isScalar(entry) && typeof entry.value === 'string' ? entry.value : undefined
    if (name === undefined || !isJsonSchemaType(name)) {
      problems.report('MANIFEST_JSON_SCHEMA_INVALID', entry, entryPath, `${name === undefined ? describeNode(entry) : `"${name}"`} is not a JSON Schema type; use one of ${allowed}`)
      valid = false
    } else if (seen.has(name)) {
      problems.report('MANIFEST_JSON_SCHEMA_INVALID', entry, entryPath, `"${name}" is listed twice in "type"`)
      valid = false
    }
    if (name !== undefined) seen.add(name)
  }
  return valid
}

function isJsonSchemaType(name: string): boolean {
  return (JSON_SCHEMA_TYPES as readonly string[]).includes(name)
}
