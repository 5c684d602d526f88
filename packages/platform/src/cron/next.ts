// When a cron schedule runs: the next occurrences after an instant, and the latest one in
// a window (for coalescing missed runs after downtime). The scheduler and `service cron
// next` both use this file, so what the CLI prints is what the platform does.
//
// A schedule names local wall-clock minutes in its time zone (default UTC). Each matching
// local minute is one occurrence, and it runs exactly once:
//
// - A local minute the wall shows once runs at that instant.
// - Repeated local time (the clocks go back, an overlap): the minute runs once, at its
//   first instance (the earlier offset). This holds for every schedule, frequent ones
//   too: `*/15 * * * *` in Berlin on the last Sunday of October runs at 02:00, 02:15,
//   02:30 and 02:45 (+02:00), not again at 02:00-02:45 (+01:00), and next at 03:00
//   (+01:00). The specification says "repeated time runs once" without an exception for
//   frequent schedules; Vixie cron and croner 10 do make one (wildcard-hour schedules
//   run through the repeated hour). A schedule that means an interval should be written
//   in UTC, where no time repeats.
// - Nonexistent local time (the clocks go forward, a gap): the minute runs at the first
//   valid minute after it, which is the instant the clocks jumped (03:00 in Berlin, 02:30
//   on Lord Howe Island, whose clocks move by 30 minutes). Several skipped minutes, and
//   the first valid minute itself if it matches too, all land on that one instant and
//   run there once: `30 2 * * *` in Berlin on the last Sunday of March runs at 03:00
//   (+02:00); `0,30 2,3 * * *` runs at 03:00 and 03:30 that day; `*/15 * * * *` runs at
//   01:45 (+01:00), then 03:00 and 03:15 (+02:00).
// - So a daily schedule runs once per local date in every zone (where a local date itself
//   is skipped, as Samoa skipped 30 December 2011, its run moves to the next date).
// - Day matching follows Vixie cron (see expression.ts): when both day fields are
//   restricted a day matches if either matches, otherwise both must.
//
// The search walks calendar fields (month, then day, hour, minute), jumping to the next
// listed value, so sparse schedules such as `0 0 29 2 *` answer as fast as `* * * * *`.
// Expressions that can never match are rejected by the parser; the search is bounded
// anyway (400 years, a whole Gregorian cycle, after which every possible date has fallen
// on every weekday) and fails with a clear error rather than looping.

import { parseCronExpression, type CronExpression } from '../lib/cron-expression.ts'
import { isValidTimeZone } from '../lib/time-zone.ts'
import { instantOfWallTime, wallAt, wallMs } from './zone-time.ts'

/** An expression or zone the scheduler cannot evaluate, or an instant out of range. */
export class CronScheduleError extends Error {
  override name = 'CronScheduleError'
}

export interface NextOccurrencesOptions {
  /** IANA zone the schedule is written in; default "UTC". */
  readonly timezone?: string
  /** Occurrences strictly after this instant are returned. */
  readonly from: Date
  /** How many to return (fewer only if year 9999 ends first). */
  readonly count: number
}

export interface LatestOccurrenceOptions {
  readonly timezone?: string
  /** Exclusive lower bound. */
  readonly after: Date
  /** Inclusive upper bound. */
  readonly upTo: Date
}

/** The earliest and latest instants the functions accept. */
export const EARLIEST_INSTANT = new Date('1970-01-01T00:00:00Z')
export const LATEST_INSTANT = new Date('9999-12-30T00:00:00Z')

const MINUTE_MS = 60_000
const SEARCH_YEARS = 400

/**
 * The next `count` instants at which the schedule runs, strictly after `from`, in order.
 *
 * @example
 * nextOccurrences('30 2 * * *', { timezone: 'Europe/Berlin', from: new Date('2026-03-28T12:00:00Z'), count: 2 })
 * // [2026-03-29T01:00:00Z (03:00 +02:00, the skipped 02:30 moved), 2026-03-30T00:30:00Z]
 */
export function nextOccurrences(expression: string | CronExpression, options: NextOccurrencesOptions): Date[] {
  const schedule = compile(expression, options.timezone)
  const from = instantMs(options.from, 'from')
  if (!Number.isSafeInteger(options.count) || options.count < 0) {
    throw new CronScheduleError(`count must be a whole number of at least 0, not ${options.count}`)
  }
  const occurrences: Date[] = []
  if (options.count === 0) return occurrences
  // Every local minute before the wall reading of `from` lands at or before `from` (the
  // mapping from local minutes to instants never goes backwards), so the walk can start
  // there; minutes after it may still land before `from` in an overlap and are filtered.
  let cursor = floorMinute(wallAt(schedule.zone, from))
  const horizon = wallMs(9999, 12, 31, 23, 59)
  let last = Number.NEGATIVE_INFINITY
  while (occurrences.length < options.count) {
    const searchEnd = Math.min(horizon, addYears(cursor, SEARCH_YEARS))
    const local = schedule.nextLocal(cursor, searchEnd)
    if (local === null) {
      if (searchEnd === horizon) break
      throw neverRuns(schedule, cursor)
    }
    const instant = schedule.instantOf(local)
    if (instant > from && instant !== last) occurrences.push(new Date(instant))
    last = Math.max(last, instant)
    cursor = local + MINUTE_MS
  }
  return occurrences
}

