/**
 * The edge of every app origin, in order: find the app (by `<slug>.<base domain>`, or a
 * custom domain mapped to it, whose origin then stands for the app's in redirects and
 * same-origin checks) and refuse an inactive one; the sign-in endpoints (callback,
 * sign-in, sign-out); identify the caller (app session cookie,
 * or a bearer access token for this app; on the data API, checked by the data statement
 * itself); who the caller is (`/_service/auth/user`); admit
 * private apps (no identity: sign-in redirect for a browser page, 401 for an API; identity
 * without access: 403); then the SDK, session tokens, the runtime APIs and the frontend.
 * Runtime APIs not built yet answer NOT_IMPLEMENTED by name.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError, notImplemented } from '../lib/errors.ts'
import type { App, AppDirectory } from '../apps/apps.ts'
import type { Frontend } from '../frontend/serve.ts'
import type { HostTarget, HostUrls } from '../http/hosts.ts'
import { createBrowserSdkScripts } from '../functions/index.ts'
import {
  accessReason, APP_TOKEN_PREFIX, appSessionById, appSessionGate, appTokenGate, browserSecret, clearCookie, createAccessTokenVerifier,
  exchangeCode, LIFETIMES, mintAccessToken, readCookie, resolveAppSession, signOutAppSession, VERIFICATION_REQUIRED,
  writeCookie, type AppSessionDeps, type CookieOptions, type DataGate, type User, type VerifiedAppToken,
} from '../identity/index.ts'
import { page, escapeHtml } from '../lib/html.ts'
import { sameOriginUrl } from '../lib/redirects.ts'
import { safeEqual } from '../lib/crypto.ts'
import type { DataApi } from '../data-api/index.ts'
import type { SearchRequestTarget } from '../search/routes.ts'
import type { RealtimeTarget } from '../realtime/index.ts'

export interface Caller {
  user: User | null
  appSessionId: string | null
  /** `app_token`: an app access token (`svc_app_…`), acting as the app's owner at runtime. */
  via: 'anonymous' | 'session' | 'access_token' | 'app_token'
  /**
   * The custom domain the caller's app session was brokered on, else null: a Function it
   * invokes keeps its data authorization for at most 60 seconds (spec 5.5).
   */
  customDomain: string | null
  /**
   * A caller of the data API not yet checked against the database (a bearer token, or a
   * session cookie on a request that is not a page): its data statement checks it before any
   * app code runs (one statement for both; migrations 0027 and 0033). Set only on `/rest/v1`
   * requests, where `user` stays null until then and admission is that check's.
   */
  gate?: DataGate
  /**
   * With a session cookie's gate: the caller resolved without it (`resolveAppSession`,
   * which refreshes the session in its access's final minute, and a private app's
   * admission), for when the gate answers that the session must be refreshed first or that
   * the cookie names no live session (then anonymous, the cookie cleared, as before).
   */
  resolve?: () => Promise<{ user: User | null; via: 'anonymous' | 'session' }>
}

/**
 * `origin`: the app's origin on this request (`<slug>.<base domain>` or the custom domain),
 * for redirects and same-origin checks. `granted`: the caller's grant to this app, when
 * identify read it with their session.
 */
type EdgeEnv = {
  Variables: {
    app: App; origin: string; customDomain: string | null; caller: Caller; granted?: boolean
    /** The app session cookie was cleared on this request (it named no live session). */
    cookieCleared?: boolean
  }
}

