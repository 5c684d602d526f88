/**
 * The central sign-in at `{auth_url}`: the email-link flow (request, wait and claim in the
 * initiating window; review and approve in the window that opened the link), the
 * authorization step that carries a central session to an app origin, and sign-out.
 * Every form is protected by a double-submit CSRF token and an Origin check.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { ServiceError } from '../lib/errors.ts'
import { findAppBySlug } from '../apps/apps.ts'
import type { HostUrls } from '../http/hosts.ts'
import { issueCode } from './app-sessions.ts'
import { clearCookie, COOKIE_PATHS, COOKIES, readCookie, writeCookie, type CookieOptions } from './cookies.ts'
import { LIFETIMES } from './lifetimes.ts'
import { checkOrigin, csrfToken, readForm } from './forms.ts'
import { escapeHtml, hidden, page } from './pages.ts'
import { createSession, revokeSession, sessionFromCookie } from './sessions.ts'
import { approveLink, bindPreview, claimApproved, claimState, inspectLink, startRequest } from './sign-in-requests.ts'
import { createUser, findUserById, findUserByEmail, normaliseEmail, type User } from './users.ts'

export interface Mail {
  send(message: { to: string; subject: string; text: string; html?: string }): Promise<void>
}

export interface AuthRouteDeps {
  db: Db
  clock: Clock
  logger: Logger
  mailer: Mail
  urls: HostUrls
  cookies: CookieOptions
  /** Whether an unknown address may create an account by signing in. */
  registration: boolean
  /** Called when an account's email is confirmed (resumes paused apps). */
  onEmailConfirmed?: (user: User) => Promise<void>
}

/** A `continue` target: a path on the auth host, never another origin. */
export function safeContinue(value: string | undefined | null): string {
  if (!value || value.length > 2000 || !value.startsWith('/') || value.startsWith('//') || value.includes('\\')) return '/'
  try {
    const url = new URL(value, 'http://auth.invalid')
    return url.host === 'auth.invalid' ? url.pathname + url.search : '/'
  } catch {
    return '/'
  }
}

