/**
 * Pieces every page flow on `{auth_url}` shares: the error page, this browser's central
 * session, the detour through sign-in, and the page for an account that must confirm its
 * email first.
 */
import type { Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { sameOriginUrl } from '../../lib/redirects.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { ServiceError } from '../../lib/errors.ts'
import { escapeHtml, page } from '../../lib/html.ts'
import { sessionFromCookie, type ActiveSession } from '../sessions/sessions.ts'
import { readCookie, type CookieOptions } from './cookies.ts'
import type { User } from '../accounts/users.ts'

/**
 * Error handling for auth-host pages: expected failures become a page a person can act on,
 * anything else is logged and shown as a generic page.
 */
export function pageErrorHandler(logger: Logger, title: string) {
  return (error: Error, c: Context) => {
    if (error instanceof ServiceError && error.status < 500) {
      return page(c, title, `<h1>${escapeHtml(title)}</h1><p class="error">${escapeHtml(error.message)}</p>`,
        { status: error.status })
    }
    logger.error('auth page failed', { path: new URL(c.req.url).pathname, error: error.message })
    return page(c, title, '<h1>Something went wrong</h1><p>Try again in a moment.</p>', { status: 503 })
  }
}

/** The central session of this browser, or null. */
export function browserSession(c: Context, deps: { db: Db; clock: Clock; cookies: CookieOptions }): Promise<ActiveSession | null> {
  return sessionFromCookie(deps.db, deps.clock, readCookie(c, deps.cookies, 'session'))
}

/** Sends the browser to sign-in at `auth` (the auth host's origin) and back to `path` there. */
export function signInFirst(c: Context, input: { auth: string; path: string }): Response {
  return c.redirect(sameOriginUrl(`/sign-in?continue=${encodeURIComponent(input.path)}`, input.auth), 302)
}

/**
 * The signed-in person with a confirmed email, or the response that sends them there: sign-in
 * and back to `returnTo` for a GET (a form post without a session fails AUTH_REQUIRED), the
 * confirm-first page for an unconfirmed account. For the pages of features built on identity
 * (connections, bindings, the integration page).
 *
 * @example
 * const user = await confirmedPerson(c, deps, '/connections')
 * if (user instanceof Response) return user
 */
export async function confirmedPerson(
  c: Context, deps: { db: Db; clock: Clock; cookies: CookieOptions; urls: Pick<HostUrls, 'auth'> }, returnTo: string,
): Promise<User | Response> {
  const active = await browserSession(c, deps)
  if (!active) {
    if (c.req.method !== 'GET') throw new ServiceError('AUTH_REQUIRED', 'sign in, then open the page again')
    return signInFirst(c, { auth: deps.urls.auth, path: returnTo })
  }
  if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
  return active.user
}

/** A page for an unconfirmed account (owner-only actions need a confirmed email, spec 5.2). */
export function confirmFirstPage(c: Context, email: string): Response {
  return page(c, 'Confirm your email first', `<h1>Confirm your email first</h1>
    <p>You are signed in as <strong>${escapeHtml(email)}</strong>, whose email address is not confirmed yet.
    Open the confirmation link we emailed you, then try again.</p>`, { status: 403 })
}
