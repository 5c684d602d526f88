// Parses and validates five-field cron expressions (minute hour day-of-month month
// day-of-week) into explicit value lists, so the manifest validator can reject bad
// schedules precisely and the scheduler can later compute next occurrences without
// re-reading the text. Supported syntax: `*`, single values, ranges `a-b`, lists `a,b`,
// steps `*/n` and `a-b/n`, month names JAN-DEC and day names SUN-SAT (any case), and
// day-of-week 0-7 where both 0 and 7 mean Sunday. Nothing else (no `@daily`, `?`, `L`,
// `W`, `#`, no `a/n`), so a schedule means the same thing everywhere it is read. A
// schedule whose day-of-month never exists in its months (`0 0 30 2 *`) is rejected: it
// would never run. When it runs is next.ts's business.

/** The parsed form of a cron expression; every list is sorted ascending and unique. */
export interface CronExpression {
  /** 0-59 */
  readonly minutes: readonly number[]
  /** 0-23 */
  readonly hours: readonly number[]
  /** 1-31 */
  readonly daysOfMonth: readonly number[]
  /** 1-12 */
  readonly months: readonly number[]
  /** 0-6, Sunday is 0 (a written 7 is stored as 0) */
  readonly daysOfWeek: readonly number[]
  /**
   * Whether the day-of-month field restricts days. When both day fields are restricted a
   * day matches if EITHER matches; otherwise both must match (classic Vixie cron rule:
   * a field that starts with `*`, including a stepped `*`, is unrestricted).
   */
  readonly domRestricted: boolean
  readonly dowRestricted: boolean
}

export type CronParseResult =
  | { readonly ok: true; readonly expression: CronExpression }
  | { readonly ok: false; readonly error: string }

