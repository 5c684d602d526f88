/**
 * The browser side of connecting with OAuth 2.0.
 *
 * The flow starts from the connect form on `{auth_url}` (connections/pages.ts calls
 * `startFromPage`): the browser gets an HttpOnly flow cookie there and is redirected to the
 * provider. The provider sends it back to the registered redirect URI on `{base_url}`
 * (`CALLBACK_PATH`), which forwards the callback's parameters to `{auth_url}` at
 * `/connections/oauth/finish`; that page checks the flow against the flow cookie and the
 * person's central session, both on `{auth_url}`, and finishes it. Checking there rather than
 * on `{base_url}` binds the flow to the browser that filled the form and to the person signed
 * in: a start link opened in someone else's browser cannot put their account at the provider
 * into another person's connection (decisions.md, "OAuth connections").
 */
import { Hono, type Context } from 'hono'
import { getCookie, setCookie } from 'hono/cookie'
import type { Logger } from '../../lib/logger.ts'
import { ServiceError } from '../../lib/errors.ts'
import { escapeHtml, page } from '../../lib/html.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { requestIdOf } from '../../http/request-id.ts'
import { browserSession, type CookieOptions, type User } from '../../identity/index.ts'
import type { Actor, ConnectionKind, PublishedIntegration } from '../connections/index.ts'
import { CALLBACK_PATH, FLOW_LIFETIME_MS, finishFlow, requireAuthorization, startFlow, type FlowBinding, type OAuthDeps } from './flow.ts'

export const FINISH_PATH = '/connections/oauth/finish'
const FLOW_COOKIE = 'svc_oauth_flow'
const BROWSER_SECRET = /^[A-Za-z0-9_-]{43}$/

export interface OAuthPageDeps extends OAuthDeps {
  logger: Logger
  urls: HostUrls
  cookies: CookieOptions
  /**
   * Binds a connection a flow just made into the consumer slot the flow started from (the
   * bindings feature's `bindAfterConnect`, given by the composition root); the app's slug back.
   */
  bindAfterConnect?: ((input: { actor: User; connectionId: string; bind: FlowBinding }) => Promise<{ appSlug: string }>) | undefined
}

function cookieName(cookies: CookieOptions): string {
  return cookies.secure ? `__Host-${FLOW_COOKIE}` : FLOW_COOKIE
}

/** This browser's flow secret: the one its cookie holds, or a new one set for the flow's lifetime. */
function browserFlowSecret(c: Context, cookies: CookieOptions): string {
  const existing = getCookie(c, cookieName(cookies))
  const secret = existing && BROWSER_SECRET.test(existing) ? existing : Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
  // Lax: the cookie must come back on the top-level navigation from the provider.
  setCookie(c, cookieName(cookies), secret, {
    httpOnly: true, secure: cookies.secure, sameSite: 'Lax', path: '/', maxAge: Math.floor(FLOW_LIFETIME_MS / 1000),
  })
  return secret
}

/** The `form-action` a page needs when its form leads to the provider's sign-in (browsers apply it to the redirect). */
export async function oauthFormAction(deps: OAuthDeps, integration: PublishedIntegration): Promise<string> {
  const authorization = await requireAuthorization(deps.db, integration)
  return `'self' ${new URL(authorization.authorizationUrl).origin}`
}

/**
 * Starts a flow from a submitted form on `{auth_url}` and redirects the browser to the
 * provider (303).
 */
export async function startFromPage(
  c: Context,
  deps: OAuthPageDeps,
  input: { actor: Actor; integration: PublishedIntegration; values: Readonly<Record<string, string>> } & (
    { kind: ConnectionKind; label: string; bind?: FlowBinding } | { reconnect: string }),
): Promise<Response> {
  const browserSecret = browserFlowSecret(c, deps.cookies)
  const url = await startFlow(deps, { ...input, browserSecret })
  deps.logger.info('oauth flow started', {
    providerAppId: input.integration.appId, integration: input.integration.name, reconnect: 'reconnect' in input,
  })
  return c.redirect(url, 303)
}

/** `{base_url}`: the registered redirect URI; forwards the callback to `{auth_url}` where the flow's cookie and session are. */
export function oauthCallbackRoutes(deps: { urls: HostUrls }) {
  const routes = new Hono()
  routes.get(CALLBACK_PATH, (c) => {
    const forwarded = new URLSearchParams()
    for (const name of ['state', 'code', 'error'] as const) {
      const value = c.req.query(name)
      if (value !== undefined) forwarded.set(name, value)
    }
    return c.redirect(`${deps.urls.auth}${FINISH_PATH}?${forwarded}`, 303)
  })
  return routes
}

function failurePage(c: Context, error: ServiceError): Response {
  const title = error.code === 'FORBIDDEN' ? 'Not connected' : error.code === 'OAUTH_STATE_INVALID' ? 'Connecting expired' : 'Connecting failed'
  return page(c, title, `<h1>${escapeHtml(title)}</h1><p class="error" id="error" data-code="${escapeHtml(error.code)}">${escapeHtml(error.message)}</p>
    <p class="muted">Nothing was stored. Open the integration's connect page to try again.</p>`, { status: error.status })
}

/** `{auth_url}`: the end of the flow. */
export function oauthPages(deps: OAuthPageDeps) {
  const routes = new Hono()
  routes.get(FINISH_PATH, async (c) => {
    try {
      const active = await browserSession(c, deps)
      if (!active) throw new ServiceError('OAUTH_STATE_INVALID', 'you are no longer signed in here; sign in and start connecting again')
      const requestId = requestIdOf(c.req.raw)
      const { connection, bind } = await finishFlow(deps, {
        actor: active.user, state: c.req.query('state') ?? '', browserSecret: getCookie(c, cookieName(deps.cookies)),
        code: c.req.query('code'), error: c.req.query('error'), ...(requestId ? { requestId } : {}),
      })
      deps.logger.info('oauth connection connected', { connectionId: connection.id, providerAppId: connection.providerAppId })
      const done = `<p id="done">The connection <strong>${escapeHtml(connection.label)}</strong> to <strong>${escapeHtml(connection.integration)}</strong> is active.</p>`
      const link = `<p><a href="/connections/${escapeHtml(connection.id)}">Open the connection</a></p>`
      if (bind === null || !deps.bindAfterConnect) return page(c, 'Connected', `<h1>Connected</h1>${done}${link}`)
      try {
        const { appSlug } = await deps.bindAfterConnect({ actor: active.user, connectionId: connection.id, bind })
        return page(c, 'Connected', `<h1>Connected</h1>${done}
          <p id="bound">The app <strong>${escapeHtml(appSlug)}</strong> now uses it with your account. Go back to the app and try again.</p>${link}`)
      } catch (error) {
        // The connection stands; only the binding was refused (the slot or the person's rights changed meanwhile).
        if (!(error instanceof ServiceError)) throw error
        deps.logger.info('oauth connection not bound', { connectionId: connection.id, code: error.code })
        return page(c, 'Connected', `<h1>Connected</h1>${done}
          <p class="error" id="not-bound" data-code="${escapeHtml(error.code)}">It could not be used in the app: ${escapeHtml(error.message)}</p>${link}`)
      }
    } catch (error) {
      if (!(error instanceof ServiceError)) {
        deps.logger.error('oauth callback failed', { error: error instanceof Error ? error.message : String(error) })
        return failurePage(c, new ServiceError('INTEGRATION_PROVIDER_FAILED', 'something went wrong while connecting; try again'))
      }
      deps.logger.info('oauth callback refused', { code: error.code })
      return failurePage(c, error)
    }
  })
  return routes
}