export interface EdgeDeps {
  db: Db
  clock: Clock
  /** Apps by slug, cached in process until a change notice. */
  apps: AppDirectory
  /** App access tokens, checked on every request (one prepared read). */
  appTokens: { verify(token: string): Promise<VerifiedAppToken | null> }
  frontend: Frontend
  urls: HostUrls
  cookies: CookieOptions
  jwtKey: Uint8Array
  sessions: AppSessionDeps
  dataApi: DataApi
  /** What the request's Host names (`classifyHost`): an app slug or a custom domain here. */
  hostOf: (request: Request) => HostTarget
  callFunction: (c: Context, target: { app: App; caller: Caller; name: string; origin: string }) => Promise<Response>
  /** The active release's Function route for the request, or null (then the frontend answers). */
  callRoute: (c: Context, target: { app: App; caller: Caller; origin: string }) => Promise<Response | null>
  /** `service.files` (files/routes.ts); without it `/_service/files` is NOT_IMPLEMENTED. */
  files?: (request: Request, target: { appId: string; origin: string; userId: string | null }) => Promise<Response>
  /** `service.data.search` (search/routes.ts); without it `/_service/search` is NOT_IMPLEMENTED. */
  search?: (request: Request, target: SearchRequestTarget) => Promise<Response>
  /** `service.notifications` and its service worker (push/routes.ts); without it `/_service/push` is NOT_IMPLEMENTED. */
  push?: (request: Request, target: { appId: string; origin: string; userId: string | null }) => Promise<Response>
  /**
   * `service.realtime` (realtime/): a WebSocket handshake, admitted here like any request, is
   * handed over; without it `/_service/realtime` is NOT_IMPLEMENTED.
   */
  realtime?: (request: Request, target: RealtimeTarget) => Response
}

function wantsPage(c: Context): boolean {
  return (c.req.method === 'GET' || c.req.method === 'HEAD') && (c.req.header('accept') ?? '').includes('text/html')
}

/** The data API's paths: a bearer or cookie caller there is checked inside the data statement. */
function isDataPath(path: string): boolean {
  return path === '/rest/v1' || path.startsWith('/rest/v1/')
}

function userView(user: User) {
  return { id: user.id, email: user.email, ...(user.displayName ? { displayName: user.displayName } : {}) }
}