/**
 * The latest instant in (`after`, `upTo`] at which the schedule runs, or null. The
 * scheduler uses it to coalesce the runs missed during downtime into one.
 *
 * @example
 * latestOccurrence('0 * * * *', { after: new Date('2026-01-01T00:00:00Z'), upTo: new Date('2026-01-01T05:30:00Z') })
 * // 2026-01-01T05:00:00Z
 */
export function latestOccurrence(expression: string | CronExpression, options: LatestOccurrenceOptions): Date | null {
  const schedule = compile(expression, options.timezone)
  const after = instantMs(options.after, 'after')
  const upTo = instantMs(options.upTo, 'upTo')
  if (upTo <= after) return null
  // Local minutes after the wall reading of `upTo` can still land at or before it when
  // `upTo` is in the second pass of an overlap; the overlap is shorter than the offset
  // change within the last day, so start that far ahead.
  const { zone } = schedule
  const overlap = Math.max(0, wallAt(zone, upTo - 86_400_000) - (upTo - 86_400_000) - (wallAt(zone, upTo) - upTo))
  let cursor = floorMinute(wallAt(zone, upTo) + overlap)
  // Every local minute before the wall reading of `after` lands at or before `after`.
  const floor = floorMinute(wallAt(zone, after))
  for (;;) {
    const local = schedule.previousLocal(cursor, floor)
    if (local === null) return null
    const instant = schedule.instantOf(local)
    if (instant <= after) return null
    if (instant <= upTo) return new Date(instant)
    cursor = local - MINUTE_MS
  }
}

interface CompiledSchedule {
  readonly zone: string
  readonly text: string
  /** The first matching local minute in [from, to], or null. */
  nextLocal(from: number, to: number): number | null
  /** The last matching local minute in [to, from] (searching backwards), or null. */
  previousLocal(from: number, to: number): number | null
  /** The instant a matching local minute runs at (first instance; first valid minute after a gap). */
  instantOf(local: number): number
}

function compile(expression: string | CronExpression, timezone = 'UTC'): CompiledSchedule {
  let parsed: CronExpression
  if (typeof expression === 'string') {
    const result = parseCronExpression(expression)
    if (!result.ok) throw new CronScheduleError(`"${expression}" is not a valid cron schedule: ${result.error}`)
    parsed = result.expression
  } else {
    parsed = expression
  }
  if (!isValidTimeZone(timezone)) {
    throw new CronScheduleError(`"${timezone}" is not an IANA time zone name; use a name such as "UTC", "Europe/Berlin" or "America/New_York"`)
  }
  const fields = new CalendarFields(parsed)
  return {
    zone: timezone,
    text: typeof expression === 'string' ? expression : 'the schedule',
    nextLocal: (from, to) => fields.next(from, to),
    previousLocal: (from, to) => fields.previous(from, to),
    instantOf: (local) => instantOfWallTime(timezone, local),
  }
}

/** Field-by-field search over local calendar minutes. */
class CalendarFields {
  readonly #expression: CronExpression
  readonly #minutes: ReadonlySet<number>
  readonly #hours: ReadonlySet<number>
  readonly #months: ReadonlySet<number>
  readonly #daysOfMonth: ReadonlySet<number>
  readonly #daysOfWeek: ReadonlySet<number>

  constructor(expression: CronExpression) {
    this.#expression = expression
    this.#minutes = new Set(expression.minutes)
    this.#hours = new Set(expression.hours)
    this.#months = new Set(expression.months)
    this.#daysOfMonth = new Set(expression.daysOfMonth)
    this.#daysOfWeek = new Set(expression.daysOfWeek)
  }

