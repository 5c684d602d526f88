// The `queues` section: durable background queues, each consumed by a system Function,
// with the retry, concurrency and timeout policy applied to every job enqueued on it.

import { JOB_NAME } from './names.ts'
import {
  arrayField,
  booleanField,
  integerField,
  member,
  readMapping,
  readString,
  type Fields,
  type Item,
} from './read-fields.ts'
import { reportDuplicateNames, systemFunctionField, type SectionContext } from './section-context.ts'
import type { QueueDeclaration } from './types.ts'

export const QUEUE_DEFAULTS = {
  concurrency: 1,
  maxAttempts: 3,
  retryDelaySeconds: 30,
  retryBackoff: false,
  timeoutSeconds: 60,
} as const

export function readQueues(context: SectionContext, root: Fields): QueueDeclaration[] | undefined {
  const items = arrayField(context.problems, root, 'queues', { required: false })
  if (items === undefined) return []
  const queues: QueueDeclaration[] = []
  const names: { name: string; item: Item }[] = []
  let valid = true
  for (const item of items) {
    const queue = readQueue(context, item, names)
    if (queue === undefined) valid = false
    else queues.push(queue)
  }
  reportDuplicateNames(context.problems, names, 'queue')
  return valid ? queues : undefined
}

function readQueue(context: SectionContext, item: Item, names: { name: string; item: Item }[]): QueueDeclaration | undefined {
  const { problems } = context
  const fields = readMapping(problems, item, 'queues[]')
  if (fields === undefined) return undefined
  const nameItem = member(problems, fields, 'name', true)
  const name = nameItem === undefined ? undefined : readString(problems, nameItem, JOB_NAME)
  if (name !== undefined && nameItem !== undefined) names.push({ name, item: nameItem })
  const consumer = systemFunctionField(context, fields, 'function', { required: true, role: 'a queue consumer' })
  const concurrency = integerField(problems, fields, 'concurrency', { required: false, min: 1, max: 100 })
  const maxAttempts = integerField(problems, fields, 'maxAttempts', { required: false, min: 1, max: 25 })
  const retryDelaySeconds = integerField(problems, fields, 'retryDelaySeconds', { required: false, min: 0, max: 86_400 })
  const retryBackoff = booleanField(problems, fields, 'retryBackoff')
  const timeoutSeconds = integerField(problems, fields, 'timeoutSeconds', { required: false, min: 1, max: 900 })
  if (name === undefined || consumer === undefined) return undefined
  return {
    name,
    function: consumer,
    concurrency: concurrency ?? QUEUE_DEFAULTS.concurrency,
    maxAttempts: maxAttempts ?? QUEUE_DEFAULTS.maxAttempts,
    retryDelaySeconds: retryDelaySeconds ?? QUEUE_DEFAULTS.retryDelaySeconds,
    retryBackoff: retryBackoff ?? QUEUE_DEFAULTS.retryBackoff,
    timeoutSeconds: timeoutSeconds ?? QUEUE_DEFAULTS.timeoutSeconds,
  }
}
