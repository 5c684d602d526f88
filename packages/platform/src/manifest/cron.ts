// The `cron` section: named schedules that invoke a system Function, optionally in a
// given IANA time zone.

import { arrayField, booleanField, member, readMapping, readString, type Fields, type Item } from './read-fields.ts'
import { JOB_NAME } from './names.ts'
import { scheduleField, timezoneField } from './schedule-fields.ts'
import { reportDuplicateNames, systemFunctionField, type SectionContext } from './section-context.ts'
import type { CronDeclaration } from './types.ts'

export function readCron(context: SectionContext, root: Fields): CronDeclaration[] | undefined {
  const items = arrayField(context.problems, root, 'cron', { required: false })
  if (items === undefined) return []
  const entries: CronDeclaration[] = []
  const names: { name: string; item: Item }[] = []
  let valid = true
  for (const item of items) {
    const entry = readCronEntry(context, item, names)
    if (entry === undefined) valid = false
    else entries.push(entry)
  }
  reportDuplicateNames(context.problems, names, 'cron')
  return valid ? entries : undefined
}

function readCronEntry(context: SectionContext, item: Item, names: { name: string; item: Item }[]): CronDeclaration | undefined {
  const { problems } = context
  const fields = readMapping(problems, item, 'cron[]')
  if (fields === undefined) return undefined
  const nameItem = member(problems, fields, 'name', true)
  const name = nameItem === undefined ? undefined : readString(problems, nameItem, JOB_NAME)
  if (name !== undefined && nameItem !== undefined) names.push({ name, item: nameItem })
  const schedule = scheduleField(problems, fields, 'schedule')
  const target = systemFunctionField(context, fields, 'function', { required: true, role: 'a cron target' })
  const enabled = booleanField(problems, fields, 'enabled')
  const timezone = timezoneField(problems, fields, 'timezone')
  if (name === undefined || schedule === undefined || target === undefined || timezone === undefined) return undefined
  return { name, schedule, function: target, enabled: enabled ?? true, timezone }
}
