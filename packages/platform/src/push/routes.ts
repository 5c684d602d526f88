/**
 * Web push on the app origin, behind the edge's admission (a private app's endpoints reach
 * only people it admits), for the browser SDK's `service.notifications`:
 *
 *   GET    /_service/push/vapid-public-key   { publicKey }: the applicationServerKey
 *   GET    /_service/push/sw.js              the service worker (browser-sdk push-sw.js)
 *   POST   /_service/push/subscriptions      body: PushSubscription.toJSON() -> 201 { id }
 *   DELETE /_service/push/subscriptions      body: { endpoint } -> { removed }
 *
 * The two writes answer same-origin SDK calls only (the `x-service-sdk: 1` header, and a
 * same-origin Origin when one is sent, as service.files), need a signed-in person
 * (AUTH_REQUIRED) and act on that person's subscriptions in the app's production namespace.
 */
import { PUSH_SERVICE_WORKER_SOURCE } from '@service/browser-sdk'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import type { EndpointPolicy } from './endpoints.ts'
import { parseSubscription, removeSubscription, saveSubscription } from './subscriptions.ts'
import type { VapidKeyStore } from './vapid-keys.ts'

export interface PushRequestTarget {
  readonly appId: string
  /** The app's origin on this request (same-origin check). */
  readonly origin: string
  readonly userId: string | null
}

export interface PushRoutesDeps {
  readonly db: Db
  readonly clock: Clock
  readonly vapid: VapidKeyStore
  readonly policy: EndpointPolicy
  readonly maxSubscriptionsPerUser: number
}

/** A subscription's JSON is well under 1 KiB; anything this large is not one. */
const MAX_BODY_BYTES = 8 * 1024
const NO_STORE = { 'cache-control': 'no-store' }

async function readBody(request: Request): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? '0')
  const text = declared > MAX_BODY_BYTES ? null : await request.text()
  if (text === null || Buffer.byteLength(text) > MAX_BODY_BYTES) {
    throw new ServiceError('BODY_TOO_LARGE', `the request body may be at most ${MAX_BODY_BYTES} bytes`)
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new ServiceError('PUSH_SUBSCRIPTION_INVALID', 'the request body must be JSON', { details: { field: 'subscription' } })
  }
}

/**
 * @example
 * const push = pushRoutes({ db, clock, vapid, policy, maxSubscriptionsPerUser: 10 })
 * edge.all('/_service/push/*', (c) => push(c.req.raw, { appId: app.id, origin, userId: caller.user?.id ?? null }))
 */
export function pushRoutes(deps: PushRoutesDeps): (request: Request, target: PushRequestTarget) => Promise<Response> {
  return async (request, target) => {
    const path = new URL(request.url).pathname.slice('/_service/push'.length)
    const reading = request.method === 'GET' || request.method === 'HEAD'
    if (path === '/vapid-public-key') {
      if (!reading) throw new ServiceError('METHOD_NOT_ALLOWED', 'read the key with GET')
      const { publicKey } = await deps.vapid.keys()
      return Response.json({ publicKey }, { headers: NO_STORE })
    }
    if (path === '/sw.js') {
      if (!reading) throw new ServiceError('METHOD_NOT_ALLOWED', 'the service worker is read with GET')
      return new Response(request.method === 'HEAD' ? null : PUSH_SERVICE_WORKER_SOURCE, {
        headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' },
      })
    }
    if (path !== '/subscriptions') throw new ServiceError('NOT_FOUND', 'no such push endpoint')
    if (request.method !== 'POST' && request.method !== 'DELETE') {
      throw new ServiceError('METHOD_NOT_ALLOWED', 'subscribe with POST, unsubscribe with DELETE /_service/push/subscriptions')
    }
    const sent = request.headers.get('origin')
    if ((sent && sent !== target.origin) || request.headers.get('x-service-sdk') !== '1') {
      throw new ServiceError('FORBIDDEN', 'push subscriptions answer same-origin SDK calls only (service.notifications)')
    }
    if (target.userId === null) throw new ServiceError('AUTH_REQUIRED', 'sign in to receive notifications')
    const namespace = await findNamespace(deps.db, target.appId)
    if (namespace === null) throw new ServiceError('APP_NOT_DEPLOYED', 'this app has no release yet')
    const owner = { appId: target.appId, namespaceId: namespace.id, userId: target.userId }
    const body = await readBody(request)
    if (request.method === 'DELETE') {
      const endpoint = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).endpoint : undefined
      return Response.json({ removed: await removeSubscription(deps, { owner, endpoint }) }, { headers: NO_STORE })
    }
    const subscription = parseSubscription(body, deps.policy)
    const id = await saveSubscription({ db: deps.db, clock: deps.clock, maxPerUser: deps.maxSubscriptionsPerUser }, { owner, subscription })
    return Response.json({ id }, { status: 201, headers: NO_STORE })
  }
}