  #dayMatches(year: number, month: number, day: number): boolean {
    const byMonthDay = this.#daysOfMonth.has(day)
    const byWeekday = this.#daysOfWeek.has(new Date(wallMs(year, month, day)).getUTCDay())
    const { domRestricted, dowRestricted } = this.#expression
    return domRestricted && dowRestricted ? byMonthDay || byWeekday : byMonthDay && byWeekday
  }

  next(fromLocal: number, toLocal: number): number | null {
    const { minutes, hours, months } = this.#expression
    let { year, month, day, hour, minute } = split(fromLocal)
    const end = key(split(toLocal))
    for (;;) {
      if (key({ year, month, day, hour, minute }) > end) return null
      if (!this.#months.has(month)) {
        const nextMonth = firstAtLeast(months, month)
        if (nextMonth === undefined) {
          year += 1
          month = months[0]!
        } else {
          month = nextMonth
        }
        day = 1
        hour = 0
        minute = 0
      } else if (day > daysIn(year, month)) {
        month += 1
        if (month > 12) {
          year += 1
          month = 1
        }
        day = 1
        hour = 0
        minute = 0
      } else if (!this.#dayMatches(year, month, day)) {
        day += 1
        hour = 0
        minute = 0
      } else if (!this.#hours.has(hour) || !this.#minutes.has(minute)) {
        const nextHour = this.#hours.has(hour) ? hour : firstAtLeast(hours, hour)
        const nextMinute = nextHour === hour ? firstAtLeast(minutes, minute) : minutes[0]
        if (nextHour === undefined) {
          day += 1
          hour = 0
          minute = 0
        } else if (nextMinute === undefined) {
          hour = nextHour + 1
          minute = 0
          if (hour > 23) {
            day += 1
            hour = 0
          }
        } else {
          hour = nextHour
          minute = nextMinute
        }
      } else {
        const found = wallMs(year, month, day, hour, minute)
        return found <= toLocal ? found : null
      }
    }
  }

  previous(fromLocal: number, toLocal: number): number | null {
    const { minutes, hours, months } = this.#expression
    let { year, month, day, hour, minute } = split(fromLocal)
    const end = key(split(toLocal))
    for (;;) {
      if (key({ year, month, day, hour, minute }) < end) return null
      if (!this.#months.has(month)) {
        const previousMonth = lastAtMost(months, month)
        if (previousMonth === undefined) {
          year -= 1
          month = months[months.length - 1]!
        } else {
          month = previousMonth
        }
        day = daysIn(year, month)
        hour = 23
        minute = 59
      } else if (day < 1) {
        month -= 1
        if (month < 1) {
          year -= 1
          month = 12
        }
        day = daysIn(year, month)
        hour = 23
        minute = 59
      } else if (day > daysIn(year, month)) {
        day = daysIn(year, month)
        hour = 23
        minute = 59
      } else if (!this.#dayMatches(year, month, day)) {
        day -= 1
        hour = 23
        minute = 59
      } else if (!this.#hours.has(hour) || !this.#minutes.has(minute)) {
        const previousHour = this.#hours.has(hour) ? hour : lastAtMost(hours, hour)
        const previousMinute = previousHour === hour ? lastAtMost(minutes, minute) : minutes[minutes.length - 1]
        if (previousHour === undefined) {
          day -= 1
          hour = 23
          minute = 59
        } else if (previousMinute === undefined) {
          hour = previousHour - 1
          minute = 59
          if (hour < 0) {
            day -= 1
            hour = 23
          }
        } else {
          hour = previousHour
          minute = previousMinute
        }
      } else {
        const found = wallMs(year, month, day, hour, minute)
        return found >= toLocal ? found : null
      }
    }
  }
}

interface Fields {
  year: number
  month: number
  day: number
  hour: number
  minute: number
}

function split(local: number): Fields {
  const date = new Date(local)
  return {
    year: date.getUTCFullYear(),
    month: date.getUTCMonth() + 1,
    day: date.getUTCDate(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
  }
}

/** Orders field tuples like the times they name (days past a month's end sort after it). */
function key(fields: Fields): number {
  return (((fields.year * 13 + fields.month) * 33 + fields.day) * 24 + fields.hour) * 60 + fields.minute
}

function daysIn(year: number, month: number): number {
  return new Date(wallMs(year, month + 1, 0)).getUTCDate()
}

function firstAtLeast(sorted: readonly number[], value: number): number | undefined {
  return sorted.find((entry) => entry >= value)
}

function lastAtMost(sorted: readonly number[], value: number): number | undefined {
  return sorted.findLast((entry) => entry <= value)
}

function floorMinute(local: number): number {
  return Math.floor(local / MINUTE_MS) * MINUTE_MS
}

function addYears(local: number, years: number): number {
  const date = new Date(local)
  date.setUTCFullYear(date.getUTCFullYear() + years)
  return date.getTime()
}

function instantMs(value: Date, name: string): number {
  const ms = value.getTime()
  if (Number.isNaN(ms)) throw new CronScheduleError(`${name} is not a valid date`)
  if (ms < EARLIEST_INSTANT.getTime() || ms > LATEST_INSTANT.getTime()) {
    throw new CronScheduleError(`${name} must be between ${EARLIEST_INSTANT.toISOString()} and ${LATEST_INSTANT.toISOString()}`)
  }
  return ms
}

function neverRuns(schedule: CompiledSchedule, fromLocal: number): CronScheduleError {
  return new CronScheduleError(
    `${schedule.text} has no occurrence within ${SEARCH_YEARS} years of ${new Date(fromLocal).toISOString().slice(0, 16)} local time, so it never runs`,
  )
}
