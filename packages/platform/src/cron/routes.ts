/**
 * Owner API for cron: `GET /v1/apps/{appId}/cron` lists the active release's cron
 * declarations with their next run; `POST /v1/apps/{appId}/cron/{name}/runs` runs one now.
 * The owner and Edit holders; a Use holder gets FORBIDDEN, anyone else APP_NOT_FOUND.
 */
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { appForRole, type OwnerEnv } from '../identity/index.ts'
import { listAppCrons, triggerCronRun } from './app-crons.ts'

export function cronRoutes(deps: { db: Db; clock: Clock }) {
  const routes = new Hono<OwnerEnv>()
  routes.get('/:appId/cron', async (c) => {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId'), 'edit')
    return c.json({ cron: await listAppCrons(deps.db, deps.clock, { app }) })
  })
  routes.post('/:appId/cron/:name/runs', async (c) => {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId'), 'edit')
    return c.json({ run: await triggerCronRun(deps.db, deps.clock, { app, name: c.req.param('name') }) }, 202)
  })
  return routes
}
