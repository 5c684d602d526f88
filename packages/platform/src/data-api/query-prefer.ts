/**
 * The `Prefer` header (RFC 7240) as PostgREST 12 reads it: comma-separated preferences in
 * one or several headers, compared exactly (case-sensitive, no spaces around `=`), the first
 * occurrence of each preference winning. Unrecognised preferences are collected in `invalid`
 * and ignored, unless `handling=strict` asks for PGRST122.
 */

import type {
  PreferCount,
  PreferHandling,
  PreferMissing,
  PreferResolution,
  PreferReturn,
  PreferTx,
  Preferences,
} from './query-ast.ts'
import { invalidPreferences } from './parse-errors.ts'

export interface ParsePreferOptions {
  /**
   * Time zone names the database accepts (`pg_timezone_names`). Without it `timezone=...` is
   * an unrecognised preference, as PostgREST treats an unknown zone.
   */
  readonly timezones?: ReadonlySet<string>
}

const RETURN: readonly PreferReturn[] = ['minimal', 'headers-only', 'representation']
const COUNT: readonly PreferCount[] = ['exact', 'planned', 'estimated']
const RESOLUTION: readonly PreferResolution[] = ['merge-duplicates', 'ignore-duplicates']
const MISSING: readonly PreferMissing[] = ['default', 'null']
const HANDLING: readonly PreferHandling[] = ['lenient', 'strict']
const TX: readonly PreferTx[] = ['commit', 'rollback']
const PARAMS: readonly 'single-object'[] = ['single-object']

const KNOWN: ReadonlySet<string> = new Set([
  ...RETURN.map((v) => `return=${v}`),
  ...COUNT.map((v) => `count=${v}`),
  ...RESOLUTION.map((v) => `resolution=${v}`),
  ...MISSING.map((v) => `missing=${v}`),
  ...HANDLING.map((v) => `handling=${v}`),
  ...TX.map((v) => `tx=${v}`),
  ...PARAMS.map((v) => `params=${v}`),
])

/** The value of the first token `name=<one of values>`. */
function first<T extends string>(tokens: readonly string[], name: string, values: readonly T[]): T | undefined {
  const prefix = `${name}=`
  for (const token of tokens) {
    if (!token.startsWith(prefix)) continue
    const value = values.find((v) => v === token.slice(prefix.length))
    if (value !== undefined) return value
  }
  return undefined
}

/** `max-affected=N` with N a non-negative integer, or undefined. */
function maxAffectedOf(token: string): number | undefined {
  if (!token.startsWith('max-affected=')) return undefined
  const text = token.slice('max-affected='.length)
  if (!/^\d+$/.test(text)) return undefined
  const value = Number(text)
  return Number.isSafeInteger(value) ? value : undefined
}

function timezoneOf(token: string, timezones: ReadonlySet<string> | undefined): string | undefined {
  if (!token.startsWith('timezone=') || timezones === undefined) return undefined
  const zone = token.slice('timezone='.length)
  return timezones.has(zone) ? zone : undefined
}

/**
 * Parses the `Prefer` header(s). Empty items (`a,,b`, a trailing comma) are skipped.
 *
 * ```ts
 * parsePrefer('return=representation, count=exact')
 * // { return: 'representation', count: 'exact', invalid: [] }
 * parsePrefer(['handling=strict', 'bogus']) // throws PGRST122
 * ```
 */
export function parsePrefer(header: string | readonly string[] | null, options: ParsePreferOptions = {}): Preferences {
  const headers: readonly string[] = header === null ? [] : typeof header === 'string' ? [header] : header
  const tokens = headers.flatMap((h) => h.split(',')).map((t) => t.trim()).filter((t) => t !== '')

  let maxAffected: number | undefined
  let timezone: string | undefined
  const invalid: string[] = []
  for (const token of tokens) {
    if (KNOWN.has(token)) continue
    const max = maxAffectedOf(token)
    if (max !== undefined) {
      maxAffected ??= max
      continue
    }
    const zone = timezoneOf(token, options.timezones)
    if (zone !== undefined) {
      timezone ??= zone
      continue
    }
    invalid.push(token)
  }

  const handling = first(tokens, 'handling', HANDLING)
  if (handling === 'strict' && invalid.length > 0) throw invalidPreferences(invalid)

  const ret = first(tokens, 'return', RETURN)
  const count = first(tokens, 'count', COUNT)
  const resolution = first(tokens, 'resolution', RESOLUTION)
  const missing = first(tokens, 'missing', MISSING)
  const tx = first(tokens, 'tx', TX)
  const params = first(tokens, 'params', PARAMS)
  return {
    ...(ret === undefined ? {} : { return: ret }),
    ...(count === undefined ? {} : { count }),
    ...(resolution === undefined ? {} : { resolution }),
    ...(missing === undefined ? {} : { missing }),
    ...(handling === undefined ? {} : { handling }),
    ...(tx === undefined ? {} : { tx }),
    ...(maxAffected === undefined ? {} : { maxAffected }),
    ...(params === undefined ? {} : { params }),
    ...(timezone === undefined ? {} : { timezone }),
    invalid,
  }
}
