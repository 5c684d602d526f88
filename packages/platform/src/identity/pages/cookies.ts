/**
 * The identity cookies, all HttpOnly and host-only (no Domain attribute, so no app ever
 * sees another origin's cookie). Each cookie's name, path and SameSite live in one table.
 *
 * Over https every cookie is Secure and carries a name prefix the browser enforces:
 * `__Host-` for the cookies on path `/` (the browser refuses one set with a Domain
 * attribute, so an app page on a sibling subdomain cannot plant a session, CSRF or
 * sign-in-state cookie for the sign-in host or another app), `__Secure-` for the two
 * path-scoped ones (spec 5.1 scopes the claim to its paths; what a planted one could do is
 * closed in sign-in/requests.ts). Over plain http (local development) the names are bare.
 */
import type { Context } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'

interface CookieSpec {
  readonly name: string
  readonly path: string
  readonly sameSite: 'Strict' | 'Lax'
}

export const COOKIES = {
  /** Central session, on {auth_url}. */
  session: { name: 'svc_session', path: '/', sameSite: 'Lax' },
  /** Brokered app session, on {app_url}. */
  appSession: { name: 'svc_app_session', path: '/', sameSite: 'Lax' },
  /**
   * The browser's side of a sign-in started on {app_url}: the callback accepts an
   * authorization code only with the state this cookie holds (OAuth's `state`).
   */
  authState: { name: 'svc_auth_state', path: '/', sameSite: 'Lax' },
  /** The initiating window's claim on an email sign-in, scoped to the claim paths. */
  claim: { name: 'svc_claim', path: '/sign-in/claim', sameSite: 'Strict' },
  /** Set by the link's review page; confirmation must carry it. */
  preview: { name: 'svc_preview', path: '/confirm', sameSite: 'Strict' },
  /** Double-submit token of the sign-in forms. */
  csrf: { name: 'svc_csrf', path: '/', sameSite: 'Strict' },
} as const satisfies Record<string, CookieSpec>

export type CookieKind = keyof typeof COOKIES

export interface CookieOptions {
  secure: boolean
}

/** The name a cookie is sent under: prefixed over https, bare over http. */
export function cookieName(options: CookieOptions, kind: CookieKind): string {
  const spec = COOKIES[kind]
  if (!options.secure) return spec.name
  return `${spec.path === '/' ? '__Host-' : '__Secure-'}${spec.name}`
}

export function readCookie(c: Context, options: CookieOptions, kind: CookieKind): string | undefined {
  return getCookie(c, cookieName(options, kind))
}

export function writeCookie(
  c: Context,
  options: CookieOptions,
  cookie: { kind: CookieKind; value: string; maxAgeSeconds: number },
): void {
  const spec = COOKIES[cookie.kind]
  setCookie(c, cookieName(options, cookie.kind), cookie.value, {
    httpOnly: true,
    secure: options.secure,
    sameSite: spec.sameSite,
    path: spec.path,
    maxAge: Math.max(1, Math.floor(cookie.maxAgeSeconds)),
  })
}

export function clearCookie(c: Context, options: CookieOptions, kind: CookieKind): void {
  deleteCookie(c, cookieName(options, kind), { path: COOKIES[kind].path, secure: options.secure, httpOnly: true })
}