interface FieldSpec {
  readonly label: string
  readonly min: number
  readonly max: number
  readonly names?: readonly string[]
  readonly namesStartAt?: number
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const

const FIELDS = [
  { label: 'minute', min: 0, max: 59 },
  { label: 'hour', min: 0, max: 23 },
  { label: 'day-of-month', min: 1, max: 31 },
  { label: 'month', min: 1, max: 12, names: MONTH_NAMES, namesStartAt: 1 },
  { label: 'day-of-week', min: 0, max: 7, names: DAY_NAMES, namesStartAt: 0 },
] as const satisfies readonly FieldSpec[]

const FIELD_ORDER = 'minute hour day-of-month month day-of-week'

class FieldError extends Error {}

/**
 * Parses a five-field cron expression.
 *
 * @example
 * const result = parseCronExpression('0 3 * * MON-FRI')
 * if (result.ok) result.expression.daysOfWeek // [1, 2, 3, 4, 5]
 * else console.error(result.error)
 */
export function parseCronExpression(text: string): CronParseResult {
  const trimmed = text.trim()
  if (trimmed === '') {
    return { ok: false, error: `the schedule is empty; write five fields: ${FIELD_ORDER}` }
  }
  if (trimmed.startsWith('@')) {
    return {
      ok: false,
      error: `macros such as ${trimmed.split(/\s+/)[0]} are not supported; write five fields: ${FIELD_ORDER} (for example "0 0 * * *" for daily at midnight)`,
    }
  }
  const parts = trimmed.split(/\s+/)
  if (parts.length !== FIELDS.length) {
    return {
      ok: false,
      error: `expected 5 fields (${FIELD_ORDER}) but found ${parts.length}`,
    }
  }
  const [minute, hour, dayOfMonth, month, dayOfWeek] = parts as [string, string, string, string, string]
  try {
    const expression: CronExpression = {
      minutes: parseField(minute, FIELDS[0]),
      hours: parseField(hour, FIELDS[1]),
      daysOfMonth: parseField(dayOfMonth, FIELDS[2]),
      months: parseField(month, FIELDS[3]),
      daysOfWeek: normaliseSunday(parseField(dayOfWeek, FIELDS[4])),
      domRestricted: !dayOfMonth.startsWith('*'),
      dowRestricted: !dayOfWeek.startsWith('*'),
    }
    rejectImpossibleDays(expression, dayOfMonth, month)
    return { ok: true, expression }
  } catch (error) {
    if (error instanceof FieldError) return { ok: false, error: error.message }
    throw error
  }
}

/** Convenience for validators: the error message, or null when the expression is valid. */
export function cronExpressionError(text: string): string | null {
  const result = parseCronExpression(text)
  return result.ok ? null : result.error
}

function parseField(text: string, spec: FieldSpec): number[] {
  const values = new Set<number>()
  for (const element of text.split(',')) {
    if (element === '') {
      throw new FieldError(`${spec.label} field "${text}": empty list element; separate values with single commas`)
    }
    for (const value of parseElement(element, spec)) values.add(value)
  }
  return [...values].sort((a, b) => a - b)
}

function parseElement(element: string, spec: FieldSpec): number[] {
  const slash = element.split('/')
  if (slash.length > 2) {
    throw new FieldError(`${spec.label} field "${element}": only one "/" step is allowed`)
  }
  const [rangeText = '', stepText] = slash
  const step = stepText === undefined ? 1 : parseStep(stepText, element, spec)
  const [start, end] = parseRange(rangeText, element, spec, stepText)
  const values: number[] = []
  for (let value = start; value <= end; value += step) values.push(value)
  return values
}

function parseStep(text: string, element: string, spec: FieldSpec): number {
  if (!/^[0-9]+$/.test(text)) {
    throw new FieldError(`${spec.label} field "${element}": step "${text}" must be a whole number`)
  }
  const step = Number(text)
  if (step < 1) {
    throw new FieldError(`${spec.label} field "${element}": step must be at least 1`)
  }
  if (step > spec.max - spec.min + 1) {
    throw new FieldError(`${spec.label} field "${element}": step ${step} is larger than the field's range ${spec.min}-${spec.max}`)
  }
  return step
}

function parseRange(text: string, element: string, spec: FieldSpec, stepText: string | undefined): [number, number] {
  if (text === '*') return [spec.min, spec.max]
  const bounds = text.split('-')
  if (bounds.length === 1) {
    const value = parseValue(text, element, spec)
    if (stepText !== undefined) {
      throw new FieldError(
        `${spec.label} field "${element}": a step needs "*" or a range before "/"; write "${text}-${spec.max}/${stepText}" or "*/${stepText}"`,
      )
    }
    return [value, value]
  }
  if (bounds.length !== 2) {
    throw new FieldError(`${spec.label} field "${element}": a range has exactly one "-" (write "a-b")`)
  }
  const start = parseValue(bounds[0] ?? '', element, spec)
  const end = parseValue(bounds[1] ?? '', element, spec)
  if (start > end) {
    throw new FieldError(`${spec.label} field "${element}": range ${bounds[0]}-${bounds[1]} is reversed; the start must not be after the end`)
  }
  return [start, end]
}

function parseValue(text: string, element: string, spec: FieldSpec): number {
  if (/^[0-9]+$/.test(text)) {
    const value = Number(text)
    if (value < spec.min || value > spec.max) {
      throw new FieldError(`${spec.label} field "${element}": ${text} is out of range ${spec.min}-${spec.max}`)
    }
    return value
  }
  if (spec.names !== undefined && /^[A-Za-z]+$/.test(text)) {
    const index = spec.names.indexOf(text.toUpperCase())
    if (index >= 0) return index + (spec.namesStartAt ?? 0)
    throw new FieldError(`${spec.label} field "${element}": unknown name "${text}"; use ${spec.names[0]}-${spec.names[spec.names.length - 1]}`)
  }
  if (text === '') {
    throw new FieldError(`${spec.label} field "${element}": a value is missing`)
  }
  if (text === '*') {
    throw new FieldError(`${spec.label} field "${element}": "*" cannot be part of a range`)
  }
  throw new FieldError(`${spec.label} field "${element}": "${text}" is not a number${spec.names === undefined ? '' : ' or name'}`)
}

// Longest month lengths (February 29 exists in leap years). Over the 400-year Gregorian
// cycle every date that exists at all falls on every day of the week, so an expression
// whose day fields must both match still runs unless no listed day exists in any listed
// month. Rejecting that here means the next-occurrence search never hunts for a date
// that cannot come.
const LONGEST_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const

function rejectImpossibleDays(expression: CronExpression, dayOfMonthText: string, monthText: string): void {
  if (expression.domRestricted && expression.dowRestricted) return
  const exists = expression.months.some((month) => expression.daysOfMonth.some((day) => day <= (LONGEST_MONTH[month - 1] ?? 31)))
  if (exists) return
  const names = expression.months.map((month) => MONTH_NAMES[month - 1]).join(',')
  throw new FieldError(
    `day-of-month field "${dayOfMonthText}": no listed day exists in month field "${monthText}" (${names}), so the schedule would never run`,
  )
}

function normaliseSunday(days: number[]): number[] {
  if (!days.includes(7)) return days
  const withoutSeven = days.filter((day) => day !== 7)
  return withoutSeven.includes(0) ? withoutSeven : [0, ...withoutSeven]
}
