/**
 * The platform as the OAuth 2.1 authorization server of its MCP server (issue 18; spec 5.3:
 * the agent never receives a browser session). Public clients register themselves (RFC 7591);
 * a signed-in, confirmed person approves one on the central sign-in (pages.ts), which yields a
 * one-time code bound to the client, the exact registered redirect URI and a PKCE S256
 * challenge; the code becomes a grant with a one-hour access token and a 30-day refresh
 * token, rotated on each use. Scope `mcp` is the person's whole account (the full MCP
 * surface); `mcp:app:<slug>` is one app the person holds Edit on (an exact-app owner agent,
 * on the focused builder surface). Only SHA-256 hashes of codes and tokens are stored; a code
 * or refresh token presented twice revokes its grant and every token under it.
 */
import { createHash } from 'node:crypto'
import { ServiceError } from '../../lib/errors.ts'
import type { Db, Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { newSecret, sha256 } from '../../lib/crypto.ts'
import { isUuid } from '../../lib/ids.ts'
import { findUserById, type User } from '../accounts/users.ts'
import {
  deleteExpiredCodes, deleteExpiredTokens, insertClient, insertCode, insertGrant, insertToken, markCodeUsed, markTokenUsed,
  revokeGrant, revokeOwnGrant, selectApprovals, selectClient, selectCodeForUpdate, selectToken, type ClientRow,
} from './queries.ts'

export const MCP_OAUTH_LIFETIMES = {
  codeMs: 5 * 60 * 1000,
  accessMs: 60 * 60 * 1000,
  refreshMs: 30 * 24 * 60 * 60 * 1000,
} as const

export const MCP_ACCESS_TOKEN_PREFIX = 'svc_mcp_'
export const MCP_REFRESH_TOKEN_PREFIX = 'svc_mcprt_'
/** The scope of the whole account; `mcp:app:<slug>` names one app. */
export const FULL_SCOPE = 'mcp'
const APP_SCOPE = /^mcp:app:([a-z][a-z0-9-]{2,39})$/

/** An OAuth error as RFC 6749 spells it (`invalid_grant`, …), answered as `{error, error_description}`. */
export class OAuthError extends Error {
  override name = 'OAuthError'
  readonly error: string
  readonly status: number
  constructor(error: string, description: string, status = 400) {
    super(description)
    this.error = error
    this.status = status
  }
}

// ---- Registration (RFC 7591) ----

const BLOCKED_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'about:', 'blob:', 'ftp:', 'ws:', 'wss:'])
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * A redirect URI a client may register: https, http on a loopback host (native apps, RFC
 * 8252), or a private-use scheme; never a fragment, never a script or data URI.
 */
export function checkRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2000) throw new OAuthError('invalid_redirect_uri', 'each redirect URI is a URL of at most 2000 characters')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new OAuthError('invalid_redirect_uri', `not a URL: ${value.slice(0, 100)}`)
  }
  if (url.hash !== '' || value.includes('#')) throw new OAuthError('invalid_redirect_uri', 'a redirect URI has no fragment')
  if (BLOCKED_SCHEMES.has(url.protocol)) throw new OAuthError('invalid_redirect_uri', `the scheme ${url.protocol} is not allowed`)
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
    throw new OAuthError('invalid_redirect_uri', 'http redirect URIs must be on a loopback host (localhost, 127.0.0.1, [::1]); use https otherwise')
  }
  return value
}

export interface ClientView {
  client_id: string
  client_id_issued_at: number
  client_name: string
  redirect_uris: string[]
  grant_types: string[]
  response_types: string[]
  token_endpoint_auth_method: 'none'
}

function clientView(row: ClientRow): ClientView {
  return {
    client_id: row.id,
    client_id_issued_at: Math.floor(row.created_at.getTime() / 1000),
    client_name: row.client_name,
    redirect_uris: row.redirect_uris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  }
}

/**
 * Registers a public client from its metadata (`redirect_uris` required; `client_name`
 * shown to the person who approves it). Every client is public: PKCE, no secret.
 *
 * @example
 * const client = await registerClient(db, clock, { client_name: 'Claude Code', redirect_uris: ['http://localhost:3334/callback'] })
 */
