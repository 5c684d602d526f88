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
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'

interface CronEntry {
  name: string
  schedule: string
  timezone: string
  function: string
  enabled: boolean
  nextRunAtLocal: string | null
}

export async function cronListCommand(io: Io, client: Client, app: string | undefined): Promise<number> {
  if (!app) throw usageError('service cron list: name the app', usageOf('cron'))
  const { cron } = await client.call<{ cron: CronEntry[] }>('GET', `/v1/apps/${encodeURIComponent(app)}/cron`)
  printResult(io, { cron }, () => {
    if (cron.length === 0) io.out(`${app} declares no cron in its active release`)
    for (const entry of cron) {
      const next = entry.enabled ? `next ${entry.nextRunAtLocal ?? '- (app not active)'}` : 'disabled'
      io.out(`${entry.name.padEnd(24)} ${`"${entry.schedule}"`.padEnd(20)} ${entry.timezone.padEnd(20)} ${entry.function.padEnd(20)} ${next}`)
    }
  })
  return 0
}

export async function cronRunCommand(io: Io, client: Client, target: { app: string | undefined; name: string | undefined }): Promise<number> {
  const { app, name } = target
  if (!app || !name) throw usageError('service cron run: name the app and the cron entry', usageOf('cron'))
  const { run } = await client.call<{ run: { jobId: string; cron: string; scheduledAt: string } }>(
    'POST', `/v1/apps/${encodeURIComponent(app)}/cron/${encodeURIComponent(name)}/runs`)
  printResult(io, { run }, () => io.out(`queued a run of ${run.cron} (scheduledAt ${run.scheduledAt}): job ${run.jobId}; see it with: service jobs get ${run.jobId} --app ${app}`))
  return 0
}

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
  const wrong = (message: string): never => {
    throw usageError(`service cron next: ${message}`, usageOf('cron'))
  }
  const { expression } = options
  if (expression === undefined || expression.trim() === '') return wrong('the schedule expression is missing (quote it: "0 9 * * MON-FRI")')
  const zone = options.tz ?? 'UTC'
  if (!isValidTimeZone(zone)) {
    throw new CliError('TIME_ZONE_INVALID', `"${zone}" is not an IANA time zone name; use a name such as "UTC", "Europe/Berlin" or "America/New_York" (spelling and case must be exact)`)
  }
  let count = DEFAULT_COUNT
  if (options.count !== undefined) {
    if (!/^[0-9]+$/.test(options.count) || Number(options.count) < 1 || Number(options.count) > MAX_COUNT) {
      return wrong(`--count must be a whole number from 1 to ${MAX_COUNT}, not "${options.count}"`)
    }
    count = Number(options.count)
  }
  let from = options.now
  if (options.from !== undefined) {
    const parsed = parseFrom(options.from, zone)
    if (parsed === null) {
      return wrong(`--from "${options.from}" is not an ISO 8601 date-time such as 2026-03-29T00:00:00Z, 2026-03-29T01:00+01:00 or 2026-03-29 (read in --tz)`)
    }
    from = parsed
  }
  let next: string[]
  try {
    next = nextOccurrences(expression, { timezone: zone, from, count }).map((instant) => formatInstant(instant, zone))
  } catch (error) {
    if (!(error instanceof CronScheduleError)) throw error
    throw new CliError('CRON_SCHEDULE_INVALID', error.message, { cause: error })
  }
  printResult(io, { next }, () => {
    for (const instant of next) io.out(instant)
  })
  return 0
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
