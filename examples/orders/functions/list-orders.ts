// Operation orders.list (capability orders.read).
import { defineFunction, enumOf, number, object, optional } from '@service/server'
import { requireAccess, SAMPLE_ORDERS } from './sample-orders.ts'

export default defineFunction({
  input: object({ status: optional(enumOf(['open', 'shipped', 'cancelled'])), limit: optional(number()) }),
  async handler({ input, secrets }) {
    await requireAccess(secrets)
    const orders = SAMPLE_ORDERS.filter((o) => input.status === undefined || o.status === input.status)
    return { orders: orders.slice(0, input.limit ?? 50) }
  },
})
