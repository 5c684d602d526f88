// Converts YAML nodes that hold free-form JSON (operation and event `fake` values, input
// and output schemas) into plain JSON values, reporting anything JSON cannot represent,
// and measures a value's serialized size the way the limits in spec section 8 count it.

import { isMap, isScalar, isSeq, type Node } from 'yaml'
import { fieldPath, itemPath, type ProblemCollector } from './problems.ts'
import { acceptsValue, describeNode, type Item } from './read-fields.ts'
import type { JsonObject, JsonValue } from './types.ts'

const INVALID: unique symbol = Symbol('invalid JSON')

/**
 * The JSON value of a YAML node; undefined (after reporting) when some part of it is not
 * representable. Mapping keys that are numbers or booleans become strings, as in JSON.
 */
export function readJsonValue(problems: ProblemCollector, item: Item): JsonValue | undefined {
  const value = convert(problems, item.node, item.path)
  return value === INVALID ? undefined : value
}

function convert(problems: ProblemCollector, node: Node, path: string): JsonValue | typeof INVALID {
  if (!acceptsValue(problems, { node, path })) return INVALID
  if (isMap(node)) return convertMapping(problems, node, path)
  if (isSeq(node)) {
    const values = node.items.map((entry, index) => convert(problems, entry as Node, itemPath(path, index)))
    return values.includes(INVALID) ? INVALID : (values as JsonValue[])
  }
  if (isScalar(node)) {
    const value = node.value
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return value
    if (typeof value === 'number' && Number.isFinite(value)) return value
    if (typeof value === 'number') {
      problems.report('MANIFEST_JSON_VALUE_INVALID', node, path, `${node.source ?? value} is not a finite number, so it cannot be JSON`)
      return INVALID
    }
  }
  problems.report('MANIFEST_JSON_VALUE_INVALID', node, path, `${describeNode(node)} cannot be represented as JSON`)
  return INVALID
}

function convertMapping(problems: ProblemCollector, node: Node & { items: unknown[] }, path: string): JsonObject | typeof INVALID {
  const entries: [string, JsonValue][] = []
  let valid = true
  for (const pair of node.items as { key: Node | null; value: Node | null }[]) {
    const key = pair.key
    if (!isScalar(key) || key.value === null || typeof key.value === 'object') {
      problems.report('MANIFEST_JSON_VALUE_INVALID', key ?? node, path, 'JSON object keys must be plain strings')
      valid = false
      continue
    }
    const name = String(key.value)
    const childPath = fieldPath(path, name)
    const value = pair.value === null ? null : convert(problems, pair.value, childPath)
    if (value === INVALID) valid = false
    else entries.push([name, value])
  }
  // Object.fromEntries defines own properties, so a "__proto__" key stays plain data.
  return valid ? Object.fromEntries(entries) : INVALID
}

/**
 * The size in bytes of `JSON.stringify(value)` encoded as UTF-8.
 *
 * @example
 * jsonByteLength({ name: 'é' }) // 13
 */
export function jsonByteLength(value: JsonValue): number {
  return new TextEncoder().encode(JSON.stringify(value)).byteLength
}
