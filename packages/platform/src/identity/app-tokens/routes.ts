/**
 * HTTP API of app access tokens on `{base_url}`:
 * - the owner API (mounted under `/v1/apps` behind requireOwner): list, create and revoke an
 *   app's tokens. Creation answers with a one-time reveal link, never the value. The owner and
 *   Administer holders list and revoke (who reaches the app from outside is an access
 *   decision); only the owner creates, since a token acts as the owner (spec 2.3) and is valid
 *   only while its creator owns the app;
 * - the agent's request API (no credentials): file a request for a token of an app and
 *   poll it. The owner approves in the browser (pages.ts); the poll answers only
 *   the new token's id, never its value.
 */
import { limitPerClient } from '../../http/client-address.ts'
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { HostUrls } from '../../http/hosts.ts'
import type { OwnerEnv } from '../accounts/owner-auth.ts'
import { readObject } from '../../http/json.ts'
import { pollTokenRequest, tokenRequestStatus } from './app-tokens.ts'
import { createOwnerAppToken, requestAppToken, type TokenRequestDeps } from './issue.ts'
import { appTokensOf, pendingTokenRequests, refuseTokenRequest, revokeAppTokenOf } from './manage.ts'

export interface AppTokenRouteDeps {
  db: Db
  clock: Clock
  urls: HostUrls
  /** Seals token values for their reveal link (derived from the master key). */
  revealKey: Uint8Array
}

/**
 * Owner API: `GET|POST /:appId/access-tokens`, `DELETE /:appId/access-tokens/:tokenId`. List
 * and revoke: the owner and Administer holders; create: the owner. Pending agent requests:
 * `GET /:appId/access-token-requests` and `DELETE /:appId/access-token-requests/:requestId`
 * (refuse), the owner only (approval is a page: the value is shown there, once).
 */
export function appTokenRoutes(deps: AppTokenRouteDeps) {
  const { db, clock } = deps
  const routes = new Hono<OwnerEnv>()

  routes.get('/:appId/access-tokens', async (c) => {
    const tokens = await appTokensOf(db, { user: c.var.user, appId: c.req.param('appId') })
    return c.json({ tokens }, 200, { 'cache-control': 'no-store' })
  })

  routes.post('/:appId/access-tokens', async (c) => {
    const body = await readObject(c, 4096)
    const created = await createOwnerAppToken(deps, { user: c.var.user, appId: c.req.param('appId'), name: body.name })
    return c.json(created, 201, { 'cache-control': 'no-store' })
  })

  routes.delete('/:appId/access-tokens/:tokenId', async (c) => {
    await revokeAppTokenOf(db, clock, { user: c.var.user, appId: c.req.param('appId'), tokenId: c.req.param('tokenId') })
    return c.body(null, 204)
  })

  routes.get('/:appId/access-token-requests', async (c) => {
    const requests = await pendingTokenRequests(db, clock, { user: c.var.user, appId: c.req.param('appId') })
    return c.json({ requests: requests.map((request) => ({ ...request, approveUrl: `${deps.urls.auth}/app-tokens/requests/${request.id}` })) },
      200, { 'cache-control': 'no-store' })
  })

  routes.delete('/:appId/access-token-requests/:requestId', async (c) => {
    await refuseTokenRequest(db, clock, { user: c.var.user, appId: c.req.param('appId'), requestId: c.req.param('requestId') })
    return c.body(null, 204)
  })

  return routes
}

/** Agent API (no credentials): `POST /` files a request, `POST /:id/poll` reads its state. */
export function appTokenRequestRoutes(deps: TokenRequestDeps & { trustProxy?: boolean }) {
  const { db, clock } = deps
  const routes = new Hono()
  // Unauthenticated: bounded per client address so nobody can flood it.
  routes.post('/', limitPerClient({ db: deps.db, clock: deps.clock, trustProxy: deps.trustProxy ?? false }, { name: 'app-token-request-client', limit: 30, windowSeconds: 15 * 60 }))

  routes.post('/', async (c) => {
    const body = await readObject(c, 4096)
    return c.json(await requestAppToken(deps, { app: body.app, name: body.name }), 201, { 'cache-control': 'no-store' })
  })

  routes.post('/:id/poll', async (c) => {
    const body = await readObject(c, 4096)
    const request = await pollTokenRequest(db, {
      id: c.req.param('id'), pollToken: typeof body.pollToken === 'string' ? body.pollToken : '',
    })
    if (!request) throw new ServiceError('NOT_FOUND', 'no such token request (or the poll token does not match)')
    const status = tokenRequestStatus(request, clock.now())
    return c.json(status === 'approved' ? { status, tokenId: request.tokenId } : { status }, 200, { 'cache-control': 'no-store' })
  })

  return routes
}