export async function registerClient(db: Db, clock: Clock, metadata: Record<string, unknown>): Promise<ClientView> {
  const uris = metadata.redirect_uris
  if (!Array.isArray(uris) || uris.length < 1 || uris.length > 10) throw new OAuthError('invalid_redirect_uri', 'redirect_uris lists 1 to 10 redirect URIs')
  const redirectUris = [...new Set(uris.map(checkRedirectUri))]
  const grantTypes = metadata.grant_types ?? ['authorization_code']
  if (!Array.isArray(grantTypes) || !grantTypes.every((g) => g === 'authorization_code' || g === 'refresh_token')) {
    throw new OAuthError('invalid_client_metadata', 'grant_types may be authorization_code and refresh_token only')
  }
  const responseTypes = metadata.response_types ?? ['code']
  if (!Array.isArray(responseTypes) || !responseTypes.every((r) => r === 'code')) throw new OAuthError('invalid_client_metadata', 'response_types may be code only')
  const rawName = typeof metadata.client_name === 'string' ? metadata.client_name.trim() : ''
  const name = (rawName === '' ? 'Unnamed MCP client' : rawName).slice(0, 200)
  return clientView(await insertClient(db, { name, redirectUris, now: clock.now() }))
}

// ---- Authorization requests ----

/** What a scope string asks for: the account, or one app by slug. */
export function parseScope(raw: string | undefined): { scope: string; appSlug: string | null } {
  const words = (raw ?? '').split(' ').filter((w) => w !== '')
  if (words.length === 0) return { scope: FULL_SCOPE, appSlug: null }
  if (words.length === 1 && words[0] === FULL_SCOPE) return { scope: FULL_SCOPE, appSlug: null }
  const app = words.length === 1 ? APP_SCOPE.exec(words[0]!) : null
  if (app === null) throw new OAuthError('invalid_scope', 'scope is "mcp" (your whole account) or "mcp:app:<slug>" (one app)')
  return { scope: words[0]!, appSlug: app[1]! }
}

export interface AuthorizationRequest {
  client: { id: string; name: string }
  redirectUri: string
  state: string | null
  codeChallenge: string
  scope: string
  appSlug: string | null
}

/** A request that cannot be answered at its redirect URI (unknown client, unregistered URI): shown on the page only. */
export type AuthorizationProblem =
  | { kind: 'page'; message: string }
  | { kind: 'redirect'; location: string }

/** The redirect URI with `params` added to its query (state and iss always). */
export function redirectWith(redirectUri: string, params: Record<string, string | null>): string {
  const url = new URL(redirectUri)
  for (const [key, value] of Object.entries(params)) if (value !== null) url.searchParams.set(key, value)
  return url.toString()
}

/**
 * Checks an authorization request's parameters (from the query, or the approval form). A
 * client or redirect URI that does not match a registration exactly is answered on the page,
 * never redirected to (no open redirects); other problems go back to the client's redirect
 * URI as RFC 6749 errors.
 */
export async function readAuthorizationRequest(
  db: Db, params: Record<string, string | undefined>, expected: { resource: string; issuer: string },
): Promise<AuthorizationRequest | AuthorizationProblem> {
  const clientId = params.client_id ?? ''
  const client = isUuid(clientId) ? await selectClient(db, clientId) : undefined
  if (client === undefined) return { kind: 'page', message: 'This application is not registered here (unknown client_id). Start again from your MCP client.' }
  const redirectUri = params.redirect_uri ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0]! : '')
  if (!client.redirect_uris.includes(redirectUri)) {
    return { kind: 'page', message: 'The redirect URI is not one this application registered, so it is not followed. Start again from your MCP client.' }
  }
  const state = params.state ?? null
  const fail = (error: string, description: string): AuthorizationProblem =>
    ({ kind: 'redirect', location: redirectWith(redirectUri, { error, error_description: description, state, iss: expected.issuer }) })
  if (params.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be code')
  const challenge = params.code_challenge ?? ''
  if (params.code_challenge_method !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
    return fail('invalid_request', 'PKCE is required: code_challenge (S256 of the verifier, base64url) and code_challenge_method=S256')
  }
  if (params.resource !== undefined && params.resource !== '' && params.resource.replace(/\/$/, '') !== expected.resource) {
    return fail('invalid_target', `the only resource here is ${expected.resource}`)
  }
  let scope: { scope: string; appSlug: string | null }
  try {
    scope = parseScope(params.scope)
  } catch (error) {
    return fail('invalid_scope', (error as Error).message)
  }
  return { client: { id: client.id, name: client.client_name }, redirectUri, state, codeChallenge: challenge, ...scope }
}

