// The demo authorization server's tokens: codes, access tokens and refresh tokens are
// signed with the app's client secret (HMAC-SHA256, WebCrypto), so the exchange, refresh and
// operation Functions check them without storing anything or calling anyone. A real
// provider calls its external system's token endpoint instead.
import { errors } from '@service/server'

export const CLIENT_SECRET = 'ORDERS_CLIENT_SECRET'
/** A code is good for ten minutes; an access token for an hour. */
const CODE_SECONDS = 600
export const ACCESS_TOKEN_SECONDS = 3600

const encoder = new TextEncoder()

function base64url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

function randomPart(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(16)))
}

async function sign(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  return base64url(new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(text))))
}

/** Compares two signatures without stopping at the first difference. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/** `body.signature`, or null when the signature does not match. */
async function verified(secret: string, token: string): Promise<string | null> {
  const dot = token.lastIndexOf('.')
  if (dot <= 0) return null
  const body = token.slice(0, dot)
  return sameText(token.slice(dot + 1), await sign(secret, body)) ? body : null
}

async function signed(secret: string, body: string): Promise<string> {
  return `${body}.${await sign(secret, body)}`
}

/** A code bound to the redirect URI and the PKCE challenge it was approved for. */
export function issueCode(secret: string, grant: { redirectUri: string; challenge: string }): Promise<string> {
  const expires = Math.floor(Date.now() / 1000) + CODE_SECONDS
  const payload = base64url(encoder.encode(JSON.stringify({ r: grant.redirectUri, c: grant.challenge, e: expires })))
  return signed(secret, `code.${payload}`)
}

/** Checks a code against the exchange's redirect URI and PKCE verifier; throws INVALID_GRANT. */
export async function checkCode(secret: string, input: { code: string; redirectUri: string; codeVerifier: string }): Promise<void> {
  const body = await verified(secret, input.code)
  if (body === null || !body.startsWith('code.')) throw errors.badRequest('INVALID_GRANT', 'The authorization code is not valid')
  const binary = atob(body.slice(5).replaceAll('-', '+').replaceAll('_', '/'))
  const grant = JSON.parse(binary) as { r: string; c: string; e: number }
  if (grant.e < Date.now() / 1000) throw errors.badRequest('INVALID_GRANT', 'The authorization code has expired; connect again')
  if (grant.r !== input.redirectUri) throw errors.badRequest('INVALID_GRANT', 'The redirect URI differs from the one approved')
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(input.codeVerifier)))
  if (!sameText(base64url(digest), grant.c)) throw errors.badRequest('INVALID_GRANT', 'The PKCE code verifier does not match')
}

/** A new access token and refresh token, in the shape the platform expects. */
export async function issueTokens(secret: string): Promise<{ accessToken: string; refreshToken: string; expiresIn: number }> {
  return {
    accessToken: await signed(secret, `at.${randomPart()}`),
    refreshToken: await signed(secret, `rt.${randomPart()}`),
    expiresIn: ACCESS_TOKEN_SECONDS,
  }
}

/** True for a refresh token this app signed. */
export async function isRefreshToken(secret: string, token: string): Promise<boolean> {
  return (await verified(secret, token))?.startsWith('rt.') ?? false
}

/** True for an access token this app signed. */
export async function isAccessToken(secret: string, token: string): Promise<boolean> {
  return (await verified(secret, token))?.startsWith('at.') ?? false
}
