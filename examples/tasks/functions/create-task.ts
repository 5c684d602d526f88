// Creates a task for the signed-in person and, when a reminder time is given, queues the
// reminder. Runs as the caller: row-level security stamps and checks owner_id.
import { defineFunction, errors, object, optional, string } from '@service/server'

/** The platform delays a job by at most seven days, so a reminder is at most that far ahead. */
const MAX_REMINDER_DELAY_SECONDS = 7 * 24 * 60 * 60

export default defineFunction({
  input: object({ title: string(), remindAt: optional(string()) }),
  async handler({ input, user, data, jobs }) {
    if (!user) throw errors.unauthorized('SIGN_IN_REQUIRED', 'Sign in to create tasks')
    const title = input.title.trim()
    if (title.length === 0 || title.length > 200) {
      throw errors.badRequest('TITLE_INVALID', 'A title has 1 to 200 characters')
    }
    const delaySeconds = input.remindAt === undefined ? undefined : reminderDelay(input.remindAt)
    const task = await data.table('tasks').create({ title, remind_at: input.remindAt ?? null })
    if (delaySeconds !== undefined) {
      await jobs.enqueue('reminders', { taskId: task.id }, { idempotencyKey: `reminder:${task.id}`, delaySeconds })
    }
    return task
  },
})

/** Seconds from now until `remindAt` (0 when it has passed); checked before anything is written. */
function reminderDelay(remindAt: string): number {
  const at = Date.parse(remindAt)
  if (Number.isNaN(at)) {
    throw errors.badRequest('REMIND_AT_INVALID', 'remindAt must be a date and time such as 2030-01-02T09:30:00Z')
  }
  const delaySeconds = Math.max(0, Math.round((at - Date.now()) / 1000))
  if (delaySeconds > MAX_REMINDER_DELAY_SECONDS) {
    throw errors.badRequest('REMIND_AT_TOO_FAR', 'A reminder can be set at most 7 days ahead')
  }
  return delaySeconds
}
