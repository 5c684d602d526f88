// The pure part of the cron feature, without database or jobs: parsing five-field
// schedules, when a schedule runs in a time zone, and instants printed with the zone's
// offset. The CLI imports this (as `@service/platform/cron`) to print exactly what the
// scheduler will do; the platform reaches it through index.ts.

export { cronExpressionError, parseCronExpression, type CronExpression, type CronParseResult } from '../lib/cron-expression.ts'
export { isValidTimeZone } from '../lib/time-zone.ts'
export {
  CronScheduleError,
  EARLIEST_INSTANT,
  LATEST_INSTANT,
  latestOccurrence,
  nextOccurrences,
  type LatestOccurrenceOptions,
  type NextOccurrencesOptions,
} from './next.ts'
export { formatInstant, instantOfWallTime, wallMs } from './zone-time.ts'
