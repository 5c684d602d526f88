/**
 * What every dashboard page and form needs: the signed-in person (this browser's central
 * session on `{auth_url}`, read fresh on every request as the owner API reads an owner token's
 * person), the app a page names with the person's role on it (identity's rules: an app the
 * person may not see reads as not found), the CSRF token of the page's forms, and the checked
 * fields of a submitted form (Origin plus double-submit token, identity/pages/forms.ts).
 */
import type { Context } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { ServiceError } from '../lib/errors.ts'
import type { HostUrls } from '../http/hosts.ts'
import type { App } from '../apps/apps.ts'
import type { SecretStore } from '../secrets/index.ts'
import {
  appForRole, browserSession, csrfToken, effectiveRole, readForm, signInFirst,
  type AppRole, type CookieOptions, type User,
} from '../identity/index.ts'

export interface DashboardDeps {
  db: Db
  clock: Clock
  logger: Logger
  urls: HostUrls
  cookies: CookieOptions
  /** The app secrets store (values go in only). */
  secrets: SecretStore
  /** Seals new app access tokens for their one-time reveal link. */
  revealKey: Uint8Array
  /** Sends organisation invitations. */
  mailer: { send(message: { to: string; subject: string; text: string; html?: string }): Promise<void> }
}

/** Set once a request's person is known, so the error page can still show the account bar. */
export type DashboardEnv = { Variables: { person: User | undefined; csrf: string | undefined } }

/** The path and query of this request on the auth host, for the way back from sign-in. */
function hereOf(c: Context): string {
  const url = new URL(c.req.url)
  return `${url.pathname}${url.search}`
}

/**
 * The signed-in person, or the redirect to sign-in (and back here) for a GET. A form posted
 * without a session fails AUTH_REQUIRED.
 *
 * @example
 * const person = await signedIn(c, deps)
 * if (person instanceof Response) return person
 */
export async function signedIn(c: Context<DashboardEnv>, deps: DashboardDeps): Promise<User | Response> {
  const active = await browserSession(c, deps)
  if (active === null) {
    if (c.req.method !== 'GET') throw new ServiceError('AUTH_REQUIRED', 'your session ended; sign in again, then repeat what you did')
    return signInFirst(c, { auth: deps.urls.auth, path: hereOf(c) })
  }
  c.set('person', active.user)
  return active.user
}

/** This page's CSRF token (set as the browser's cookie for another hour). */
export function pageCsrf(c: Context<DashboardEnv>, deps: DashboardDeps): string {
  const token = csrfToken(c, deps.cookies)
  c.set('csrf', token)
  return token
}

/** A submitted form's fields after the Origin and CSRF checks. */
export function formOf(c: Context<DashboardEnv>, deps: DashboardDeps): Promise<Record<string, string>> {
  return readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
}

/**
 * The app a page names and the person's role on it: at least Use, or identity's refusal
 * (APP_NOT_FOUND for an app they may not see).
 */
export async function appOf(deps: DashboardDeps, input: { person: User; app: string }): Promise<{ app: App; role: AppRole }> {
  const app = await appForRole(deps.db, input.person, input.app, 'use')
  const role = (await effectiveRole(deps.db, { app, user: input.person })) ?? 'use'
  return { app, role }
}

/** After a change: back to `path` with a notice key (never a value) the page turns into text. */
export function doneRedirect(c: Context, path: string, noticeKey: string): Response {
  const separator = path.includes('?') ? '&' : '?'
  return c.redirect(`${path}${separator}done=${encodeURIComponent(noticeKey)}`, 303)
}

/**
 * Runs one read of a page's card; a refusal a person can act on (a 4xx ServiceError, such as
 * CONFIRMATION_REQUIRED) becomes that card's message instead of failing the whole page.
 */
export async function attempt<T>(read: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: ServiceError }> {
  try {
    return { ok: true, value: await read() }
  } catch (error) {
    if (error instanceof ServiceError && error.status < 500) return { ok: false, error }
    throw error
  }
}
