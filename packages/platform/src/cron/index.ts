// Public surface of the cron feature: parsing five-field schedules, when a schedule runs
// in a time zone (shared by the scheduler and the CLI), and instants printed with the
// zone's offset.

export { cronExpressionError, parseCronExpression, type CronExpression, type CronParseResult } from './expression.ts'
export { isValidTimeZone } from './timezone.ts'
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
