/**
 * The composition root: builds every feature from (config, db, clock, logger) and wires
 * them into the HTTP application. Nothing here connects or listens; `main.ts` does that.
 */
import { Hono } from 'hono'
import type { Config } from './config.ts'
import type { Db } from './db/db.ts'
import type { Clock } from './lib/clock.ts'
import type { Logger } from './lib/logger.ts'
import { notImplemented } from './lib/errors.ts'
import { appRoutes } from './apps/routes.ts'
import { deployRoutes } from './deploy/routes.ts'
import { createFrontend } from './frontend/serve.ts'
import { appEdge } from './http/app-edge.ts'
import { classifyHost, hostUrls } from './http/hosts.ts'
import { requireOwner, type OwnerEnv } from './http/owner-auth.ts'
import { createHttpApp } from './http/server.ts'
import { meRoutes, operatorRoutes } from './identity/routes.ts'
import { PLATFORM_SDK_VERSION } from './manifest/index.ts'

export interface PlatformDeps {
  config: Pick<Config, 'baseUrl' | 'production'>
  db: Db
  clock: Clock
  logger: Logger
  operatorKey: string
}

export interface Platform {
  /** Handles one HTTP request (any host). */
  fetch(request: Request): Promise<Response>
  urls: ReturnType<typeof hostUrls>
}

export function createPlatform(deps: PlatformDeps): Platform {
  const { db, clock, logger } = deps
  const urls = hostUrls(deps.config.baseUrl)

  const base = new Hono()
  base.get('/v1/health', (c) =>
    c.json({ status: 'ok', storage: { kind: db.kind, location: db.describe() }, sdkVersion: PLATFORM_SDK_VERSION }))
  base.route('/v1/operator', operatorRoutes({ db, clock, operatorKey: deps.operatorKey }))
  base.route('/v1/me', meRoutes({ db, clock }))
  const owner = new Hono<OwnerEnv>()
  owner.use('*', requireOwner({ db, clock }))
  owner.route('/', appRoutes({ db, urls }))
  owner.route('/', deployRoutes({ db, clock }))
  base.route('/v1/apps', owner)

  const auth = new Hono()
  auth.all('*', () => {
    throw notImplemented('Central sign-in')
  })

  const app = appEdge({
    db,
    frontend: createFrontend({ db }),
    slugOf: (request) => {
      const target = classifyHost(request.headers.get('host') ?? new URL(request.url).host, deps.config.baseUrl)
      return target.kind === 'app' ? target.slug : ''
    },
  })

  const http = createHttpApp({ baseUrl: deps.config.baseUrl, hosts: { base, auth, app }, logger, production: deps.config.production })
  return { fetch: async (request) => http.fetch(request), urls }
}
