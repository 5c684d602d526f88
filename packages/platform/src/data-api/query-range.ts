/**
 * Row windows: the `Range` header (`Range: 0-9`, `Range: 10-`, with an optional
 * `Range-Unit: items`), the `limit`/`offset` parameters, and how PostgREST 12 combines them:
 * the intersection of both windows, except that `limit=0` always asks for no rows.
 */

import type { RangeWindow } from './query-ast.ts'
import { echo, rangeError } from './parse-errors.ts'

/** PostgREST's pattern: `first-` or `first-last`, decimal, nothing else. */
const RANGE = /^(\d+)-(\d*)$/

/**
 * Reads a `Range` header. Returns null when there is none, when it does not match PostgREST's
 * `first-[last]` form (PostgREST ignores such headers, e.g. `items=0-9`), or when
 * `Range-Unit` names a unit other than `items` (RFC 9110: ignore unknown units). Throws
 * PGRST103 (416) when `first > last`.
 *
 * ```ts
 * parseRange('0-9', 'items') // { offset: 0, limit: 10 }
 * parseRange('10-', null)    // { offset: 10, limit: null }
 * ```
 */
export function parseRange(header: string | null, unit: string | null): RangeWindow | null {
  if (header === null) return null
  if (unit !== null && unit.trim().toLowerCase() !== 'items') return null
  const match = RANGE.exec(header.trim())
  if (match === null) return null
  const first = Number(match[1])
  const last = match[2] === undefined || match[2] === '' ? null : Number(match[2])
  if (!Number.isSafeInteger(first) || (last !== null && !Number.isSafeInteger(last))) {
    throw rangeError('The Range header bounds are too large.')
  }
  if (last !== null && first > last) {
    throw rangeError('The lower boundary must be lower than or equal to the upper boundary in the Range header.')
  }
  return { offset: first, limit: last === null ? null : last - first + 1 }
}

/**
 * A `limit` or `offset` parameter: a non-negative decimal integer (surrounding spaces allowed).
 * PostgREST silently ignores values that are not integers; we refuse them with PGRST103 so a
 * typo never turns into an unbounded read.
 */
export function parseLimitOrOffset(raw: string, which: 'limit' | 'offset'): number {
  const text = raw.trim()
  const name = which === 'limit' ? 'Limit' : 'Offset'
  if (/^-\d+$/.test(text)) throw rangeError(`${name} should be greater than or equal to zero.`)
  if (!/^\d+$/.test(text)) throw rangeError(`${name} should be a non-negative integer, got "${echo(raw)}".`)
  const value = Number(text)
  if (!Number.isSafeInteger(value)) throw rangeError(`${name} is too large.`)
  return value
}

/**
 * The root window PostgREST applies: the intersection of the `Range` header's window and the
 * `limit`/`offset` one (so the smaller wins), or no rows at all when `limit=0`. Throws
 * PGRST103 when the two windows do not overlap (PostgREST answers 416 there too).
 *
 * ```ts
 * combineRanges({ offset: 0, limit: 100 }, { limit: 10, offset: 5 }) // { offset: 5, limit: 10 }
 * ```
 */
export function combineRanges(
  header: RangeWindow | null,
  query: { readonly limit: number | null; readonly offset: number | null },
): RangeWindow {
  if (query.limit === 0) return { offset: query.offset ?? 0, limit: 0 }
  const queryFirst = query.offset ?? 0
  // Without a header the query window is the answer (and huge values stay exact).
  if (header === null) return { offset: queryFirst, limit: query.limit }
  const queryLast = query.limit === null ? Infinity : queryFirst + query.limit - 1
  const headerFirst = header.offset
  const headerLast = header.limit === null ? Infinity : header.offset + header.limit - 1
  const first = Math.max(queryFirst, headerFirst)
  const last = Math.min(queryLast, headerLast)
  if (last < first) {
    throw rangeError('The Range header and the limit/offset parameters select no common rows.')
  }
  return { offset: first, limit: last === Infinity ? null : last - first + 1 }
}
