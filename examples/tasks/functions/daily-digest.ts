// Cron target: counts open tasks each weekday morning (Europe/Berlin). Its schema accepts
// the full cron envelope, as every cron target must.
import { defineFunction, literal, object, string } from '@service/server'

export default defineFunction({
  input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }),
  async handler({ input, data, log }) {
    const open = await data.table('tasks').list({ where: { done: false }, limit: 1000, select: ['id'] })
    log.info('daily digest', { scheduledAt: input.scheduledAt, openTasks: open.length })
    return { openTasks: open.length }
  },
})
