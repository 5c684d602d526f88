// Wall-clock time in an IANA zone, computed with Intl (the runtime's ICU time zone data).
// Cron schedules are written in local wall-clock time; this file answers the two
// questions the scheduler needs: what does the clock on the wall show at an instant, and
// at which instant(s) does the wall show a given local minute. A "local time" is carried
// as the number of milliseconds a UTC clock would show for the same calendar fields
// (Date.UTC of the wall reading), so calendar arithmetic stays plain integer arithmetic.

const DAY_MS = 86_400_000
const MINUTE_MS = 60_000

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone)
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
    formatters.set(zone, format)
  }
  return format
}

/** Milliseconds a UTC clock would show for these calendar fields (years below 100 too). */
export function wallMs(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): number {
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, 0)
  return date.getTime()
}

/** The zone's UTC offset at an instant, in milliseconds (local minus UTC). */
export function offsetAt(zone: string, instantMs: number): number {
  if (zone === 'UTC') return 0
  const whole = Math.floor(instantMs / 1000) * 1000
  const fields: Record<string, string> = {}
  for (const part of formatter(zone).formatToParts(whole)) fields[part.type] = part.value
  const year = fields.era === 'BC' || fields.era === 'B' ? 1 - Number(fields.year) : Number(fields.year)
  return wallMs(year, Number(fields.month), Number(fields.day), Number(fields.hour), Number(fields.minute), Number(fields.second)) - whole
}

/** The local wall-clock reading at an instant, as local milliseconds. */
export function wallAt(zone: string, instantMs: number): number {
  return instantMs + offsetAt(zone, instantMs)
}

/**
 * Where a local minute lands on the time line.
 * - `exists`: the wall shows it once (`instants` has one entry) or, in an overlap after the
 *   clocks go back, twice (two entries, earlier first).
 * - `skipped`: the clocks jumped over it (a gap after the clocks go forward); `firstValid`
 *   is the instant of the first whole local minute after it that the wall does show, which
 *   is the moment the clocks jumped.
 */
export type LocalResolution =
  | { readonly kind: 'exists'; readonly instants: readonly number[] }
  | { readonly kind: 'skipped'; readonly firstValid: number }

/**
 * Resolves a local time (a whole minute, as local milliseconds) in a zone. Like Temporal's
 * GetPossibleEpochNanoseconds it considers the offsets one day before and one day after,
 * which holds because no zone changes its offset twice within two days.
 *
 * @example
 * resolveLocal('Europe/Berlin', wallMs(2026, 3, 29, 2, 30)) // { kind: 'skipped', firstValid: <01:00Z> }
 */
export function resolveLocal(zone: string, local: number): LocalResolution {
  if (zone === 'UTC') return { kind: 'exists', instants: [local] }
  const before = offsetAt(zone, local - DAY_MS)
  const after = offsetAt(zone, local + DAY_MS)
  const instants = [...new Set([local - before, local - after])]
    .filter((instant) => wallAt(zone, instant) === local)
    .sort((a, b) => a - b)
  if (instants.length > 0) return { kind: 'exists', instants }
  return { kind: 'skipped', firstValid: firstValidAfterGap(zone, local, { before, after }) }
}

/**
 * The instant a local minute stands for under the cron rules: its only or first instance,
 * or for a skipped minute the first valid minute after it.
 *
 * @example
 * instantOfWallTime('America/New_York', wallMs(2026, 11, 1, 1, 30)) // 05:30Z (01:30 EDT, not EST)
 */
export function instantOfWallTime(zone: string, local: number): number {
  const resolution = resolveLocal(zone, local)
  return resolution.kind === 'exists' ? resolution.instants[0]! : resolution.firstValid
}

// In a gap the offset grew from `before` to `after`: the jump happened at some instant
// in (local - after, local - before]. Binary search (on whole seconds) for the first
// instant whose wall reading is at or past `local`, then round its wall reading up to a
// whole minute (transitions in the tz database fall on whole minutes since 1972; the
// rounding keeps older odd offsets honest).
function firstValidAfterGap(zone: string, local: number, offsets: { before: number; after: number }): number {
  let low = Math.floor((local - offsets.after) / 1000) // wall reading before `local`
  let high = Math.ceil((local - offsets.before) / 1000) // wall reading at or after `local`
  if (!(high > low) || wallAt(zone, high * 1000) < local) {
    throw new Error(`cannot resolve local time ${new Date(local).toISOString().slice(0, 16)} in ${zone}`)
  }
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2)
    if (wallAt(zone, middle * 1000) >= local) high = middle
    else low = middle
  }
  const jump = high * 1000
  const wall = wallAt(zone, jump)
  return jump + (Math.ceil(wall / MINUTE_MS) * MINUTE_MS - wall)
}

/**
 * ISO 8601 with the zone's offset at that instant, to the second.
 *
 * @example
 * formatInstant(new Date('2026-03-29T01:00:00Z'), 'Europe/Berlin') // '2026-03-29T03:00:00+02:00'
 * formatInstant(new Date('2026-03-29T01:00:00Z'), 'UTC') // '2026-03-29T01:00:00+00:00'
 */
export function formatInstant(instant: Date, zone: string): string {
  const offset = offsetAt(zone, instant.getTime())
  const wall = new Date(Math.floor(instant.getTime() / 1000) * 1000 + offset).toISOString().slice(0, 19)
  const sign = offset < 0 ? '-' : '+'
  const seconds = Math.abs(offset) / 1000
  const hh = String(Math.floor(seconds / 3600)).padStart(2, '0')
  const mm = String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')
  const ss = seconds % 60 === 0 ? '' : `:${String(seconds % 60).padStart(2, '0')}`
  return `${wall}${sign}${hh}:${mm}${ss}`
}
