// Queue consumer for `reminders`: marks the task as reminded. A system Function: it runs
// with the app's system identity, so auth.is_system() lets it read every owner's task.
import { defineFunction, errors, object, uuid } from '@service/server'

export default defineFunction({
  input: object({ taskId: uuid() }),
  async handler({ input, data, log, job }) {
    const tasks = data.table('tasks')
    const task = await tasks.getById(input.taskId)
    if (!task) throw errors.notFound('ITEM_NOT_FOUND', 'The task no longer exists')
    if (task.done || task.reminded_at) return { skipped: true }
    await tasks.updateById(input.taskId, { reminded_at: new Date().toISOString() })
    log.info('reminder sent', { taskId: input.taskId, attempt: job?.attempt })
    return { reminded: true }
  },
})
