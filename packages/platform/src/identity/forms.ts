/**
 * Form protection for the server-rendered pages on `{auth_url}`: a double-submit CSRF token
 * (an HttpOnly SameSite=Strict cookie echoed in a hidden field, compared in constant time)
 * plus an Origin check. Every state-changing form on the auth host goes through `readForm`.
 */
import type { Context } from 'hono'
import { safeEqual } from '../lib/crypto.ts'
import { ServiceError } from '../lib/errors.ts'
import { COOKIES, readCookie, writeCookie, type CookieOptions } from './cookies.ts'
import { browserSecret } from './secrets.ts'

/** The page's CSRF token (set as a cookie when the browser has none yet). */
export function csrfToken(c: Context, cookies: CookieOptions): string {
  const existing = readCookie(c, COOKIES.csrf)
  if (existing && existing.length <= 100) return existing
  const token = browserSecret().value
  writeCookie(c, cookies, { name: COOKIES.csrf, value: token, maxAgeSeconds: 60 * 60, sameSite: 'Strict' })
  return token
}

/** Refuses a form that comes from another origin. */
export function checkOrigin(c: Context, expectedOrigin: string): void {
  const origin = c.req.header('origin')
  if (origin && origin !== expectedOrigin) throw new ServiceError('FORBIDDEN', 'cross-origin form submission refused')
}

/** The submitted form's string fields, after the Origin and CSRF checks. */
export async function readForm(c: Context, expectedOrigin: string): Promise<Record<string, string>> {
  checkOrigin(c, expectedOrigin)
  const body = await c.req.parseBody()
  const values: Record<string, string> = {}
  for (const [key, value] of Object.entries(body)) if (typeof value === 'string') values[key] = value
  const cookie = readCookie(c, COOKIES.csrf)
  if (!cookie || !values.csrf || !safeEqual(cookie, values.csrf)) {
    throw new ServiceError('FORBIDDEN', 'the form expired; reload the page and try again')
  }
  return values
}
