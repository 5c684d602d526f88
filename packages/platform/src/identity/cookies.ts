/**
 * The identity cookies, all HttpOnly and host-only (no Domain attribute, so no app ever
 * sees another origin's cookie). Secure when the platform runs on https.
 */
import type { Context } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'

export const COOKIES = {
  /** Central session, on {auth_url}. */
  session: 'svc_session',
  /** Brokered app session, on {app_url}. */
  appSession: 'svc_app_session',
  /** The initiating window's claim on an email sign-in, scoped to the claim paths. */
  claim: 'svc_claim',
  /** Set by the link's review page; confirmation must carry it. */
  preview: 'svc_preview',
  /** Double-submit token of the sign-in forms. */
  csrf: 'svc_csrf',
} as const

export const COOKIE_PATHS = { claim: '/sign-in/claim', preview: '/confirm' } as const

export interface CookieOptions {
  secure: boolean
}

export function readCookie(c: Context, name: string): string | undefined {
  return getCookie(c, name)
}

export function writeCookie(
  c: Context,
  options: CookieOptions,
  cookie: { name: string; value: string; path?: string; maxAgeSeconds: number; sameSite?: 'Strict' | 'Lax' },
): void {
  setCookie(c, cookie.name, cookie.value, {
    httpOnly: true,
    secure: options.secure,
    sameSite: cookie.sameSite ?? 'Lax',
    path: cookie.path ?? '/',
    maxAge: Math.max(1, Math.floor(cookie.maxAgeSeconds)),
  })
}

export function clearCookie(c: Context, options: CookieOptions, name: string, path = '/'): void {
  deleteCookie(c, name, { path, secure: options.secure, httpOnly: true })
}
