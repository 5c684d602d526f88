/**
 * Owner API for apps: create, list (every app the caller holds a role on, with that role),
 * read.
 */
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import { readObject } from '../http/json.ts'
import type { HostUrls } from '../http/hosts.ts'
import { appView, checkVisibility, createApp, listAppsOwnedOrGranted, type AppAccess, type AppOwner } from './apps.ts'

/** Mounted behind the owner check, which puts the signed-in caller in `user`. */
export function appRoutes<U extends AppOwner>(deps: { db: Db; urls: HostUrls; access: AppAccess<U> }) {
  const routes = new Hono<{ Variables: { user: U } }>()
  routes.get('/', async (c) => {
    const user = c.var.user
    const rows = await listAppsOwnedOrGranted(deps.db, user)
    return c.json({
      apps: rows.flatMap(({ app, grant }) => {
        const role = deps.access.roleFrom({ app, user, grant })
        return role === null ? [] : [{ ...appView(app, deps.urls.app(app.slug)), role, owned: app.ownerId === user.id }]
      }),
    })
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
