// Reading a cron `schedule` and an IANA `timezone` member, shared by the `cron` section
// and the provider contract's `sync`. The cron module owns the expression syntax.

import { cronExpressionError } from '../lib/cron-expression.ts'
import { isValidTimeZone } from '../lib/time-zone.ts'
import type { ProblemCollector } from './problems.ts'
import { member, readString, type Fields } from './read-fields.ts'

export const DEFAULT_TIMEZONE = 'UTC'

export function scheduleField(problems: ProblemCollector, fields: Fields, key: string): string | undefined {
  const item = member(problems, fields, key, true)
  if (item === undefined) return undefined
  const schedule = readString(problems, item)
  if (schedule === undefined) return undefined
  const error = cronExpressionError(schedule)
  if (error === null) return schedule
  problems.report('MANIFEST_CRON_SCHEDULE_INVALID', item.node, item.path, `"${schedule}" is not a valid cron schedule: ${error}`)
  return undefined
}

/** An optional IANA zone; absent means UTC. */
export function timezoneField(problems: ProblemCollector, fields: Fields, key: string): string | undefined {
  const item = member(problems, fields, key, false)
  if (item === undefined) return DEFAULT_TIMEZONE
  const timezone = readString(problems, item)
  if (timezone === undefined) return undefined
  if (isValidTimeZone(timezone)) return timezone
  problems.report(
    'MANIFEST_TIMEZONE_INVALID',
    item.node,
    item.path,
    `"${timezone}" is not an IANA time zone name; use a name such as "UTC", "Europe/Berlin" or "America/New_York" (spelling and case must be exact)`,
  )
  return undefined
}