/**
 * The person approved `request` (for one app: `appId`, which they hold Edit on): a one-time
 * code, valid 5 minutes, and the redirect that carries it back to the client.
 */
export async function approveAuthorization(
  db: Db, clock: Clock, input: { request: AuthorizationRequest; user: User; appId: string | null; issuer: string },
): Promise<string> {
  const code = newSecret('')
  const now = clock.now()
  await deleteExpiredCodes(db, now)
  await insertCode(db, {
    codeHash: sha256(code), clientId: input.request.client.id, userId: input.user.id, appId: input.appId, scope: input.request.scope,
    redirectUri: input.request.redirectUri, codeChallenge: input.request.codeChallenge, now, expiresAt: new Date(now.getTime() + MCP_OAUTH_LIFETIMES.codeMs),
  })
  return redirectWith(input.request.redirectUri, { code, state: input.request.state, iss: input.issuer })
}

// ---- Tokens ----

export interface TokenAnswer {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
  scope: string
}

async function issueTokens(db: Queryable, now: Date, grant: { id: string; scope: string }): Promise<TokenAnswer> {
  const access = newSecret(MCP_ACCESS_TOKEN_PREFIX)
  const refresh = newSecret(MCP_REFRESH_TOKEN_PREFIX)
  await deleteExpiredTokens(db, now)
  await insertToken(db, { tokenHash: sha256(access), grantId: grant.id, kind: 'access', now, expiresAt: new Date(now.getTime() + MCP_OAUTH_LIFETIMES.accessMs) })
  await insertToken(db, { tokenHash: sha256(refresh), grantId: grant.id, kind: 'refresh', now, expiresAt: new Date(now.getTime() + MCP_OAUTH_LIFETIMES.refreshMs) })
  return { access_token: access, token_type: 'Bearer', expires_in: MCP_OAUTH_LIFETIMES.accessMs / 1000, refresh_token: refresh, scope: grant.scope }
}

function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false
  return createHash('sha256').update(verifier).digest('base64url') === challenge
}

/**
 * `grant_type=authorization_code`: the code for a grant and its tokens. The client, the
 * redirect URI and the PKCE verifier must match the approval exactly; a used code fails
 * invalid_grant and revokes the grant it was exchanged for.
 */
