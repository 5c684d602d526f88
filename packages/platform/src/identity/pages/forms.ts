/**
 * Form protection for the server-rendered pages on `{auth_url}`: a double-submit CSRF token
 * (an HttpOnly SameSite=Strict cookie echoed in a hidden field, compared in constant time)
 * plus an Origin check. Every state-changing form on the auth host goes through `readForm`.
 */
import type { Context } from 'hono'
import { safeEqual } from '../../lib/crypto.ts'
import { ServiceError } from '../../lib/errors.ts'
import { readCookie, writeCookie, type CookieOptions } from './cookies.ts'
import { browserSecret, isBrowserSecret } from '../browser-secrets.ts'

/**
 * The page's CSRF token: the browser's own, or a new one. Each page that shows a form sets it
 * again for another hour, so a token does not lapse under a person who is still at it (an
 * email sign-in's claim is bound to it until the claim is made).
 */
export function csrfToken(c: Context, cookies: CookieOptions): string {
  const existing = readCookie(c, cookies, 'csrf')
  const token = existing && isBrowserSecret(existing) ? existing : browserSecret().value
  writeCookie(c, cookies, { kind: 'csrf', value: token, maxAgeSeconds: 60 * 60 })
  return token
}

/** Refuses a form that comes from another origin. */
export function checkOrigin(c: Context, expectedOrigin: string): void {
  const origin = c.req.header('origin')
  if (origin && origin !== expectedOrigin) throw new ServiceError('FORBIDDEN', 'cross-origin form submission refused')
}

/** The submitted form's string fields, after the Origin and CSRF checks. */
export async function readForm(c: Context, expected: { origin: string; cookies: CookieOptions }): Promise<Record<string, string>> {
  checkOrigin(c, expected.origin)
  const body = await c.req.parseBody()
  const values: Record<string, string> = {}
  for (const [key, value] of Object.entries(body)) if (typeof value === 'string') values[key] = value
  const cookie = readCookie(c, expected.cookies, 'csrf')
  if (!cookie || !values.csrf || !safeEqual(cookie, values.csrf)) {
    throw new ServiceError('FORBIDDEN', 'the form expired; reload the page and try again')
  }
  return values
}
