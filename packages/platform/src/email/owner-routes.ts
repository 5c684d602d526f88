/**
 * App email on the owner API, mounted under /v1/apps: `POST /:appId/dev/:devName/email/inbound`
 * injects a synthetic inbound message into a development namespace (dev-inbound.ts). Edit on
 * the app is needed: it runs the namespace's code, like a development invocation.
 */
import { Hono } from 'hono'
import { readObject } from '../http/json.ts'
import { appForRole, type OwnerEnv } from '../identity/index.ts'
import { checkDevName } from '../namespaces/dev-names.ts'
import { injectDevInbound, type DevInboundDeps } from './dev-inbound.ts'

export function emailOwnerRoutes(deps: DevInboundDeps) {
  const routes = new Hono<OwnerEnv>()
  routes.post('/:appId/dev/:devName/email/inbound', async (c) => {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId'), 'edit')
    const devName = checkDevName(c.req.param('devName'))
    // Attachments arrive in base64: a third larger than the message they make.
    const body = await readObject(c, Math.ceil(deps.maxBytes * 4 / 3) + 64 * 1024)
    return c.json(await injectDevInbound(deps, { app, devName, body }))
  })
  return routes
}
