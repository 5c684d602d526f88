// Operation orders.cancel (capability orders.write). The demo keeps no state: it answers
// the order as it would be after cancelling.
import { defineFunction, errors, object, string } from '@service/server'
import { findOrder, requireAccess } from './sample-orders.ts'

export default defineFunction({
  input: object({ id: string() }),
  async handler({ input, secrets }) {
    await requireAccess(secrets)
    const order = findOrder(input.id)
    if (order.status !== 'open') throw errors.conflict('ORDER_NOT_OPEN', `Order ${input.id} is ${order.status}; only open orders can be cancelled`)
    return { order: { ...order, status: 'cancelled' } }
  },
})
