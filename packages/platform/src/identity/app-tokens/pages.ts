/**
 * The pages on `{auth_url}` where an app's owner sees an app access token's value, once:
 * - `/app-tokens/reveal?id=…&k=…`: the one-time link the owner API returns at creation;
 * - `/app-tokens/requests/:id`: an agent's request for a token, which the owner approves.
 *
 * Both need the central session of the app's current owner with a confirmed email; an
 * anonymous browser is sent to sign-in and back. A GET never shows or creates a value: the
 * owner presses a button (a CSRF-protected POST), so link previews and browser prefetching
 * cannot burn a reveal link or approve a request.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { HostUrls } from '../../http/hosts.ts'
import {
  approveTokenRequest, findTokenRequest, inspectReveal, openReveal, tokenRequestStatus, type RevealState,
} from './app-tokens.ts'
import type { CookieOptions } from '../pages/cookies.ts'
import { csrfToken, readForm } from '../pages/forms.ts'
import { escapeHtml, hidden, page } from '../../lib/html.ts'
import { browserSession, confirmFirstPage, pageErrorHandler, signInFirst } from '../pages/auth-pages.ts'

export interface AppTokenPageDeps {
  db: Db
  clock: Clock
  logger: Logger
  urls: HostUrls
  cookies: CookieOptions
  revealKey: Uint8Array
}

function secretPage(c: Context, input: { slug: string; name: string; secret: string }): Response {
  return page(c, 'App access token', `<h1>App access token</h1>
    <p>For the app <strong>${escapeHtml(input.slug)}</strong>, named <strong>${escapeHtml(input.name)}</strong>.</p>
    <p><strong>Copy it now into your secret manager.</strong> It is shown this once and never again.</p>
    <label for="token">Token</label>
    <input id="token" readonly value="${escapeHtml(input.secret)}" autocomplete="off" spellcheck="false">
    <p class="muted">Send it as <code>Authorization: Bearer &lt;token&gt;</code> to this app's runtime APIs. It acts as you,
    the owner, at runtime only; it cannot manage the app. Revoke it any time with
    <code>service app access-token revoke ${escapeHtml(input.slug)} &lt;id&gt;</code>.</p>`)
}

const REVEAL_PROBLEMS: Record<Exclude<RevealState, 'valid'>, { status: number; text: string }> = {
  used: { status: 410, text: 'This token was already shown. Each link shows it once; if you did not keep it, revoke the token and create a new one.' },
  expired: { status: 410, text: 'This link has expired. Links work for 15 minutes; revoke the token and create a new one.' },
  revoked: { status: 410, text: 'This token has been revoked.' },
  unknown: { status: 404, text: 'This link is not valid.' },
}

function revealProblem(c: Context, state: Exclude<RevealState, 'valid'>): Response {
  const problem = REVEAL_PROBLEMS[state]
  const title = state === 'used' ? 'Already shown' : 'Link not valid'
  return page(c, title, `<h1>${title}</h1><p>${problem.text}</p>`, { status: problem.status })
}

function notYourApp(c: Context, email: string): Response {
  return page(c, 'Not your app', `<h1>Only the app's owner can do this</h1>
    <p>You are signed in as <strong>${escapeHtml(email)}</strong>, who does not own this app.</p>`, { status: 403 })
}

export function appTokenPages(deps: AppTokenPageDeps) {
  const { db, clock } = deps
  const routes = new Hono()
  routes.onError(pageErrorHandler(deps.logger, 'App access token'))

  routes.get('/app-tokens/reveal', async (c) => {
    const id = c.req.query('id') ?? ''
    const k = c.req.query('k') ?? ''
    const active = await browserSession(c, deps)
    if (!active) return signInFirst(c, { auth: deps.urls.auth, path: `/app-tokens/reveal?id=${encodeURIComponent(id)}&k=${encodeURIComponent(k)}` })
    const info = await inspectReveal(db, clock, { id, k })
    if (!info) return revealProblem(c, 'unknown')
    if (info.app.ownerId !== active.user.id) return notYourApp(c, active.user.email)
    if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
    if (info.state !== 'valid') return revealProblem(c, info.state)
    return page(c, 'Show app access token', `<h1>Show the new access token</h1>
      <p>For the app <strong>${escapeHtml(info.app.slug)}</strong>, named <strong>${escapeHtml(info.tokenName)}</strong>.</p>
      <p>The token is shown once. Have your secret manager ready.</p>
      <form method="post" action="/app-tokens/reveal">${hidden('csrf', csrfToken(c, deps.cookies))}${hidden('id', id)}${hidden('k', k)}
        <button>Show the token</button></form>`)
  })

  routes.post('/app-tokens/reveal', async (c) => {
    const values = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const id = values.id ?? ''
    const k = values.k ?? ''
    const active = await browserSession(c, deps)
    if (!active) throw new ServiceError('AUTH_REQUIRED', 'sign in as the app\'s owner, then open the link again')
    const info = await inspectReveal(db, clock, { id, k })
    if (!info) return revealProblem(c, 'unknown')
    if (info.app.ownerId !== active.user.id) return notYourApp(c, active.user.email)
    if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
    const opened = await db.transaction((tx) => openReveal(tx, clock, { key: deps.revealKey, id, k }))
    if (!opened.ok) return revealProblem(c, opened.state === 'valid' ? 'unknown' : opened.state)
    return secretPage(c, { slug: info.app.slug, name: info.tokenName, secret: opened.secret })
  })

  routes.get('/app-tokens/requests/:id', async (c) => {
    const id = c.req.param('id')
    const active = await browserSession(c, deps)
    if (!active) return signInFirst(c, { auth: deps.urls.auth, path: `/app-tokens/requests/${encodeURIComponent(id)}` })
    const request = await findTokenRequest(db, id)
    // Someone else's request reads like one that does not exist.
    if (!request || request.ownerId !== active.user.id) {
      return page(c, 'No such request', '<h1>No such request</h1><p>There is no token request for an app you own at this address.</p>',
        { status: 404 })
    }
    if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
    const status = tokenRequestStatus(request, clock.now())
    if (status === 'approved') {
      return page(c, 'Already approved', `<h1>Already approved</h1>
        <p>This request was approved and its token was shown then. If you did not keep it, revoke it and approve a new request.</p>`,
        { status: 410 })
    }
    if (status === 'expired') {
      return page(c, 'Request expired', '<h1>Request expired</h1><p>Requests wait 15 minutes for approval. Ask for a new one.</p>',
        { status: 410 })
    }
    return page(c, 'Approve an access token', `<h1>Approve an app access token?</h1>
      <p>Someone asked for an access token for your app <strong>${escapeHtml(request.appSlug)}</strong>,
      named <strong>${escapeHtml(request.name)}</strong>, at ${escapeHtml(request.requestedAt.toISOString().slice(11, 16))} UTC.</p>
      <p>The token acts as you on the app's data, Functions and files (not on its settings or deployments).
      Approve only if you or your agent asked for it just now. The token is shown on the next page, once.</p>
      <form method="post" action="/app-tokens/requests/${escapeHtml(request.id)}">${hidden('csrf', csrfToken(c, deps.cookies))}
        <button>Approve and show the token</button></form>`)
  })

  routes.post('/app-tokens/requests/:id', async (c) => {
    await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const active = await browserSession(c, deps)
    if (!active) throw new ServiceError('AUTH_REQUIRED', 'sign in as the app\'s owner, then open the request again')
    if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
    const outcome = await db.transaction((tx) => approveTokenRequest(tx, clock, { id: c.req.param('id'), owner: active.user }))
    if (!outcome.ok) {
      const text = outcome.status === 'approved' ? 'This request was already approved.'
        : outcome.status === 'expired' ? 'This request has expired. Ask for a new one.'
          : 'There is no token request for an app you own at this address.'
      return page(c, 'Not approved', `<h1>Not approved</h1><p>${text}</p>`, { status: outcome.status === 'unknown' ? 404 : 410 })
    }
    return secretPage(c, { slug: outcome.request.appSlug, name: outcome.token.name, secret: outcome.secret })
  })

  return routes
}
