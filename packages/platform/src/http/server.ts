/**
 * The HTTP application: one Hono app per host kind (control plane, central sign-in, app
 * origins) behind a dispatcher that routes on the Host header. Errors from every route
 * render through one handler in the `{"error": {code, message, details?}}` shape. The
 * dispatcher gives each request an id (`x-request-id`) and logs one line per request.
 */
import { Hono, type Context } from 'hono'
import type { Logger, LogLevel } from '../lib/logger.ts'
import { ServiceError, toErrorBody } from '../lib/errors.ts'
import { classifyHost } from './hosts.ts'
import { REQUEST_ID_HEADER, assignRequestId, requestIdOf } from './request-id.ts'

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
        requestId: requestIdOf(c.req.raw),
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
  const dispatch = (request: Request, env: unknown, host: string): Response | Promise<Response> => {
    const target = classifyHost(host, deps.baseUrl)
    switch (target.kind) {
      case 'base':
        return hosts.base.fetch(request, env)
      case 'auth':
        return hosts.auth.fetch(request, env)
      case 'app':
      // A custom domain is an app origin if it is mapped; the edge answers HOST_NOT_FOUND if not.
      case 'custom':
        return hosts.app.fetch(request, env)
      case 'unknown':
        return Response.json({ error: { code: 'HOST_NOT_FOUND', message: 'this platform does not serve that host' } }, { status: 404 })
    }
  }
  // The dispatcher is a plain function, not another Hono app: one routing pass per request.
  return {
    /** `env` is @hono/node-server's (the socket), which per-client rate limits read the address from. */
    fetch(request: Request, env?: unknown): Response | Promise<Response> {
      const started = performance.now()
      const requestId = assignRequestId(request)
      const host = request.headers.get('host') ?? new URL(request.url).host
      const finish = (response: Response): Response => {
        const stamped = withRequestId(response, requestId)
        logRequest(deps.logger, { request, host, requestId, status: stamped.status, started })
        return stamped
      }
      const failed = (error: unknown): never => {
        logRequest(deps.logger, { request, host, requestId, status: 500, started })
        throw error
      }
      try {
        const response = dispatch(request, env, host)
        return response instanceof Promise ? response.then(finish, failed) : finish(response)
      } catch (error) {
        return failed(error)
      }
    },
  }
}

/** Longest host and path written to a request line (a request can carry much longer ones). */
const MAX_LOGGED_LENGTH = 512

/**
 * One structured line per request: method, host, path (never the query string, which can
 * hold sign-in codes and keys), status, duration to the response head, request id. Health
 * checks log at debug, server errors at warn, the rest at info.
 */
function logRequest(
  logger: Logger,
  line: { request: Request; host: string; requestId: string; status: number; started: number },
): void {
  // A connection's webhook URL is a secret in its path (integrations/webhooks): nothing after
  // `/v1/hooks/` is logged, whatever the segments (`/v1/hooks//<token>` too).
  const path = new URL(line.request.url).pathname.replace(/^\/v1\/hooks\/.*/s, '/v1/hooks/[secret]')
  const level: LogLevel = line.status >= 500 ? 'warn' : path === '/v1/health' ? 'debug' : 'info'
  logger[level]('request', {
    requestId: line.requestId,
    method: line.request.method,
    host: line.host.slice(0, MAX_LOGGED_LENGTH),
    path: path.slice(0, MAX_LOGGED_LENGTH),
    status: line.status,
    durationMs: Math.round((performance.now() - line.started) * 10) / 10,
  })
}

/** The response with the request id header; a response with immutable headers is copied. */
function withRequestId(response: Response, requestId: string): Response {
  try {
    response.headers.set(REQUEST_ID_HEADER, requestId)
    return response
  } catch {
    const copy = new Response(response.body, response)
    copy.headers.set(REQUEST_ID_HEADER, requestId)
    return copy
  }
}
