/**
 * The edge of every app origin: find the app, refuse what may not pass (unknown, not
 * deployed, not active, private without admission), then hand the request to the frontend
 * or a runtime API. Runtime APIs that are not built yet answer NOT_IMPLEMENTED by name.
 */
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import { ServiceError, notImplemented } from '../lib/errors.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import type { Frontend } from '../frontend/serve.ts'

type EdgeEnv = { Variables: { app: App } }

export function appEdge(deps: { db: Db; frontend: Frontend; slugOf: (request: Request) => string }) {
  const edge = new Hono<EdgeEnv>()
  edge.use('*', async (c, next) => {
    const slug = deps.slugOf(c.req.raw)
    const app = await findAppBySlug(deps.db, slug)
    if (!app) throw new ServiceError('APP_NOT_FOUND', `no app is deployed at ${slug}`)
    if (app.status !== 'active') {
      throw new ServiceError('APP_NOT_ACTIVE', `this app is ${app.status}`, { details: { status: app.status } })
    }
    if (app.visibility === 'private') {
      // Admission of private apps arrives with central sign-in; until then nothing passes.
      throw new ServiceError('AUTH_REQUIRED', 'this app is private and sign-in is not available on this platform yet')
    }
    c.set('app', app)
    await next()
  })
  edge.all('/rest/v1/*', () => {
    throw notImplemented('The data API (/rest/v1)')
  })
  edge.all('/_service/*', (c) => {
    throw notImplemented(`The runtime endpoint ${new URL(c.req.url).pathname}`)
  })
  edge.all('*', async (c) => {
    const app = c.var.app
    if (!app.activeReleaseId) throw new ServiceError('APP_NOT_DEPLOYED', `${app.slug} has no release yet; deploy one first`)
    return deps.frontend.serve(app.activeReleaseId, c.req.raw)
  })
  return edge
}
