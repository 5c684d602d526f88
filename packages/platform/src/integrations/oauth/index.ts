/**
 * OAuth 2.0 connections (spec 2.6 `authorization`, 4.4, 5.6): the authorization-code flow
 * with PKCE that connects (or reconnects) an integration declaring `authorization`, tokens
 * stored write-only, and `accessTokenFor`, the current access token refreshed once at a time
 * per connection across processes, for the broker and, next, sync and webhooks.
 *
 * @example
 * const oauth = createOAuth({ db, clock, logger, urls, cookies, keyring, invokeProvider })
 * base.route('/', oauth.callbackRoutes); auth.route('/', oauth.pages)
 * const token = await oauth.accessTokenFor({ connectionId })
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import type { HostUrls } from '../../http/hosts.ts'
import type { CookieOptions } from '../../identity/index.ts'
import { connectionPageUrl, type ConnectionKeyring, type PublishedIntegration, type Actor, type ConnectionKind } from '../connections/index.ts'
import type { InvokeProvider } from '../provider-invocation.ts'
import type { Context } from 'hono'
import { createAccessTokens, type AccessTokens } from './access-tokens.ts'
import { oauthCallbackRoutes, oauthFormAction, oauthPages, startFromPage, type OAuthPageDeps } from './pages.ts'
import type { FlowBinding } from './flow.ts'
import { oauthAdminRoutes } from './routes.ts'

export { CALLBACK_PATH, callbackUrl, type FlowBinding } from './flow.ts'
export { DEFAULT_ACCESS_TOKEN_NAME, activeAuthorization, refuseOAuthFunction } from './authorization.ts'
export type { OAuthAuthorization } from './authorization.ts'
export { REFRESH_MARGIN_MS } from './access-tokens.ts'
export { resealOAuthTokens } from './tokens.ts'

export interface OAuthFeatureDeps {
  db: Db
  clock: Clock
  logger: Logger
  urls: HostUrls
  cookies: CookieOptions
  keyring: ConnectionKeyring
  invokeProvider: InvokeProvider
  /** Binds a connection made from the connect-and-bind page into its slot (bindings/ `bindAfterConnect`). */
  bindAfterConnect?: NonNullable<OAuthPageDeps['bindAfterConnect']>
}

/** What the connection pages call to start a flow (and to allow its redirect in their CSP). */
export interface OAuthPageHooks {
  formAction(integration: PublishedIntegration): Promise<string>
  start(c: Context, input: { actor: Actor; integration: PublishedIntegration; values: Readonly<Record<string, string>> } & (
    { kind: ConnectionKind; label: string; bind?: FlowBinding } | { reconnect: string })): Promise<Response>
}

export interface OAuth extends AccessTokens {
  /** `{base_url}`: the redirect URI. */
  readonly callbackRoutes: ReturnType<typeof oauthCallbackRoutes>
  /** `{auth_url}`: the end of the flow. */
  readonly pages: ReturnType<typeof oauthPages>
  /** Owner API under /v1/apps: what provider administrators register. */
  readonly adminRoutes: ReturnType<typeof oauthAdminRoutes>
  readonly pageHooks: OAuthPageHooks
}

export function createOAuth(deps: OAuthFeatureDeps): OAuth {
  const pageDeps = { ...deps, baseUrl: deps.urls.base }
  const tokens = createAccessTokens({
    ...deps,
    connectUrl: (connection) => connectionPageUrl(deps.urls, connection.id),
  })
  return {
    accessTokenFor: tokens.accessTokenFor,
    callbackRoutes: oauthCallbackRoutes({ urls: deps.urls }),
    pages: oauthPages(pageDeps),
    adminRoutes: oauthAdminRoutes({ db: deps.db, baseUrl: deps.urls.base }),
    pageHooks: {
      formAction: (integration) => oauthFormAction(pageDeps, integration),
      start: (c, input) => startFromPage(c, pageDeps, input),
    },
  }
}
