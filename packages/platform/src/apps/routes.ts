/**
 * Owner API for apps: create, list (every app the caller holds a role on, with that role),
 * read.
 */
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import { readObject } from '../http/json.ts'
import type { HostUrls } from '../http/hosts.ts'
import { appsOf, appView, checkVisibility, createApp, type AppAccess, type AppOwner } from './apps.ts'

/** Mounted behind the owner check, which puts the signed-in caller in `user`. */
export function appRoutes<U extends AppOwner>(deps: { db: Db; urls: HostUrls; access: AppAccess<U> }) {
  const routes = new Hono<{ Variables: { user: U } }>()
  routes.get('/', async (c) => {
    return c.json({ apps: await appsOf(deps, c.var.user) })
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
    const app = await deps.access.appForRole(c.var.user, c.req.param('appId'), 'edit')
    return c.json({ app: appView(app, deps.urls.app(app.slug)) })
  })
  return routes
}