export function appEdge(deps: EdgeDeps) {
  const edge = new Hono<EdgeEnv>()
  const verifyAccessToken = createAccessTokenVerifier(deps.jwtKey, deps.clock)
  const origin = (c: Context<EdgeEnv>) => c.get('origin')
  /**
   * Starts a sign-in from this browser: a fresh state in a cookie on the app origin, and the
   * central authorize URL that carries it back to the callback. The callback takes a code only
   * with this browser's state, so a code minted for someone else's session cannot sign this
   * browser in (login CSRF), as OAuth's `state` does.
   */
  const startSignIn = (c: Context<EdgeEnv>, app: App, returnTo: string) => {
    const state = browserSecret().value
    writeCookie(c, deps.cookies, { kind: 'authState', value: state, maxAgeSeconds: LIFETIMES.signInStateMs / 1000 })
    const target = sameOriginUrl(returnTo, origin(c))
    return `${deps.urls.auth}/authorize?app=${encodeURIComponent(app.slug)}&return_to=${encodeURIComponent(target)}&state=${state}`
  }

  /** Same-origin check for state-changing SDK calls (a custom header cannot be sent cross-site without CORS). */
  const sameOrigin = (c: Context<EdgeEnv>) => {
    const sent = c.req.header('origin')
    if ((sent && sent !== origin(c)) || c.req.header('x-service-sdk') !== '1') {
      throw new ServiceError('FORBIDDEN', 'this endpoint answers same-origin SDK calls only')
    }
  }

  edge.use('*', async (c, next) => {
    const host = deps.hostOf(c.req.raw)
    let app: App | null = null
    if (host.kind === 'custom') {
      // An unmapped name answers as any host this platform does not serve.
      app = await deps.apps.byDomain(host.domain)
      if (!app) throw new ServiceError('HOST_NOT_FOUND', 'this platform does not serve that host')
      c.set('origin', deps.urls.custom(host.domain))
      c.set('customDomain', host.domain)
    } else {
      const slug = host.kind === 'app' ? host.slug : ''
      app = await deps.apps.bySlug(slug)
      if (!app) throw new ServiceError('APP_NOT_FOUND', `no app is deployed at ${slug}`)
      c.set('origin', deps.urls.app(app.slug))
      c.set('customDomain', null)
    }
    if (app.status !== 'active') {
      if (app.pausedReason === VERIFICATION_REQUIRED && wantsPage(c)) {
        const resend = `${deps.urls.auth}/verification/resend?app=${encodeURIComponent(app.slug)}`
        return page(c, 'Paused', `<h1>This app is paused</h1>
          <p>Its owner has not confirmed their email address yet. Everything is kept; the app runs again as soon as
          the owner confirms.</p><p><a href="${escapeHtml(resend)}">Send the owner a new confirmation link</a></p>`, { status: 503 })
      }
      throw new ServiceError('APP_NOT_ACTIVE', `this app is ${app.status}`, {
        details: { status: app.status, ...(app.pausedReason ? { reason: app.pausedReason } : {}) },
      })
    }
    c.set('app', app)
    await next()
  })

  edge.get('/_service/auth/callback', async (c) => {
    const app = c.get('app')
    const state = readCookie(c, deps.cookies, 'authState')
    const again = `<p><a href="${escapeHtml(origin(c))}/_service/auth/sign-in">Sign in again</a></p>`
    if (!state || !safeEqual(state, c.req.query('state') ?? '')) {
      // Checked before the code is looked at: a code that this browser did not ask for is
      // never exchanged here, whoever's session it carries.
      return page(c, 'Sign-in not completed', `<h1>Sign-in not completed</h1>
        <p>This sign-in was not started in this browser, or it took longer than an hour. Nothing changed.</p>${again}`, { status: 400 })
    }
    clearCookie(c, deps.cookies, 'authState')
    const result = await exchangeCode(deps.db, deps.clock, deps.sessions.key, {
      code: c.req.query('code') ?? '', appId: app.id, customDomain: c.get('customDomain'),
    })
    if (!result) return page(c, 'Sign-in expired', `<h1>Sign-in link expired</h1>${again}`, { status: 400 })
    writeCookie(c, deps.cookies, {
      kind: 'appSession', value: result.cookie,
      maxAgeSeconds: (result.appSession.expiresAt.getTime() - deps.clock.now().getTime()) / 1000,
    })
    return c.redirect(sameOriginUrl(result.returnTo, origin(c)), 303)
  })

  edge.get('/_service/auth/sign-in', (c) => {
    const app = c.get('app')
    // Where to come back to: `return_to` (the central sign-in sends a stateless authorize
    // here), else the page that linked here; only this app's origin, else its front page.
    const back = c.req.query('return_to') ?? c.req.header('referer') ?? '/'
    return c.redirect(startSignIn(c, app, back), 302)
  })

  edge.post('/_service/auth/sign-out', async (c) => {
    sameOrigin(c)
    const signedOut = await signOutAppSession(deps.db, deps.clock, c.get('app').id, readCookie(c, deps.cookies, 'appSession'))
    clearCookie(c, deps.cookies, 'appSession')
    return c.json({ signedOut })
  })

  /**
   * A data request's cookie resolved as every other request resolves it (see `identify` and
   * the admission below), for when its gate could not answer: the session refreshed first,
   * or a cookie that names no live session (anonymous; a private app asks to sign in).
   */
  const cookieCaller = async (c: Context<EdgeEnv>, cookie: string): Promise<{ user: User | null; via: 'anonymous' | 'session' }> => {
    const app = c.get('app')
    const state = await resolveAppSession(deps.sessions, app.id, cookie)
    if (state.status !== 'active') {
      clearCookie(c, deps.cookies, 'appSession')
      c.set('cookieCleared', true)
      if (app.visibility !== 'public') throw new ServiceError('AUTH_REQUIRED', 'this app is private: sign in first')
      return { user: null, via: 'anonymous' }
    }
    if (app.visibility !== 'public' && !(await accessReason(deps.db, { app, user: state.user, granted: state.granted }))) {
      throw new ServiceError('ACCESS_DENIED', 'your account has no access to this app')
    }
    return { user: state.user, via: 'session' }
  }

  const identify: MiddlewareHandler<EdgeEnv> = async (c, next) => {
    const app = c.get('app')
    const authorization = c.req.header('authorization')
    if (authorization) {
      const match = /^Bearer ([^\s]+)$/i.exec(authorization)
      const dataPath = isDataPath(c.req.path)
      if (match?.[1]?.startsWith(APP_TOKEN_PREFIX)) {
        const gate = dataPath ? appTokenGate(deps.db, deps.clock, { token: match[1], appId: app.id }) : null
        if (gate) {
          c.set('caller', { user: null, appSessionId: null, via: 'app_token', customDomain: null, gate })
          return next()
        }
        // Revoked, other app, or owner no longer confirmed → 401 on the very next request, in
        // every process: the token's state is read on each request (spec 2.3).
        const verified = await deps.appTokens.verify(match[1])
        if (!verified || verified.app.id !== app.id) {
          throw new ServiceError('AUTH_REQUIRED', 'the app access token is not valid for this app')
        }
        c.set('caller', { user: verified.owner, appSessionId: null, via: 'app_token', customDomain: null })
        return next()
      }
      const claims = match ? await verifyAccessToken(match[1]!, app.id) : null
      if (claims && dataPath) {
        // The signature, audience and expiry are checked here; the session (and a private
        // app's admission) by the data statement.
        const gate = appSessionGate(deps.clock, { app, sessionId: claims.sid, userId: claims.sub })
        c.set('caller', { user: null, appSessionId: claims.sid, via: 'access_token', customDomain: null, gate })
        return next()
      }
      const state = claims ? await appSessionById(deps.sessions, app.id, claims.sid) : { status: 'none' as const }
      if (state.status !== 'active' || state.user.id !== claims!.sub) {
        throw new ServiceError('AUTH_REQUIRED', 'the access token is not valid for this app')
      }
      c.set('caller', { user: state.user, appSessionId: state.appSession.id, via: 'access_token', customDomain: state.appSession.customDomain })
      c.set('granted', state.granted)
      return next()
    }
    const cookie = readCookie(c, deps.cookies, 'appSession')
    // A browser's data request (not a page, which may be sent to sign in): its session, and
    // a private app's admission, are checked by the data statement, as for a bearer caller.
    if (cookie !== undefined && isDataPath(c.req.path) && !wantsPage(c)) {
      const gate = appSessionGate(deps.clock, { app, cookie })
      if (gate) {
        c.set('caller', { user: null, appSessionId: null, via: 'session', customDomain: null, gate, resolve: () => cookieCaller(c, cookie) })
        return next()
      }
    }
    const state = await resolveAppSession(deps.sessions, app.id, cookie)
    if (state.status === 'active') {
      c.set('caller', { user: state.user, appSessionId: state.appSession.id, via: 'session', customDomain: state.appSession.customDomain })
      c.set('granted', state.granted)
    } else {
      if (cookie) {
        clearCookie(c, deps.cookies, 'appSession')
        c.set('cookieCleared', true)
      }
      c.set('caller', { user: null, appSessionId: null, via: 'anonymous', customDomain: null })
    }
    return next()
  }
  edge.use('*', identify)

  edge.get('/_service/auth/user', (c) => {
    const user = c.get('caller').user
    return c.json({ user: user ? userView(user) : null }, 200, { 'cache-control': 'no-store' })
  })

  edge.use('*', async (c, next) => {
    const app = c.get('app')
    // A data API caller with a gate: admitted (or refused) by the data statement's check, as above.
    if (app.visibility === 'public' || c.get('caller').gate) return next()
    const user = c.get('caller').user
    if (!user) {
      if (wantsPage(c)) return c.redirect(startSignIn(c, app, c.req.url.replace(/^[a-z]+:\/\/[^/]+/, origin(c))), 302)
      throw new ServiceError('AUTH_REQUIRED', 'this app is private: sign in first')
    }
    if (!(await accessReason(deps.db, { app, user, granted: c.get('granted') }))) {
      if (wantsPage(c)) {
        return page(c, 'No access', `<h1>No access</h1><p>You are signed in as <strong>${escapeHtml(user.email)}</strong>,
          but this app has not been shared with you. Ask its owner for access.</p>`, { status: 403 })
      }
      throw new ServiceError('ACCESS_DENIED', 'your account has no access to this app')
    }
    return next()
  })

  // Behind admission (spec 5.4): a private app's SDK and session tokens reach only callers it admits.
  // The SDK carries the active release's browser-callable Function names (built once per release).
  const sdkScripts = createBrowserSdkScripts({ db: deps.db })
  edge.get('/_service/sdk.js', (c) => sdkScripts.serve(c.get('app').activeReleaseId, c.req.raw))

  edge.post('/_service/api/session', async (c) => {
    const sent = c.req.header('origin')
    if (sent && sent !== origin(c)) throw new ServiceError('FORBIDDEN', 'session tokens are issued to same-origin clients only')
    const { user, appSessionId } = c.get('caller')
    if (!user || !appSessionId) throw new ServiceError('AUTH_REQUIRED', 'sign in to get a session token')
    const state = await appSessionById(deps.sessions, c.get('app').id, appSessionId)
    if (state.status !== 'active') throw new ServiceError('AUTH_REQUIRED', 'the session has ended')
    const expiresAt = state.appSession.accessExpiresAt
    const accessToken = await mintAccessToken(deps.jwtKey, deps.clock, {
      userId: user.id, appId: c.get('app').id, appSessionId, email: user.email, expiresAt,
    })
    return c.json({ accessToken, tokenType: 'bearer', expiresAt: expiresAt.toISOString(), user: userView(user) }, 200,
      { 'cache-control': 'no-store' })
  })

  /**
   * The data API's response; when the edge cleared a stale session cookie meanwhile, rebuilt
   * through Hono with that header (a Response returned as it is would drop it). Only then:
   * a rebuilt response streams its body, which costs the server more than the one it wraps.
   */
  const serveData = async (c: Context<EdgeEnv>) => {
    const res = await deps.dataApi.handle(c.get('app'), c.get('caller'), c.req.raw)
    return c.get('cookieCleared') ? c.newResponse(res.body, res) : res
  }
  edge.all('/rest/v1/*', serveData)
  edge.all('/rest/v1', serveData)
  // Anything else under /rest/ (e.g. a normalised /rest/v1/../x) is not the frontend's.
  edge.all('/rest/*', (c) => c.json({ code: 'PGRST125', message: `Invalid path specified in request URL: ${new URL(c.req.url).pathname}`, details: null, hint: null }, 404))
  edge.all('/_service/functions/:name', (c) =>
    deps.callFunction(c, { app: c.get('app'), caller: c.get('caller'), name: c.req.param('name'), origin: origin(c) }))
  if (deps.files !== undefined) {
    const files = deps.files
    const serveFiles = (c: Context<EdgeEnv>) => files(c.req.raw, { appId: c.get('app').id, origin: origin(c), userId: c.get('caller').user?.id ?? null })
    edge.all('/_service/files', serveFiles)
    edge.all('/_service/files/*', serveFiles)
  }
  if (deps.search !== undefined) {
    const search = deps.search
    edge.all('/_service/search/:name', (c) => {
      const user = c.get('caller').user
      return search(c.req.raw, {
        appId: c.get('app').id, releaseId: c.get('app').activeReleaseId, origin: origin(c), name: c.req.param('name'),
        user: user === null ? null : { id: user.id, email: user.email },
      })
    })
  }
  if (deps.push !== undefined) {
    const push = deps.push
    edge.all('/_service/push/*', (c) => push(c.req.raw, { appId: c.get('app').id, origin: origin(c), userId: c.get('caller').user?.id ?? null }))
  }
  if (deps.realtime !== undefined) {
    const realtime = deps.realtime
    edge.get('/_service/realtime', (c) => realtime(c.req.raw, { app: c.get('app'), caller: c.get('caller'), origin: origin(c) }))
  }
  edge.all('/_service/*', (c) => {
    throw notImplemented(`The runtime endpoint ${new URL(c.req.url).pathname}`)
  })
  edge.all('*', async (c) => {
    const app = c.get('app')
    // Function routes come after admission and the platform's own paths, before the frontend.
    const routed = await deps.callRoute(c, { app, caller: c.get('caller'), origin: origin(c) })
    if (routed !== null) return routed
    if (!app.activeReleaseId) throw new ServiceError('APP_NOT_DEPLOYED', `${app.slug} has no release yet; deploy one first`)
    return deps.frontend.serve(app.activeReleaseId, c.req.raw)
  })
  return edge
}
