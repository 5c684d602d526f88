// Operation orders.get (capability orders.read).
import { defineFunction, object, string } from '@service/server'
import { findOrder, requireAccess } from './sample-orders.ts'

export default defineFunction({
  input: object({ id: string() }),
  async handler({ input, secrets }) {
    await requireAccess(secrets)
    return { order: findOrder(input.id) }
  },
})
