/**
 * The dashboard's pages on `{auth_url}/dashboard…` (where the person's central session and the
 * CSRF cookie live; decisions.md, "The dashboard lives on {auth_url}"), and the redirects that
 * send `{base_url}/` and `{base_url}/dashboard…` there. Every change is a CSRF-checked form
 * post that calls the owner API's own domain function with the signed-in person as the
 * caller, then redirects back (303) with a notice.
 */
import { Hono, type Context } from 'hono'
import { ServiceError } from '../lib/errors.ts'
import { escapeHtml } from '../lib/html.ts'
import type { HostUrls } from '../http/hosts.ts'
import type { DashboardDeps, DashboardEnv } from './context.ts'
import { card, notice, pageHead } from './format.ts'
import { shell } from './layout.ts'
import { registerApps } from './apps-page.ts'
import { registerAccess } from './access-page.ts'
import { registerSecrets } from './secrets-page.ts'
import { registerLogs } from './logs-page.ts'
import { registerJobs } from './jobs-page.ts'
import { registerFeed } from './feed-page.ts'
import { registerIntegrations } from './integrations-page.ts'
import { registerOrganisation } from './organisation-page.ts'

const TITLES: Partial<Record<string, string>> = {
  APP_NOT_FOUND: 'No such app',
  FORBIDDEN: 'Not allowed',
  CONFIRMATION_REQUIRED: 'Confirm your email first',
  AUTH_REQUIRED: 'Sign in again',
}

function errorPage(c: Context<DashboardEnv>, error: ServiceError): Response {
  const title = TITLES[error.code] ?? 'That did not work'
  const back = c.req.method === 'GET' ? '<a href="/dashboard">Back to your apps</a>' : 'Go back, reload the page and try again.'
  return shell(c, {
    title, person: c.get('person') ?? null, csrf: c.get('csrf') ?? null,
    body: `${pageHead({ title })}${notice('bad', `<p>${escapeHtml(error.message)}</p>`)}${card({ title: 'What now', id: 'next', body: `<p>${back}</p>` })}`,
    status: error.status,
  })
}

/**
 * The dashboard on the auth host.
 *
 * @example
 * auth.route('/', dashboardPages({ db, clock, logger, urls, cookies, secrets, revealKey, mailer }))
 */
export function dashboardPages(deps: DashboardDeps): Hono<DashboardEnv> {
  const routes = new Hono<DashboardEnv>()
  routes.onError((error, c) => {
    if (error instanceof ServiceError && error.status < 500) return errorPage(c, error)
    deps.logger.error('dashboard page failed', { path: new URL(c.req.url).pathname, error: error.message })
    return errorPage(c, new ServiceError('INTERNAL_ERROR', 'Something went wrong on our side; try again in a moment.', { status: 503 }))
  })
  registerApps(routes, deps)
  registerAccess(routes, deps)
  registerSecrets(routes, deps)
  registerLogs(routes, deps)
  registerJobs(routes, deps)
  registerFeed(routes, deps)
  registerIntegrations(routes, deps)
  registerOrganisation(routes, deps)
  return routes
}

/**
 * `{base_url}/` and `{base_url}/dashboard…` answer 302 to the same path on `{auth_url}`.
 *
 * @example
 * base.route('/', dashboardRedirects({ urls }))
 */
export function dashboardRedirects(deps: { urls: HostUrls }): Hono {
  const routes = new Hono()
  const toAuth = (c: Context) => {
    const url = new URL(c.req.url)
    const path = url.pathname === '/' ? '/dashboard' : url.pathname
    return c.redirect(`${deps.urls.auth}${path}${url.search}`, 302)
  }
  routes.get('/', toAuth)
  routes.get('/dashboard', toAuth)
  routes.get('/dashboard/*', toAuth)
  return routes
}
