// The open and shipped orders from the bound "orders" connection. When the slot cannot be
// used yet (not bound, or the connection needs reconnecting) it answers { orders: null,
// problem } so the page can say what to do, instead of failing.
import { defineFunction, object } from '@service/server'

/** The broker's codes that mean "an administrator has something to do", not a failure. */
const SETUP_CODES = new Set([
  'INTEGRATION_NOT_BOUND', 'INTEGRATION_NOT_FOUND', 'INTEGRATION_RECONNECT_REQUIRED',
  'INTEGRATION_BINDING_SUSPENDED', 'INTEGRATION_BINDING_REVOKED',
])

export default defineFunction({
  input: object({}),
  async handler({ integrations }) {
    try {
      const result = await integrations.use('orders').call('orders.list', { limit: 10 }) as { orders: unknown[] }
      return { orders: result.orders, problem: null }
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (typeof code === 'string' && SETUP_CODES.has(code)) {
        return { orders: null, problem: { code, message: (error as Error).message } }
      }
      throw error
    }
  },
})