export async function exchangeAuthorizationCode(
  db: Db, clock: Clock, params: Record<string, string | undefined>, expected: { resource: string },
): Promise<TokenAnswer> {
  const code = params.code ?? ''
  if (code === '' || code.length > 200) throw new OAuthError('invalid_request', 'send the code')
  if (params.resource !== undefined && params.resource !== '' && params.resource.replace(/\/$/, '') !== expected.resource) {
    throw new OAuthError('invalid_target', `the only resource here is ${expected.resource}`)
  }
  const codeHash = sha256(code)
  const outcome = await db.transaction(async (tx) => {
    const now = clock.now()
    const row = await selectCodeForUpdate(tx, codeHash)
    if (row === undefined) return { error: new OAuthError('invalid_grant', 'the code is unknown or expired') }
    if (row.used_at !== null) {
      if (row.grant_id !== null) await revokeGrant(tx, { grantId: row.grant_id, now })
      return { error: new OAuthError('invalid_grant', 'the code was already used; the tokens issued for it are revoked') }
    }
    if (row.expires_at.getTime() <= now.getTime()) return { error: new OAuthError('invalid_grant', 'the code has expired') }
    if (row.client_id !== params.client_id) return { error: new OAuthError('invalid_grant', 'the code was issued to another client') }
    if (row.redirect_uri !== params.redirect_uri) return { error: new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request') }
    if (!pkceMatches(params.code_verifier ?? '', row.code_challenge)) {
      await markCodeUsed(tx, { codeHash, grantId: null, now })
      return { error: new OAuthError('invalid_grant', 'the PKCE code_verifier does not match the code_challenge') }
    }
    const grantId = await insertGrant(tx, { clientId: row.client_id, userId: row.user_id, appId: row.app_id, scope: row.scope, now })
    await markCodeUsed(tx, { codeHash, grantId, now })
    return { tokens: await issueTokens(tx, now, { id: grantId, scope: row.scope }) }
  })
  if ('error' in outcome) throw outcome.error
  return outcome.tokens
}

/**
 * `grant_type=refresh_token`: a new access token and a new refresh token; the old refresh
 * token is spent. Presenting a spent one again revokes the grant (it was stolen, or copied).
 */
export async function refreshAccessToken(db: Db, clock: Clock, params: Record<string, string | undefined>): Promise<TokenAnswer> {
  const token = params.refresh_token ?? ''
  if (!token.startsWith(MCP_REFRESH_TOKEN_PREFIX) || token.length > 200) throw new OAuthError('invalid_grant', 'the refresh token is unknown')
  const tokenHash = sha256(token)
  const outcome = await db.transaction(async (tx) => {
    const now = clock.now()
    const row = await selectToken(tx, tokenHash, { lock: true })
    if (row === undefined || row.kind !== 'refresh' || row.revoked_at !== null) return { error: new OAuthError('invalid_grant', 'the refresh token is unknown or revoked') }
    if (row.client_id !== params.client_id) return { error: new OAuthError('invalid_grant', 'the refresh token was issued to another client') }
    if (row.used_at !== null) {
      await revokeGrant(tx, { grantId: row.grant_id, now })
      return { error: new OAuthError('invalid_grant', 'the refresh token was already used; every token of this approval is revoked') }
    }
    if (row.expires_at.getTime() <= now.getTime()) return { error: new OAuthError('invalid_grant', 'the refresh token has expired') }
    await markTokenUsed(tx, { tokenHash, now })
    return { tokens: await issueTokens(tx, now, { id: row.grant_id, scope: row.scope }) }
  })
  if ('error' in outcome) throw outcome.error
  return outcome.tokens
}

/** Revokes the approval a token (access or refresh) belongs to (RFC 7009: unknown tokens are not an error). */
export async function revokeMcpToken(db: Db, clock: Clock, token: string): Promise<void> {
  if (token.length === 0 || token.length > 200) return
  const row = await selectToken(db, sha256(token))
  if (row !== undefined) await revokeGrant(db, { grantId: row.grant_id, now: clock.now() })
}

/**
 * The person and app scope of a valid MCP access token, read fresh; null when the token is
 * not one, or unknown, expired or revoked.
 *
 * @example
 * const verified = await verifyMcpAccessToken(db, clock, token) // { user, appId: null } for the whole account
 */
export async function verifyMcpAccessToken(db: Db, clock: Clock, token: string): Promise<{ user: User; appId: string | null } | null> {
  if (!token.startsWith(MCP_ACCESS_TOKEN_PREFIX) || token.length > 200) return null
  const row = await selectToken(db, sha256(token))
  if (row === undefined || row.kind !== 'access' || row.revoked_at !== null || row.expires_at.getTime() <= clock.now().getTime()) return null
  const user = await findUserById(db, row.user_id)
  return user === null ? null : { user, appId: row.app_id }
}

// ---- A person's approvals ----

/** An approval a person gave a client, as their page lists it (never a token). */
export interface McpApproval {
  readonly id: string
  readonly clientName: string
  /** Null: the whole account; otherwise the one app. */
  readonly appSlug: string | null
  readonly scope: string
  readonly approvedAt: string
  /** When the client last got tokens (its approval or its latest refresh). */
  readonly lastIssuedAt: string
}

/** The person's approvals that still work: not revoked, with a token not yet expired. */
export async function listMcpApprovals(db: Db, clock: Clock, user: User): Promise<McpApproval[]> {
  const rows = await selectApprovals(db, { userId: user.id, now: clock.now() })
  return rows.map((row) => ({
    id: row.id, clientName: row.client_name, appSlug: row.app_slug, scope: row.scope,
    approvedAt: new Date(row.created_at).toISOString(), lastIssuedAt: new Date(row.last_issued_at).toISOString(),
  }))
}

/**
 * Revokes one of the person's approvals: its access and refresh tokens stop working at once.
 * Another person's approval, or an unknown one, is NOT_FOUND (the same answer).
 */
export async function revokeMcpApproval(db: Db, clock: Clock, input: { user: User; approvalId: string }): Promise<void> {
  const revoked = isUuid(input.approvalId) && await revokeOwnGrant(db, { grantId: input.approvalId, userId: input.user.id, now: clock.now() })
  if (!revoked) throw new ServiceError('NOT_FOUND', 'there is no such approval, or it was already revoked')
}
