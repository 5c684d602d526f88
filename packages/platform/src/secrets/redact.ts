/**
 * Redaction of secret values from what leaves a Function: log lines, error messages,
 * details and stacks, and the worker's diagnostics. Besides the value itself it replaces
 * the forms a value commonly takes on the way out: JSON-escaped (once and twice, for a
 * value inside a JSON string, or a JSON string inside one) and URI-encoded (a value in a
 * URL an error message quotes). Every non-empty value is redacted, however short: a
 * short secret garbles log text rather than leaking.
 */

export const REDACTED = '[REDACTED]'

export interface Redactor {
  /** True when there is nothing to redact. */
  readonly empty: boolean
  text(text: string): string
  /** A copy of a JSON-like value with every string (keys too) and number redacted. */
  value<T>(value: T): T
}

/** The forms of `value` to look for, longest first. */
function forms(value: string): string[] {
  const once = JSON.stringify(value).slice(1, -1)
  const twice = JSON.stringify(once).slice(1, -1)
  return [value, once, twice, encodeURIComponent(value)]
}

/**
 * @example
 * const redactor = createRedactor(['sk_live_123'])
 * redactor.text('key sk_live_123') // 'key [REDACTED]'
 */
export function createRedactor(values: Iterable<string>): Redactor {
  const needles = new Set<string>()
  for (const value of values) {
    if (value.length > 0) for (const form of forms(value)) needles.add(form)
  }
  const ordered = [...needles].sort((a, b) => b.length - a.length)
  const text = (input: string): string => {
    let output = input
    for (const needle of ordered) if (output.includes(needle)) output = output.split(needle).join(REDACTED)
    return output
  }
  const value = (input: unknown): unknown => {
    switch (typeof input) {
      case 'string':
        return text(input)
      case 'number':
      case 'bigint': {
        const written = String(input)
        const redacted = text(written)
        return redacted === written ? input : redacted
      }
      case 'object': {
        if (input === null) return null
        if (Array.isArray(input)) return input.map(value)
        const copy: Record<string, unknown> = {}
        for (const [key, entry] of Object.entries(input)) copy[text(key)] = value(entry)
        return copy
      }
      default:
        return input
    }
  }
  return {
    empty: ordered.length === 0,
    text,
    value: <T>(input: T): T => (ordered.length === 0 ? input : (value(input) as T)),
  }
}
