/**
 * Owner API for a provider app's administrators (mounted under /v1/apps):
 * `GET /:appId/integration-oauth` shows what to register at the external system: the
 * redirect URI (`{base_url}/v1/custom-integrations/oauth/callback`), with the declared
 * authorization URL, client id, scopes and whether PKCE is used. Only the people who may
 * administer the integration (mayAdministerIntegration) see it; to anyone else the app's
 * integration does not exist.
 */
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import { mayAdministerIntegration, type OwnerEnv } from '../../identity/index.ts'
import { readAuthorization } from './authorization.ts'
import { callbackUrl } from './flow.ts'
import { selectProviderApp } from './queries.ts'

export function oauthAdminRoutes(deps: { db: Db; baseUrl: string }) {
  const routes = new Hono<OwnerEnv>()
  routes.get('/:appId/integration-oauth', async (c) => {
    const appRef = c.req.param('appId')
    const notFound = new ServiceError('INTEGRATION_NOT_FOUND', `the app "${appRef}" publishes no OAuth 2.0 integration you administer`)
    if (appRef.length === 0 || appRef.length > 100) throw notFound
    const app = await selectProviderApp(deps.db, appRef, isUuid(appRef))
    if (!app || app.app_status === 'archived') throw notFound
    if (!await mayAdministerIntegration(deps.db, { user: c.var.user, providerApp: { id: app.id } })) throw notFound
    const authorization = readAuthorization(app.integration)
    if (!authorization) throw notFound
    return c.json({
      integration: (app.integration as { name: string }).name,
      callbackUrl: callbackUrl(deps.baseUrl),
      authorizationUrl: authorization.authorizationUrl,
      clientId: authorization.clientId,
      scopes: authorization.scopes,
      pkce: authorization.pkce,
    })
  })
  return routes
}
