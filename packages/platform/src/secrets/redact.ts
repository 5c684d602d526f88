/**
 * Redaction of secret values from what leaves a Function: log lines, error messages,
 * details and stacks, and the worker's diagnostics. Besides the value itself it replaces
 * the forms a value commonly takes on the way out: JSON-escaped (once and twice, for a
 * value inside a JSON string, or a JSON string inside one), URI-encoded (a value in a
 * URL an error message quotes) and quoted as Deno's console prints a string inside an
 * object or array (`console.log({ key })`: backslashes doubled, the quote escaped, control
 * characters as `\n` or `\x01`). A value of several lines is also redacted line by line
 * (each line of 8 characters or more), because console output is read, and redacted, one
 * line at a time. Every non-empty value is redacted, however short: a short secret
 * garbles log text rather than leaking.
 */

export const REDACTED = '[REDACTED]'

export interface Redactor {
  /** True when there is nothing to redact. */
  readonly empty: boolean
  text(text: string): string
  /** A copy of a JSON-like value with every string (keys too) and number redacted. */
  value<T>(value: T): T
}

/** Shortest line of a multi-line value redacted on its own. */
const MIN_LINE_CHARS = 8
const INSPECT_ESCAPES: Record<string, string> = { '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v' }

/** `value` as Deno's console prints it between `quote`s (ext/console quoteString), without the quotes. */
function inspected(value: string, quote: string): string {
  return value
    .replace(quote === '`' ? /[`\\]/g : quote === '"' ? /["\\]/g : /['\\]/g, (c) => '\\' + c)
    .replace(/[\b\f\n\r\t\v]/g, (c) => INSPECT_ESCAPES[c]!)
    .replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0'))
}

/** The forms of `value` to look for. */
function forms(value: string): string[] {
  const once = JSON.stringify(value).slice(1, -1)
  const twice = JSON.stringify(once).slice(1, -1)
  return [value, once, twice, encodeURIComponent(value), inspected(value, "'"), inspected(value, '"'), inspected(value, '`')]
}

/**
 * @example
 * const redactor = createRedactor(['sk_live_123'])
 * redactor.text('key sk_live_123') // 'key [REDACTED]'
 */
export function createRedactor(values: Iterable<string>): Redactor {
  const needles = new Set<string>()
  for (const value of values) {
    if (value.length === 0) continue
    for (const form of forms(value)) needles.add(form)
    const lines = value.split(/\r\n|\n|\r/)
    if (lines.length > 1) for (const line of lines) if (line.length >= MIN_LINE_CHARS) for (const form of forms(line)) needles.add(form)
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
        // defineProperty: a key `__proto__` stays an own property instead of setting the prototype.
        for (const [key, entry] of Object.entries(input)) {
          Object.defineProperty(copy, text(key), { value: value(entry), enumerable: true, writable: true, configurable: true })
        }
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
