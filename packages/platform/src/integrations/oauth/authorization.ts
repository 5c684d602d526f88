/**
 * The `authorization` block of a provider app's active contract (spec 2.6), as the OAuth flow
 * and the refresh read it, and the PKCE and state values the platform makes (RFC 7636, S256).
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Queryable } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { selectActiveContract, selectReleaseAuthorization } from './queries.ts'

export const DEFAULT_ACCESS_TOKEN_NAME = 'OAUTH_ACCESS_TOKEN'

export interface OAuthAuthorization {
  readonly authorizationUrl: string
  readonly clientId: string
  readonly scopes: readonly string[]
  readonly exchange: string
  readonly refresh: string | null
  readonly pkce: boolean
  /** The secret name operation, sync and webhook Functions read the access token under. */
  readonly accessToken: string
}

/** Reads a stored (already validated) `authorization` block, or null when there is none. */
export function readAuthorization(integration: unknown): OAuthAuthorization | null {
  if (integration === null || typeof integration !== 'object') return null
  const raw = (integration as Record<string, unknown>).authorization
  if (raw === null || typeof raw !== 'object') return null
  const block = raw as Record<string, unknown>
  if (typeof block.authorizationUrl !== 'string' || typeof block.clientId !== 'string' || typeof block.exchange !== 'string') return null
  return {
    authorizationUrl: block.authorizationUrl,
    clientId: block.clientId,
    scopes: Array.isArray(block.scopes) ? block.scopes.filter((scope): scope is string => typeof scope === 'string') : [],
    exchange: block.exchange,
    refresh: typeof block.refresh === 'string' ? block.refresh : null,
    pkce: block.pkce !== false,
    accessToken: typeof block.accessToken === 'string' ? block.accessToken : DEFAULT_ACCESS_TOKEN_NAME,
  }
}

/** The authorization of the provider app's active release for `integration`, or null. */
export async function activeAuthorization(db: Queryable, input: { providerAppId: string; integration: string }): Promise<OAuthAuthorization | null> {
  const row = await selectActiveContract(db, input.providerAppId)
  if (!row || row.app_status === 'archived' || row.integration === null || typeof row.integration !== 'object') return null
  if ((row.integration as Record<string, unknown>).name !== input.integration) return null
  return readAuthorization(row.integration)
}

/** 32 random bytes, base64url: a `state`, a PKCE verifier (43 characters, RFC 7636 4.1) or a browser secret. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url')
}

/** The S256 challenge of a PKCE verifier. */
export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url')
}

/**
 * Where the browser goes to sign in at the provider: the declared URL (its own query kept)
 * with the authorization request's parameters (RFC 6749 4.1.1, RFC 7636 4.3).
 *
 * @example
 * authorizationRequestUrl(auth, { redirectUri, state, challenge }) // https://crm.example.com/authorize?...&state=...
 */
export function authorizationRequestUrl(
  authorization: OAuthAuthorization,
  input: { redirectUri: string; state: string; challenge: string | null },
): string {
  const url = new URL(authorization.authorizationUrl)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', authorization.clientId)
  url.searchParams.set('redirect_uri', input.redirectUri)
  if (authorization.scopes.length > 0) url.searchParams.set('scope', authorization.scopes.join(' '))
  url.searchParams.set('state', input.state)
  if (input.challenge !== null) {
    url.searchParams.set('code_challenge', input.challenge)
    url.searchParams.set('code_challenge_method', 'S256')
  }
  return url.toString()
}

/**
 * Refuses a development invocation of a release's OAuth `exchange` or `refresh` Function
 * (spec 7.2): they trade codes and refresh tokens, which only a real flow has.
 *
 * @example
 * await refuseOAuthFunction(db, { releaseId: fn.releaseId, functionName: 'swapCode' }) // throws INTEGRATION_OAUTH_FUNCTION_NOT_INVOCABLE
 */
export async function refuseOAuthFunction(db: Queryable, input: { releaseId: string; functionName: string }): Promise<void> {
  const authorization = readAuthorization({ authorization: await selectReleaseAuthorization(db, input.releaseId) })
  if (authorization && (authorization.exchange === input.functionName || authorization.refresh === input.functionName)) {
    throw new ServiceError('INTEGRATION_OAUTH_FUNCTION_NOT_INVOCABLE',
      `${input.functionName} is the integration's OAuth ${authorization.exchange === input.functionName ? 'exchange' : 'refresh'} Function; it runs only when a person connects or a token is refreshed`,
      { details: { function: input.functionName } })
  }
}
