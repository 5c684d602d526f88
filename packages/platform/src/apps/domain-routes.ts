/**
 * Owner API for custom domains (mounted under /v1/apps): `GET /{app}/domains` for the app's
 * owner, its Administer holders and platform administrators; `PUT` and `DELETE /{app}/domains/{domain}` for
 * platform administrators only, since a mapping is only as good as the DNS record and the
 * TLS certificate the operator puts in front (docs/operations.md, "Custom domains").
 */
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import type { HostUrls } from '../http/hosts.ts'
import { findAppByIdOrSlug, type App, type AppAccess, type AppOwner } from './apps.ts'
import { checkDomain, domainView, listDomains, mapDomain, unmapDomain } from './domains.ts'

/** The signed-in owner API caller, as this file reads it. */
interface Caller extends AppOwner {
  readonly isPlatformAdmin: boolean
  readonly emailConfirmedAt: Date | null
}

function isPlatformAdmin(user: Caller): boolean {
  return user.isPlatformAdmin && user.emailConfirmedAt !== null
}

/** Mounted behind the owner check, which puts the signed-in caller in `user`. */
export function domainRoutes<U extends Caller>(deps: { db: Db; clock: Clock; urls: HostUrls; baseUrl: URL; access: AppAccess<U> }) {
  const routes = new Hono<{ Variables: { user: U } }>()
  const view = (domain: Parameters<typeof domainView>[0]) => domainView(domain, deps.urls.custom(domain.domain))

  /**
   * The app for a platform administrator (any app), or for its owner and Administer holders;
   * FORBIDDEN for a lower role, APP_NOT_FOUND for anyone else.
   */
  async function visibleApp(user: U, idOrSlug: string): Promise<App> {
    if (!isPlatformAdmin(user)) return await deps.access.appForRole(user, idOrSlug, 'administer')
    const app = await findAppByIdOrSlug(deps.db, idOrSlug)
    if (!app) throw new ServiceError('APP_NOT_FOUND', `no app "${idOrSlug}"`)
    return app
  }

  function requireAdmin(user: Caller): void {
    if (!isPlatformAdmin(user)) {
      throw new ServiceError('FORBIDDEN',
        'only a platform administrator maps custom domains: the operator controls their DNS and TLS certificate')
    }
  }

  routes.get('/:appId/domains', async (c) => {
    const app = await visibleApp(c.var.user, c.req.param('appId'))
    const domains = await listDomains(deps.db, app.id)
    return c.json({ domains: domains.map(view) })
  })

  routes.put('/:appId/domains/:domain', async (c) => {
    requireAdmin(c.var.user)
    const domain = checkDomain(c.req.param('domain'), deps.baseUrl)
    const app = await visibleApp(c.var.user, c.req.param('appId'))
    const result = await mapDomain(deps.db, deps.clock, { app, domain, by: c.var.user })
    return c.json({ domain: view(result.domain) }, result.created ? 201 : 200)
  })

  routes.delete('/:appId/domains/:domain', async (c) => {
    requireAdmin(c.var.user)
    const domain = checkDomain(c.req.param('domain'), deps.baseUrl)
    const app = await visibleApp(c.var.user, c.req.param('appId'))
    if (!(await unmapDomain(deps.db, deps.clock, { app, domain }))) {
      throw new ServiceError('DOMAIN_NOT_FOUND', `${domain} is not a custom domain of ${app.slug}`)
    }
    return c.body(null, 204)
  })
  return routes
}
