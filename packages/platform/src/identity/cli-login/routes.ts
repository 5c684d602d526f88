/**
 * HTTP surface of `service login` (cli-login.ts): `{base_url}/v1/cli/logins` for the CLI,
 * the approval page at `{auth_url}/cli/login/:id`, and `DELETE {base_url}/v1/me/token`,
 * with which `service logout` revokes the token it holds.
 */
import { limitPerClient } from '../../http/client-address.ts'
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { bearerToken, requireOwner, type OwnerEnv } from '../accounts/owner-auth.ts'
import { readObject } from '../../http/json.ts'
import { browserSession, confirmFirstPage, pageErrorHandler, signInFirst } from '../pages/auth-pages.ts'
import type { CookieOptions } from '../pages/cookies.ts'
import { csrfToken, readForm } from '../pages/forms.ts'
import { escapeHtml, hidden, page } from '../../lib/html.ts'
import { revokeOwnerToken, verifyOwnerToken } from '../accounts/owner-tokens.ts'
import { approveCliLogin, findLogin, loginStatus, pollCliLogin, startCliLogin, type CliLoginStatus } from './cli-login.ts'

/** `{base_url}/v1/cli/logins`: start (no credentials) and poll (the poll secret). */
export function cliLoginRoutes(deps: { db: Db; clock: Clock; urls: HostUrls; trustProxy?: boolean }) {
  const { db, clock } = deps
  const routes = new Hono()
  // Unauthenticated: bounded per client address so nobody can flood it.
  routes.post('/', limitPerClient({ db: deps.db, clock: deps.clock, trustProxy: deps.trustProxy ?? false }, { name: 'cli-login-client', limit: 30, windowSeconds: 15 * 60 }))
  routes.post('/', async (c) => {
    const login = await startCliLogin(db, clock)
    return c.json({
      id: login.id,
      approveUrl: `${deps.urls.auth}/cli/login/${login.id}`,
      userCode: login.userCode,
      pollToken: login.pollToken,
      expiresAt: login.expiresAt.toISOString(),
    }, 201, { 'cache-control': 'no-store' })
  })
  routes.post('/:id/poll', async (c) => {
    const body = await readObject(c, 4096)
    const pollToken = typeof body.pollToken === 'string' ? body.pollToken : ''
    const outcome = await db.transaction((tx) => pollCliLogin(tx, clock, { id: c.req.param('id'), pollToken }))
    if (!outcome) throw new ServiceError('NOT_FOUND', 'no such CLI login (or the poll token does not match)')
    return c.json(outcome, 200, { 'cache-control': 'no-store' })
  })
  return routes
}

/** `{base_url}/v1/me/token`: `DELETE` revokes the owner token that authorizes the call. */
export function meTokenRoutes(deps: { db: Db; clock: Clock }) {
  const routes = new Hono<OwnerEnv>()
  routes.use('*', requireOwner(deps))
  routes.delete('/', async (c) => {
    const verified = await verifyOwnerToken(deps.db, deps.clock, bearerToken(c.req.header('authorization')) ?? '')
    if (!verified || !(await revokeOwnerToken(deps.db, deps.clock, verified.user.id, verified.tokenId))) {
      throw new ServiceError('UNAUTHENTICATED', 'the owner API token is unknown or revoked')
    }
    return c.body(null, 204)
  })
  return routes
}

/** `{auth_url}/cli/login/:id`: the approval page (GET shows, POST with CSRF approves). */
export function cliLoginPages(deps: { db: Db; clock: Clock; logger: Logger; urls: HostUrls; cookies: CookieOptions }) {
  const { db, clock } = deps
  const routes = new Hono()
  routes.onError(pageErrorHandler(deps.logger, 'CLI sign-in'))

  const problem = (c: Parameters<typeof page>[0], status: CliLoginStatus | 'unknown') => {
    const [code, title, text] = status === 'unknown'
      ? [404, 'No such sign-in', 'This CLI sign-in does not exist. Run <code>service login</code> again.']
      : status === 'expired'
        ? [410, 'Sign-in expired', 'This CLI sign-in has expired (they last 10 minutes). Run <code>service login</code> again.']
        : [410, 'Already approved', 'This CLI sign-in was already approved. You can close this window.']
    return page(c, title, `<h1>${title}</h1><p>${text}</p>`, { status: code })
  }

  routes.get('/cli/login/:id', async (c) => {
    const id = c.req.param('id')
    const active = await browserSession(c, deps)
    if (!active) return signInFirst(c, { auth: deps.urls.auth, path: `/cli/login/${encodeURIComponent(id)}` })
    const login = await findLogin(db, id)
    if (!login) return problem(c, 'unknown')
    const status = loginStatus(login, clock.now())
    if (status !== 'pending') return problem(c, status)
    if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
    return page(c, 'Sign in the service CLI', `<h1>Sign in the service CLI?</h1>
      <p>The command line asks to act as <strong>${escapeHtml(active.user.email)}</strong>: it can manage and deploy your apps.</p>
      <p>Check that your terminal shows this code:</p>
      <p class="code">${escapeHtml(login.user_code)}</p>
      <p class="muted">Approve only if you ran <code>service login</code> yourself just now. If someone sent you this link, close this window.</p>
      <form method="post" action="/cli/login/${escapeHtml(login.id)}">${hidden('csrf', csrfToken(c, deps.cookies))}
        <button>Approve</button></form>`)
  })

  routes.post('/cli/login/:id', async (c) => {
    await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const active = await browserSession(c, deps)
    if (!active) throw new ServiceError('AUTH_REQUIRED', 'sign in first, then open the link from your terminal again')
    if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
    const outcome = await approveCliLogin(db, clock, { id: c.req.param('id'), userId: active.user.id })
    if (!outcome.ok) return problem(c, outcome.status)
    return page(c, 'CLI signed in', `<h1>Approved</h1>
      <p>The service CLI is signed in as <strong>${escapeHtml(active.user.email)}</strong>. You can close this window
      and return to your terminal.</p>`)
  })

  return routes
}
