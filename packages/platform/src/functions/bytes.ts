/**
 * Adapter (Node): bytes in context-call args and replies. JSON cannot carry them, so the
 * protocol sends a byte array as the one-key object `{ "$service.bytes": "<base64>" }`
 * (see protocol.ts); the worker does the same on its side with web-standard APIs.
 */
import { BYTES_TAG } from './protocol.ts'

/**
 * A copy of `value` in which every Uint8Array (Buffer included), ArrayBuffer and other
 * ArrayBuffer view is the tagged base64 object; anything else is left to JSON.
 *
 * @example
 * encodeBytes({ data: new Uint8Array([1, 2]) }) // { data: { '$service.bytes': 'AQI=' } }
 */
export function encodeBytes(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (ArrayBuffer.isView(value)) {
    return { [BYTES_TAG]: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') }
  }
  if (value instanceof ArrayBuffer) return { [BYTES_TAG]: Buffer.from(value).toString('base64') }
  if (Array.isArray(value)) return value.map(encodeBytes)
  const prototype: unknown = Object.getPrototypeOf(value)
  if (prototype !== null && Object.getPrototypeOf(prototype) !== null) return value
  const copy: Record<string, unknown> = {}
  for (const [key, entry] of Object.entries(value)) copy[key] = encodeBytes(entry)
  return copy
}

/**
 * `value` (parsed JSON, changed in place) with every tagged base64 object turned into a
 * Uint8Array.
 *
 * @example
 * decodeBytes({ data: { '$service.bytes': 'AQI=' } }) // { data: Uint8Array [1, 2] }
 */
export function decodeBytes(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) value[index] = decodeBytes(value[index])
    return value
  }
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  const tagged = record[BYTES_TAG]
  if (keys.length === 1 && typeof tagged === 'string') {
    const buffer = Buffer.from(tagged, 'base64')
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
  }
  for (const key of keys) record[key] = decodeBytes(record[key])
  return record
}
