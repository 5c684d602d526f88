/**
 * Owner API for Function logs, mounted under /v1/apps: `GET /:appId/logs` (production) and
 * `GET /:appId/dev/:devName/logs`, newest first, one bounded page at a time. Filters:
 * `function`, `level` (that level and above), `from` and `to` (inclusive ISO 8601 times),
 * `requestId`, `limit` (1 to 1000, default 100) and `cursor` (a page's `nextCursor`).
 * The owner and Edit holders: the people who change the code read what it logs.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import type { OwnerEnv } from '../identity/index.ts'
import { LOG_FILTERS, readAppLogs } from './app-logs.ts'

export function logRoutes(deps: { db: Db }) {
  const routes = new Hono<OwnerEnv>()
  async function list(c: Context<OwnerEnv>) {
    const filters = Object.fromEntries(LOG_FILTERS.flatMap((name) => {
      const value = c.req.query(name)
      return value === undefined ? [] : [[name, value]]
    }))
    return c.json(await readAppLogs(deps.db, { user: c.var.user, appId: c.req.param('appId')!, devName: c.req.param('devName'), filters }))
  }
  routes.get('/:appId/logs', list)
  routes.get('/:appId/dev/:devName/logs', list)
  return routes
}
