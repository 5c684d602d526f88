// The demo shop's orders, and the access check every operation makes first: the
// connection's access token (ctx.secrets OAUTH_ACCESS_TOKEN during an operation) must be
// one this app signed.
import { errors, type SecretsClient } from '@service/server'
import { CLIENT_SECRET, isAccessToken } from './demo-oauth.ts'

export interface Order {
  id: string
  customer: string
  total: number
  currency: string
  status: 'open' | 'shipped' | 'cancelled'
  placedAt: string
}

export const SAMPLE_ORDERS: readonly Order[] = [
  { id: 'ord_1003', customer: 'Grace Hopper', total: 42.5, currency: 'EUR', status: 'open', placedAt: '2026-11-20T09:12:00Z' },
  { id: 'ord_1002', customer: 'Alan Turing', total: 18, currency: 'EUR', status: 'shipped', placedAt: '2026-11-18T15:40:00Z' },
  { id: 'ord_1001', customer: 'Ada Lovelace', total: 129.9, currency: 'EUR', status: 'shipped', placedAt: '2026-11-15T11:05:00Z' },
]

/** Throws unauthorized (the connection becomes Reconnect required) without a valid access token. */
export async function requireAccess(secrets: SecretsClient): Promise<void> {
  const token = await secrets.get('OAUTH_ACCESS_TOKEN')
  if (token === null || !(await isAccessToken(await secrets.require(CLIENT_SECRET), token))) {
    throw errors.unauthorized('ACCESS_TOKEN_INVALID', 'The access token is missing or not valid; reconnect')
  }
}

export function findOrder(id: string): Order {
  const order = SAMPLE_ORDERS.find((o) => o.id === id)
  if (!order) throw errors.notFound('ORDER_NOT_FOUND', `No order ${id}`)
  return order
}