export function authRoutes(deps: AuthRouteDeps) {
  const { db, clock } = deps
  const routes = new Hono()

  const csrf = (c: Context) => csrfToken(c, deps.cookies)
  const form = (c: Context) => readForm(c, deps.urls.auth)

  routes.onError((error, c) => {
    if (error instanceof ServiceError && error.status < 500) {
      return page(c, 'Sign-in', `<h1>Something is not right</h1><p class="error">${escapeHtml(error.message)}</p>
        <p><a href="/sign-in">Start again</a></p>`, { status: error.status })
    }
    deps.logger.error('sign-in request failed', { error: (error as Error).message })
    return page(c, 'Sign-in', '<h1>Sign-in is unavailable</h1><p>Try again in a moment.</p>', { status: 503 })
  })

  routes.get('/', async (c) => {
    const active = await sessionFromCookie(db, clock, readCookie(c, COOKIES.session))
    if (!active) return c.redirect('/sign-in', 302)
    return page(c, 'Signed in', `<h1>Signed in</h1><p>You are signed in as <strong>${escapeHtml(active.user.email)}</strong>.</p>
      <form method="post" action="/sign-out">${hidden('csrf', csrf(c))}<button>Sign out</button></form>`)
  })

  routes.get('/sign-in', async (c) => {
    const next = safeContinue(c.req.query('continue'))
    if (await sessionFromCookie(db, clock, readCookie(c, COOKIES.session))) return c.redirect(next, 302)
    return page(c, 'Sign in', `<h1>Sign in</h1>
      <form method="post" action="/sign-in">${hidden('csrf', csrf(c))}${hidden('continue', next)}
        <label for="email">Email address</label>
        <input id="email" name="email" type="email" autocomplete="email" required autofocus>
        <details><summary>Use a password instead</summary>
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" minlength="8" maxlength="72">
        </details>
        <button>Continue</button>
      </form>
      <p class="muted">We email you a link. Keep this window open; it continues by itself once you approve.</p>`)
  })

  routes.post('/sign-in', async (c) => {
    const values = await form(c)
    const email = normaliseEmail(values.email)
    const next = safeContinue(values.continue)
    if (values.password) throw new ServiceError('NOT_IMPLEMENTED', 'password sign-in is not available on this platform yet')
    const user = await findUserByEmail(db, email)
    const started = await startRequest(db, clock, {
      purpose: 'sign_in', email, userId: user?.id ?? null, continueTo: next, withClaim: true,
    })
    if (user || deps.registration) {
      const link = `${deps.urls.auth}/confirm?r=${started.request.id}&t=${started.linkSecret}`
      await deps.mailer.send({
        to: email,
        subject: 'Your sign-in link',
        text: `Open this link to sign in. It works once, for 15 minutes:\n\n${link}\n\nIf you did not ask to sign in, ignore this message.`,
      })
    } else {
      await deps.mailer.send({
        to: email,
        subject: 'Sign-in attempt',
        text: 'Someone tried to sign in with this address, but no account exists for it and registration is closed.',
      })
    }
    writeCookie(c, deps.cookies, {
      name: COOKIES.claim, value: started.claimSecret!, path: COOKIE_PATHS.claim,
      maxAgeSeconds: (LIFETIMES.linkMs * 2) / 1000, sameSite: 'Strict',
    })
    return c.redirect(`/sign-in/wait?r=${started.request.id}`, 303)
  })

  routes.get('/sign-in/wait', (c) => {
    const id = c.req.query('r') ?? ''
    return page(c, 'Check your email', `<h1>Check your email</h1>
      <p>We sent you a sign-in link. Open it and approve; this window then continues by itself.</p>
      <p class="muted" id="state">Waiting for your approval…</p>
      <form method="post" action="/sign-in/claim" id="claim">${hidden('csrf', csrf(c))}${hidden('r', id)}
        <button>I approved, continue</button></form>`, {
      script: `(function(){var id=${JSON.stringify(id)};function poll(){fetch('/sign-in/claim/status?r='+encodeURIComponent(id),{credentials:'same-origin'})
.then(function(r){return r.json()}).then(function(s){if(s.status==='approved'){document.getElementById('claim').submit()}
else if(s.status==='pending'){setTimeout(poll,1500)}else{document.getElementById('state').textContent='This sign-in request has '+(s.status==='expired'?'expired':'ended')+'. Start again.'}})
.catch(function(){setTimeout(poll,3000)})}poll()})()`,
    })
  })

  routes.get('/sign-in/claim/status', async (c) => {
    const status = await claimState(db, clock, c.req.query('r') ?? '', readCookie(c, COOKIES.claim))
    return c.json({ status: status === 'unknown' ? 'expired' : status })
  })

  routes.post('/sign-in/claim', async (c) => {
    const values = await form(c)
    const request = await claimApproved(db, clock, values.r ?? '', readCookie(c, COOKIES.claim))
    if (!request) {
      return page(c, 'Not approved yet', `<h1>Not approved yet</h1><p>Open the link we emailed you and press Approve, then continue here.</p>
        <p><a href="/sign-in/wait?r=${escapeHtml(values.r ?? '')}">Back</a></p>`, { status: 409 })
    }
    const user = request.userId ? await findUserById(db, request.userId) : null
    if (!user) throw new ServiceError('FORBIDDEN', 'this sign-in request has no account')
    const { session, cookie } = await createSession(db, clock, { user, userAgent: c.req.header('user-agent') ?? null })
    writeCookie(c, deps.cookies, {
      name: COOKIES.session, value: cookie, maxAgeSeconds: (session.expiresAt.getTime() - clock.now().getTime()) / 1000,
    })
    clearCookie(c, deps.cookies, COOKIES.claim, COOKIE_PATHS.claim)
    return c.redirect(safeContinue(request.continueTo), 303)
  })

  routes.get('/confirm', async (c) => {
    const id = c.req.query('r') ?? ''
    const secret = c.req.query('t') ?? ''
    const { state, request } = await inspectLink(db, clock, id, secret)
    if (state !== 'valid' || !request) return linkProblem(c, state)
    const preview = await bindPreview(db, id)
    writeCookie(c, deps.cookies, {
      name: COOKIES.preview, value: preview, path: COOKIE_PATHS.preview, maxAgeSeconds: LIFETIMES.previewMs / 1000, sameSite: 'Strict',
    })
    const what = request.purpose === 'confirm_email' ? 'Confirm your email address' : 'Approve this sign-in'
    return page(c, what, `<h1>${what}</h1>
      <p>For <strong>${escapeHtml(request.email)}</strong>, requested at ${escapeHtml(request.createdAt.toISOString().slice(11, 16))} UTC.</p>
      <p class="muted">If you did not ask for this, close this window.</p>
      <form method="post" action="/confirm">${hidden('r', id)}${hidden('t', secret)}<button>Approve</button></form>`)
  })

  routes.post('/confirm', async (c) => {
    checkOrigin(c, deps.urls.auth)
    const body = await c.req.parseBody()
    const outcome = await approveLink(db, clock, {
      id: String(body.r ?? ''), linkSecret: String(body.t ?? ''), previewSecret: readCookie(c, COOKIES.preview),
    })
    clearCookie(c, deps.cookies, COOKIES.preview, COOKIE_PATHS.preview)
    if (!outcome.ok) {
      if (outcome.reason === 'preview_missing') {
        return page(c, 'Open the link first', `<h1>Open the link in your browser</h1>
          <p>For your safety, approval only works from the page the link opens. Open the link from your email again and press Approve.</p>`,
          { status: 403 })
      }
      return linkProblem(c, outcome.reason)
    }
    const request = outcome.request
    let user = request.userId ? await findUserById(db, request.userId) : null
    if (!user) {
      // A new address proved by its own mailbox: the account exists from here, confirmed.
      user = (await findUserByEmail(db, request.email))
        ?? (await createUser(db, { email: request.email, organisationId: null, confirmedAt: clock.now() }))
      await db.query('update platform.sign_in_requests set user_id = $2 where id = $1', [request.id, user.id])
    }
    if (!user.emailConfirmedAt) {
      await db.query('update platform.users set email_confirmed_at = $2, confirmation_deadline = null where id = $1', [user.id, clock.now()])
      await db.query('update platform.sessions set provisional = false where user_id = $1 and revoked_at is null', [user.id])
      await deps.onEmailConfirmed?.(user)
    }
    return page(c, 'Confirmed', `<h1>Confirmed</h1><p>You may close this window. The window where you started continues by itself.</p>`)
  })

  routes.get('/authorize', async (c) => {
    const slug = c.req.query('app') ?? ''
    const returnTo = c.req.query('return_to') ?? ''
    const app = /^[a-z][a-z0-9-]{1,38}[a-z0-9]$/.test(slug) ? await findAppBySlug(db, slug) : null
    if (!app) throw new ServiceError('NOT_FOUND', 'there is no such app to sign in to')
    const origin = deps.urls.app(app.slug)
    let target: URL
    try {
      target = new URL(returnTo, origin)
    } catch {
      target = new URL(origin)
    }
    // Only the app's own origin is a return target: no open redirect.
    if (target.origin !== origin) target = new URL(origin)
    const active = await sessionFromCookie(db, clock, readCookie(c, COOKIES.session))
    if (!active) {
      const self = `/authorize?app=${encodeURIComponent(slug)}&return_to=${encodeURIComponent(target.toString())}`
      return c.redirect(`/sign-in?continue=${encodeURIComponent(self)}`, 302)
    }
    const code = await issueCode(db, clock, { sessionId: active.session.id, appId: app.id, returnTo: target.toString() })
    return c.redirect(`${origin}/_service/auth/callback?code=${encodeURIComponent(code)}`, 302)
  })

  routes.post('/sign-out', async (c) => {
    await form(c)
    const active = await sessionFromCookie(db, clock, readCookie(c, COOKIES.session))
    if (active) await revokeSession(db, clock, active.session.id, 'signed_out')
    clearCookie(c, deps.cookies, COOKIES.session)
    return page(c, 'Signed out', '<h1>Signed out</h1><p>This browser is signed out. Other browsers stay signed in.</p>')
  })

  return routes
}

function linkProblem(c: Context, state: string): Response {
  const text = state === 'expired'
    ? 'This link has expired. Links work for 15 minutes; ask for a new one.'
    : state === 'used'
      ? 'This link was already used. Each link works once; ask for a new one if you still need to sign in.'
      : 'This link is not valid. Ask for a new one.'
  return page(c, 'Link not valid', `<h1>Link not valid</h1><p>${text}</p><p><a href="/sign-in">Sign in</a></p>`, { status: 410 })
}
