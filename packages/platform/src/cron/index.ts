// Public surface of the cron feature: schedule times (times.ts, also the CLI's), the
// scheduler that turns occurrences into jobs, and the owner API (list, run now).

export {
  CronScheduleError, EARLIEST_INSTANT, LATEST_INSTANT, cronExpressionError, formatInstant, instantOfWallTime, isValidTimeZone,
  latestOccurrence, nextOccurrences, parseCronExpression, wallMs,
  type CronExpression, type CronParseResult, type LatestOccurrenceOptions, type NextOccurrencesOptions,
} from './times.ts'
export { createCronScheduler, evaluateSchedules, COALESCE_WINDOW_MS, type CronScheduler, type CronSchedulerOptions, type CronTick } from './scheduler.ts'
export { cronRoutes } from './routes.ts'
export { listAppCrons, triggerCronRun, type CronView } from './app-crons.ts'
