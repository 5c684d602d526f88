/**
 * Owner API of published integration contracts, mounted under /v1/apps:
 * `GET /:appId/custom-integrations` lists the contracts published in the app's organisation
 * that the caller may use (paginated by name: `limit`, `nextCursor`). Callers need Edit on
 * the app (they build or bind its integrations), as for its deployments.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import type { OwnerEnv } from '../identity/index.ts'
import { listCustomIntegrations } from './custom-integrations.ts'

export function customIntegrationRoutes(deps: { db: Db }) {
  const routes = new Hono<OwnerEnv>()
  async function list(c: Context<OwnerEnv>) {
    return c.json(await listCustomIntegrations(deps.db, {
      user: c.var.user,
      appId: c.req.param('appId')!,
      query: { limit: c.req.query('limit'), nextCursor: c.req.query('nextCursor') },
    }))
  }
  routes.get('/:appId/custom-integrations', list)
  return routes
}
