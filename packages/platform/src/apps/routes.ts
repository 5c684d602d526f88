/** Owner API for apps: create, list, read. */
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import { appForRole, type OwnerEnv } from '../identity/index.ts'
import { readObject } from '../http/json.ts'
import type { HostUrls } from '../http/hosts.ts'
import { appView, checkVisibility, createApp, listAppsOwnedBy } from './apps.ts'

export function appRoutes(deps: { db: Db; urls: HostUrls }) {
  const routes = new Hono<OwnerEnv>()
  routes.get('/', async (c) => {
    const apps = await listAppsOwnedBy(deps.db, c.var.user)
    return c.json({ apps: apps.map((app) => appView(app, deps.urls.app(app.slug))) })
  })
  routes.post('/', async (c) => {
    const body = await readObject(c)
    const app = await createApp(deps.db, c.var.user, {
      slug: body.slug as string,
      name: typeof body.name === 'string' ? body.name : undefined,
      visibility: checkVisibility(body.visibility ?? 'private'),
    })
    return c.json({ app: appView(app, deps.urls.app(app.slug)) }, 201)
  })
  routes.get('/:appId', async (c) => {
    // Edit holders read it too: `service deploy` looks the app up before deploying.
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId'), 'edit')
    return c.json({ app: appView(app, deps.urls.app(app.slug)) })
  })
  return routes
}
