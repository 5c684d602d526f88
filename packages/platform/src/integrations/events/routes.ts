/**
 * `GET /v1/apps/{appId}/integration-events` (spec 4.1, 6.1): the consumer app's event
 * deliveries, newest first, with their attempts and last error and never their payload.
 * Query: `limit` (1 to 100, default 50), `nextCursor` from a previous page, `state`
 * (waiting, running, delivered, failed). Needs Edit on the app (identity's appForRole).
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { OwnerEnv } from '../../identity/index.ts'
import { listAppDeliveries } from './deliveries.ts'

export function integrationEventRoutes(deps: { db: Db }) {
  const routes = new Hono<OwnerEnv>()
  routes.get('/:appId/integration-events', async (c: Context<OwnerEnv>) => {
    return c.json(await listAppDeliveries(deps.db, {
      user: c.var.user,
      appId: c.req.param('appId')!,
      query: { limit: c.req.query('limit'), state: c.req.query('state'), nextCursor: c.req.query('nextCursor') },
    }))
  })
  return routes
}
