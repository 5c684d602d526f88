/**
 * `service cron next "<expr>" [--tz Zone] [--from ISO] [--count N]`: the next times a
 * schedule runs, computed offline by the platform's own cron code (the scheduler uses the
 * same functions), one ISO 8601 instant with the zone's offset per line.
 * `service cron list <app>` and `service cron run <app> <name>`: the owner API's cron
 * listing and manual run.
 */
import {
  CronScheduleError, formatInstant, instantOfWallTime, isValidTimeZone, nextOccurrences, wallMs,
} from '@service/platform/cron'
import type { Client } from '../client.ts'
import type { Io } from '../io.ts'

interface CronEntry {
  name: string
  schedule: string
  timezone: string
  function: string
  enabled: boolean
  nextRunAtLocal: string | null
}

export async function cronListCommand(io: Io, client: Client, app: string | undefined): Promise<number> {
  if (!app) {
    io.err('usage: service cron list <app>')
    return 2
  }
  const { cron } = await client.call<{ cron: CronEntry[] }>('GET', `/v1/apps/${encodeURIComponent(app)}/cron`)
  if (cron.length === 0) io.out(`${app} declares no cron in its active release`)
  for (const entry of cron) {
    const next = entry.enabled ? `next ${entry.nextRunAtLocal ?? '- (app not active)'}` : 'disabled'
    io.out(`${entry.name.padEnd(24)} ${`"${entry.schedule}"`.padEnd(20)} ${entry.timezone.padEnd(20)} ${entry.function.padEnd(20)} ${next}`)
  }
  return 0
}

export async function cronRunCommand(io: Io, client: Client, target: { app: string | undefined; name: string | undefined }): Promise<number> {
  const { app, name } = target
  if (!app || !name) {
    io.err('usage: service cron run <app> <name>')
    return 2
  }
  const { run } = await client.call<{ run: { jobId: string; cron: string; scheduledAt: string } }>(
    'POST', `/v1/apps/${encodeURIComponent(app)}/cron/${encodeURIComponent(name)}/runs`)
  io.out(`queued a run of ${run.cron} (scheduledAt ${run.scheduledAt}): job ${run.jobId}`)
  return 0
}

export const CRON_NEXT_USAGE = 'usage: service cron next "<expr>" [--tz <zone>] [--from <ISO 8601>] [--count <1-1000>]'
const DEFAULT_COUNT = 5
const MAX_COUNT = 1000

export interface CronNextOptions {
  readonly expression: string | undefined
  readonly tz: string | undefined
  readonly from: string | undefined
  readonly count: string | undefined
  readonly now: Date
}

export function cronNextCommand(io: Io, options: CronNextOptions): number {
  const usageError = (message: string) => {
    io.err(`service cron next: ${message}\n${CRON_NEXT_USAGE}`)
    return 2
  }
  const { expression } = options
  if (expression === undefined || expression.trim() === '') return usageError('the schedule expression is missing (quote it: "0 9 * * MON-FRI")')
  const zone = options.tz ?? 'UTC'
  if (!isValidTimeZone(zone)) {
    io.err(`service cron next: "${zone}" is not an IANA time zone name; use a name such as "UTC", "Europe/Berlin" or "America/New_York" (spelling and case must be exact)`)
    return 1
  }
  let count = DEFAULT_COUNT
  if (options.count !== undefined) {
    if (!/^[0-9]+$/.test(options.count) || Number(options.count) < 1 || Number(options.count) > MAX_COUNT) {
      return usageError(`--count must be a whole number from 1 to ${MAX_COUNT}, not "${options.count}"`)
    }
    count = Number(options.count)
  }
  let from = options.now
  if (options.from !== undefined) {
    const parsed = parseFrom(options.from, zone)
    if (parsed === null) {
      return usageError(`--from "${options.from}" is not an ISO 8601 date-time such as 2026-03-29T00:00:00Z, 2026-03-29T01:00+01:00 or 2026-03-29 (read in --tz)`)
    }
    from = parsed
  }
  try {
    for (const instant of nextOccurrences(expression, { timezone: zone, from, count })) io.out(formatInstant(instant, zone))
    return 0
  } catch (error) {
    if (!(error instanceof CronScheduleError)) throw error
    io.err(`service cron next: ${error.message}`)
    return 1
  }
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?)?(Z|z|[+-]\d{2}:?\d{2})?$/

/**
 * An ISO 8601 instant. With an offset or Z it is taken as written; without one (a date, or
 * a date and time) it is local time in `zone`, resolved like a schedule's minute: a
 * repeated time means its first instance, a skipped one the first valid minute after it.
 */
function parseFrom(text: string, zone: string): Date | null {
  const match = ISO.exec(text.trim())
  if (match === null) return null
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction, offset] = match
  const fields = [Number(year), Number(month), Number(day), Number(hour), Number(minute), Number(second)] as const
  const local = wallMs(...fields)
  // Reject calendar overflow such as 2026-02-30 or 25:00 instead of rolling it over.
  const check = new Date(local)
  if (check.getUTCMonth() + 1 !== fields[1] || check.getUTCDate() !== fields[2] || fields[3] > 23 || fields[4] > 59 || fields[5] > 59) return null
  const millis = fraction === undefined ? 0 : Math.floor(Number(`0${fraction}`) * 1000)
  if (offset === undefined) {
    const minuteStart = local - fields[5] * 1000
    return new Date(instantOfWallTime(zone, minuteStart) + fields[5] * 1000 + millis)
  }
  const sign = offset.startsWith('-') ? -1 : 1
  const digits = offset.replace(/[^0-9]/g, '')
  const offsetMs = offset.toUpperCase() === 'Z' ? 0 : sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4))) * 60_000
  return new Date(local + millis - offsetMs)
}
