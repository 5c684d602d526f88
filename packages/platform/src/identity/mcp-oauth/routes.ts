/**
 * MCP OAuth on `{base_url}`: authorization server metadata (RFC 8414) at
 * `/.well-known/oauth-authorization-server`, client registration (RFC 7591) at
 * `POST /oauth/register`, the token endpoint (`authorization_code` with PKCE S256,
 * `refresh_token` with rotation) at `POST /oauth/token`, and revocation (RFC 7009) at
 * `POST /oauth/revoke`. All of them answer any origin (CORS, no cookies) so browser-based MCP
 * clients work too. The approval itself is on `{auth_url}` (pages.ts). Each endpoint is
 * unauthenticated and bounded per client address (RATE_RULES): a flood of guesses or of
 * registrations is answered 429 with Retry-After before it reaches the database's tables of
 * codes and tokens.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { createRateLimiter } from '../../db/rate-limit.ts'
import { clientAddress } from '../../http/client-address.ts'
import { exchangeAuthorizationCode, FULL_SCOPE, OAuthError, refreshAccessToken, registerClient, revokeMcpToken } from './mcp-oauth.ts'

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'content-type, authorization, mcp-protocol-version',
}

/** The authorization server metadata (RFC 8414) of `{base_url}`. */
export function authorizationServerMetadata(urls: HostUrls) {
  return {
    issuer: urls.base,
    authorization_endpoint: `${urls.auth}/mcp/authorize`,
    token_endpoint: `${urls.base}/oauth/token`,
    registration_endpoint: `${urls.base}/oauth/register`,
    revocation_endpoint: `${urls.base}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [FULL_SCOPE],
    authorization_response_iss_parameter_supported: true,
  }
}

async function formOf(c: Context): Promise<Record<string, string | undefined>> {
  const type = c.req.header('content-type') ?? ''
  if (type.startsWith('application/json')) {
    const body = await c.req.json().catch(() => null) as Record<string, unknown> | null
    return Object.fromEntries(Object.entries(body ?? {}).filter(([, v]) => typeof v === 'string')) as Record<string, string>
  }
  const body = await c.req.parseBody()
  return Object.fromEntries(Object.entries(body).filter(([, v]) => typeof v === 'string')) as Record<string, string>
}

/** Per client address; generous for agents behind one address (a client refreshes once an hour). */
export const RATE_RULES = {
  register: { name: 'mcp-oauth-register', limit: 30, windowSeconds: 15 * 60 },
  token: { name: 'mcp-oauth-token', limit: 60, windowSeconds: 60 },
  revoke: { name: 'mcp-oauth-revoke', limit: 60, windowSeconds: 60 },
} as const

function tooMany(c: Context, retryAfterSeconds: number, what: string): Response {
  return c.json({ error: 'invalid_request', error_description: `too many ${what} from this address; try again in ${retryAfterSeconds} s` }, 429,
    { ...CORS, 'retry-after': String(retryAfterSeconds), 'cache-control': 'no-store' })
}

function oauthError(c: Context, error: unknown): Response {
  if (error instanceof OAuthError) {
    return c.json({ error: error.error, error_description: error.message }, error.status as 400, { ...CORS, 'cache-control': 'no-store' })
  }
  throw error
}

export function mcpOAuthRoutes(deps: { db: Db; clock: Clock; urls: HostUrls; trustProxy: boolean }) {
  const { db, clock } = deps
  const routes = new Hono()
  const resource = { resource: `${deps.urls.base}/mcp` }
  const limiter = createRateLimiter({ db, clock })

  routes.options('/.well-known/oauth-authorization-server', (c) => c.body(null, 204, CORS))
  routes.get('/.well-known/oauth-authorization-server', (c) => c.json(authorizationServerMetadata(deps.urls), 200, CORS))
  for (const path of ['/oauth/register', '/oauth/token', '/oauth/revoke']) routes.options(path, (c) => c.body(null, 204, CORS))

  routes.post('/oauth/register', async (c) => {
    // Unauthenticated: bounded per client address, as the other agent endpoints are.
    const limit = await limiter.hit(RATE_RULES.register, clientAddress(c, deps.trustProxy))
    if (!limit.allowed) return tooMany(c, limit.retryAfterSeconds, 'registrations')
    const metadata = await c.req.json().catch(() => null) as unknown
    if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
      return c.json({ error: 'invalid_client_metadata', error_description: 'send the client metadata as a JSON object' }, 400, CORS)
    }
    try {
      return c.json(await registerClient(db, clock, metadata as Record<string, unknown>), 201, { ...CORS, 'cache-control': 'no-store' })
    } catch (error) {
      return oauthError(c, error)
    }
  })

  routes.post('/oauth/token', async (c) => {
    const limit = await limiter.hit(RATE_RULES.token, clientAddress(c, deps.trustProxy))
    if (!limit.allowed) return tooMany(c, limit.retryAfterSeconds, 'token requests')
    const params = await formOf(c)
    try {
      if (params.grant_type === 'authorization_code') return c.json(await exchangeAuthorizationCode(db, clock, params, resource), 200, { ...CORS, 'cache-control': 'no-store' })
      if (params.grant_type === 'refresh_token') return c.json(await refreshAccessToken(db, clock, params), 200, { ...CORS, 'cache-control': 'no-store' })
      throw new OAuthError('unsupported_grant_type', 'grant_type is authorization_code or refresh_token')
    } catch (error) {
      return oauthError(c, error)
    }
  })

  routes.post('/oauth/revoke', async (c) => {
    const limit = await limiter.hit(RATE_RULES.revoke, clientAddress(c, deps.trustProxy))
    if (!limit.allowed) return tooMany(c, limit.retryAfterSeconds, 'revocations')
    await revokeMcpToken(db, clock, (await formOf(c)).token ?? '')
    return c.body(null, 200, CORS)
  })
  return routes
}
