/**
 * The HTTP application: one Hono app per host kind (control plane, central sign-in, app
 * origins) behind a dispatcher that routes on the Host header. Errors from every route
 * render through one handler in the `{"error": {code, message, details?}}` shape.
 */
import { Hono, type Context } from 'hono'
import type { Logger } from '../lib/logger.ts'
import { ServiceError, toErrorBody } from '../lib/errors.ts'
import { classifyHost } from './hosts.ts'

export interface HostApps {
  base: Hono<any>
  auth: Hono<any>
  app: Hono<any>
}

export function renderError(logger: Logger, production: boolean) {
  return (error: Error, c: Context) => {
    const { status, body } = toErrorBody(error)
    if (!(error instanceof ServiceError)) {
      logger.error('request failed', {
        method: c.req.method,
        path: new URL(c.req.url).pathname,
        error: error.message,
        ...(production ? {} : { stack: error.stack }),
      })
    }
    return c.json(body, status as 400)
  }
}

export function createHttpApp(deps: { baseUrl: URL; hosts: HostApps; logger: Logger; production: boolean }) {
  const onError = renderError(deps.logger, deps.production)
  const notFound = (c: Context) =>
    c.json({ error: { code: 'NOT_FOUND', message: `no route for ${c.req.method} ${new URL(c.req.url).pathname}` } }, 404)
  // Each host app is mounted in a wrapper that renders errors and unknown routes; a host app
  // with its own error handler (the sign-in pages) keeps it.
  const wrap = (app: Hono<any>) => {
    const wrapper = new Hono()
    wrapper.onError(onError)
    wrapper.notFound(notFound)
    return wrapper.route('/', app)
  }
  const hosts = { base: wrap(deps.hosts.base), auth: wrap(deps.hosts.auth), app: wrap(deps.hosts.app) }
  // The dispatcher is a plain function, not another Hono app: one routing pass per request.
  return {
    /** `env` is @hono/node-server's (the socket), which per-client rate limits read the address from. */
    fetch(request: Request, env?: unknown): Response | Promise<Response> {
      const target = classifyHost(request.headers.get('host') ?? new URL(request.url).host, deps.baseUrl)
      switch (target.kind) {
        case 'base':
          return hosts.base.fetch(request, env)
        case 'auth':
          return hosts.auth.fetch(request, env)
        case 'app':
          return hosts.app.fetch(request, env)
        case 'unknown':
          return Response.json({ error: { code: 'HOST_NOT_FOUND', message: 'this platform does not serve that host' } }, { status: 404 })
      }
    },
  }
}
