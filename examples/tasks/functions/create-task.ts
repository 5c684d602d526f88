// Creates a task for the signed-in person and, when a reminder time is given, queues the
// reminder. Runs as the caller: row-level security stamps and checks owner_id.
import { defineFunction, errors, object, optional, string } from '@service/server'

export default defineFunction({
  input: object({ title: string(), remindAt: optional(string()) }),
  async handler({ input, user, data, jobs }) {
    if (!user) throw errors.unauthorized('SIGN_IN_REQUIRED', 'Sign in to create tasks')
    const title = input.title.trim()
    if (title.length === 0 || title.length > 200) {
      throw errors.badRequest('TITLE_INVALID', 'A title has 1 to 200 characters')
    }
    const task = await data.table('tasks').create({ title, remind_at: input.remindAt ?? null })
    if (input.remindAt) {
      const delaySeconds = Math.max(0, Math.round((Date.parse(input.remindAt) - Date.now()) / 1000))
      await jobs.enqueue('reminders', { taskId: task.id }, { idempotencyKey: `reminder:${task.id}`, delaySeconds })
    }
    return task
  },
})
