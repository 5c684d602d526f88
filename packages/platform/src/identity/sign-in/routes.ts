/**
 * The central sign-in at `{auth_url}`: the email-link flow (request, wait and claim in the
 * initiating window; review and approve in the window that opened the link), the
 * authorization step that carries a central session to an app origin, and sign-out.
 * Every form is protected by a double-submit CSRF token and an Origin check.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { ServiceError } from '../../lib/errors.ts'
import { findAppBySlug } from '../../apps/apps.ts'
import { customReturnOrigin } from '../../apps/domains.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { issueCode } from '../sessions/app-sessions.ts'
import { clearCookie, readCookie, writeCookie, type CookieOptions } from '../pages/cookies.ts'
import { LIFETIMES } from '../lifetimes.ts'
import { checkOrigin, csrfToken, readForm } from '../pages/forms.ts'
import { escapeHtml, hidden, page, scriptJson } from '../../lib/html.ts'
import { createSession, revokeSession, sessionFromCookie } from '../sessions/sessions.ts'
import { approveLink, attachRequestUser, bindPreview, claimApproved, claimState, inspectLink, startRequest } from './requests.ts'
import { createUser, findUserById, findUserByEmail, normaliseEmail, type User } from '../accounts/users.ts'
import { confirmEmail, type ConfirmationOutcome } from './confirmation.ts'
import { companyPages } from '../companies/pages.ts'
import { confirmOnboarding } from '../companies/onboarding.ts'
import { checkPassword, hashPassword, readPasswordVerifier, storePasswordVerifier, verifyPassword } from './passwords.ts'
import { createRateLimiter, rateLimited, type RateRule } from '../../db/rate-limit.ts'
import { clientAddress } from '../../http/client-address.ts'
import { isAppSlug, isUuid } from '../../lib/ids.ts'
import { sameOriginPath, sameOriginUrl } from '../../lib/redirects.ts'
import { isBrowserSecret } from '../browser-secrets.ts'

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
  /** Attempts allowed per 15 minutes, per email address and per client address. */
  limits?: { perAddress: number; perClient: number }
  /** Trust the last X-Forwarded-For entry (the proxy's) as the client address (behind a proxy). */
  trustProxy?: boolean
}

const WINDOW_SECONDS = 15 * 60


export function authRoutes(deps: AuthRouteDeps) {
  const { db, clock } = deps
  const routes = new Hono()

  /** A `continue` target: a normalised path on the auth host, never another origin. */
  const safeContinue = (value: string | undefined | null) => sameOriginPath(value, deps.urls.auth)
  /** Redirects to a path on the auth host, always as an absolute URL. */
  const redirectTo = (c: Context, path: string, status: 302 | 303) => c.redirect(sameOriginUrl(path, deps.urls.auth), status)
  const csrf = (c: Context) => csrfToken(c, deps.cookies)
  const claimProof = (c: Context) => ({ claim: readCookie(c, deps.cookies, 'claim'), csrf: readCookie(c, deps.cookies, 'csrf') })
  const form = (c: Context) => readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
  const limiter = createRateLimiter({ db, clock })
  const rules = {
    address: { name: 'sign-in-address', limit: deps.limits?.perAddress ?? 10, windowSeconds: WINDOW_SECONDS },
    client: { name: 'sign-in-client', limit: deps.limits?.perClient ?? 100, windowSeconds: WINDOW_SECONDS },
    password: { name: 'password-change', limit: deps.limits?.perAddress ?? 10, windowSeconds: WINDOW_SECONDS },
  } satisfies Record<string, RateRule>

  async function limit(rule: RateRule, key: string) {
    const result = await limiter.hit(rule, key)
    if (!result.allowed) throw rateLimited(result.retryAfterSeconds)
  }

  /** Sets the session cookie to last exactly as long as the session. */
  function writeSessionCookie(c: Context, cookie: string, session: { expiresAt: Date }): void {
    writeCookie(c, deps.cookies, {
      kind: 'session', value: cookie, maxAgeSeconds: (session.expiresAt.getTime() - clock.now().getTime()) / 1000,
    })
  }

  async function startSession(c: Context, user: User): Promise<void> {
    const { session, cookie } = await createSession(db, clock, { user, userAgent: c.req.header('user-agent') ?? null })
    writeSessionCookie(c, cookie, session)
  }

  /** Emails the scanner-safe confirmation link of an unconfirmed account. */
  async function sendConfirmation(user: User): Promise<void> {
    const started = await startRequest(db, clock, {
      purpose: 'confirm_email', email: user.email, userId: user.id, continueTo: null, claimCsrf: null,
    })
    const link = `${deps.urls.auth}/confirm?r=${started.request.id}&t=${started.linkSecret}`
    await deps.mailer.send({
      to: user.email,
      subject: 'Confirm your email address',
      text: `Confirm your email address within 24 hours, or your apps pause until you do:\n\n${link}\n\nThe link works once, for 15 minutes; you can ask for a new one.`,
    })
  }

  /**
   * What a password sign-in that did not sign an existing account in answers while
   * registration is open: the same page whether the address was new (it registered, and this
   * browser has a provisional session) or known with another password (its owner is told by
   * mail), so the form is no oracle of which addresses have accounts.
   */
  function registeredOrRefused(c: Context, email: string, next: string): Response {
    return page(c, 'Check your email', `<h1>Check your email</h1>
      <p>If <strong>${escapeHtml(email)}</strong> is new here, your account is ready and this browser is signed in: confirm the
      address within 24 hours with the link we emailed. If the address already has an account, that password did not match
      it; we emailed its owner, who can sign in with an email link.</p>
      <p><a href="${escapeHtml(sameOriginUrl(next, deps.urls.auth))}">Continue</a> · <a href="/sign-in">Sign in another way</a></p>`)
  }

  async function passwordSignIn(c: Context, email: string, password: string, next: string): Promise<Response> {
    // The length is checked before the address is looked up, so a password no account can
    // have (every stored one has 8 to 72 characters) gets the same refusal for every address.
    checkPassword(password)
    const user = await findUserByEmail(db, email)
    if (!user && deps.registration) {
      // No separate registration mode: an unknown address registers, unconfirmed, with a
      // provisional session that ends at the 24-hour confirmation deadline.
      const verifier = await hashPassword(password)
      const created = await createUser(db, {
        email, organisationId: null, passwordHash: verifier,
        confirmationDeadline: new Date(clock.now().getTime() + LIFETIMES.confirmationMs),
      })
      await sendConfirmation(created)
      await startSession(c, created)
      return registeredOrRefused(c, email, next)
    }
    const verifier = user ? await readPasswordVerifier(db, user.id) : null
    const valid = await verifyPassword(verifier, password)
    if (user && !valid && deps.registration) {
      await deps.mailer.send({
        to: user.email,
        subject: 'A sign-in with a wrong password',
        text: `Someone tried to sign in to your account with a password that does not match.\n\nIf it was you, sign in at ${deps.urls.auth}/sign-in with an email link, and set a new password in Preferences. If it was not, you need do nothing: your account is unchanged.`,
      })
      return registeredOrRefused(c, email, next)
    }
    if (user && valid && user.pausedAt) {
      await sendConfirmation(user)
      return page(c, 'Confirm your email', `<h1>Confirm your email first</h1><p>The 24 hours to confirm
        <strong>${escapeHtml(user.email)}</strong> have passed, so your apps are paused. We sent a new confirmation link;
        opening it resumes everything.</p>`, { status: 403 })
    }
    if (!user || !valid) {
      return page(c, 'Sign in', `<h1>Sign in</h1><p class="error">That email and password do not match an account.</p>
        <p><a href="/sign-in?continue=${encodeURIComponent(next)}">Try again</a>, or sign in with an email link.</p>`, { status: 401 })
    }
    await startSession(c, user)
    return redirectTo(c, next, 303)
  }

  // Forms here end on app origins (claim -> /authorize -> app callback): allow those, beside
  // any origin the page itself allowed (an OAuth connect form leads to the provider).
  const base = new URL(deps.urls.base)
  const formAction = `'self' ${base.protocol}//*.${base.host}`
  routes.use('*', async (c, next) => {
    await next()
    const policy = c.res.headers.get('content-security-policy')
    if (policy) {
      c.res.headers.set('content-security-policy', policy.replace(/form-action ([^;]*)/, (_, sources: string) =>
        `form-action ${[formAction, ...sources.split(' ').filter((source) => source !== '' && source !== "'self'")].join(' ')}`))
    }
  })

  routes.onError((error, c) => {
    if (error instanceof ServiceError && error.code === 'RATE_LIMITED') {
      const retry = String((error.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds ?? 60)
      return page(c, 'Too many attempts', `<h1>Too many attempts</h1><p>Wait ${escapeHtml(retry)} seconds and try again.</p>`,
        { status: 429, headers: { 'retry-after': retry } })
    }
    if (error instanceof ServiceError && error.status < 500) {
      return page(c, 'Sign-in', `<h1>Something is not right</h1><p class="error">${escapeHtml(error.message)}</p>
        <p><a href="/sign-in">Start again</a></p>`, { status: error.status })
    }
    deps.logger.error('sign-in request failed', { error: (error as Error).message })
    return page(c, 'Sign-in', '<h1>Sign-in is unavailable</h1><p>Try again in a moment.</p>', { status: 503 })
  })

  routes.get('/', async (c) => {
    const active = await sessionFromCookie(db, clock, readCookie(c, deps.cookies, 'session'))
    if (!active) return redirectTo(c, '/sign-in', 302)
    return page(c, 'Signed in', `<h1>Signed in</h1><p>You are signed in as <strong>${escapeHtml(active.user.email)}</strong>.</p>
      <form method="post" action="/sign-out">${hidden('csrf', csrf(c))}<button>Sign out</button></form>`)
  })

  routes.get('/sign-in', async (c) => {
    const next = safeContinue(c.req.query('continue'))
    if (await sessionFromCookie(db, clock, readCookie(c, deps.cookies, 'session'))) return redirectTo(c, next, 302)
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
    await limit(rules.address, email)
    await limit(rules.client, clientAddress(c, deps.trustProxy ?? false))
    if (values.password) return passwordSignIn(c, email, values.password, next)
    const user = await findUserByEmail(db, email)
    const started = await startRequest(db, clock, {
      purpose: 'sign_in', email, userId: user?.id ?? null, continueTo: next, claimCsrf: values.csrf!,
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
      kind: 'claim', value: started.claimSecret!,
      maxAgeSeconds: (LIFETIMES.linkMs * 2) / 1000,
    })
    return redirectTo(c, `/sign-in/wait?r=${started.request.id}`, 303)
  })

  routes.get('/sign-in/wait', (c) => {
    const id = c.req.query('r') ?? ''
    if (!isUuid(id)) return linkProblem(c, 'unknown')
    return page(c, 'Check your email', `<h1>Check your email</h1>
      <p>We sent you a sign-in link. Open it and approve; this window then continues by itself.</p>
      <p class="muted" id="state">Waiting for your approval…</p>
      <form method="post" action="/sign-in/claim" id="claim">${hidden('csrf', csrf(c))}${hidden('r', id)}
        <button>I approved, continue</button></form>`, {
      script: `(function(){var id=${scriptJson(id)};function poll(){fetch('/sign-in/claim/status?r='+encodeURIComponent(id),{credentials:'same-origin'})
.then(function(r){return r.json()}).then(function(s){if(s.status==='approved'){document.getElementById('claim').submit()}
else if(s.status==='pending'){setTimeout(poll,1500)}else{document.getElementById('state').textContent='This sign-in request has '+(s.status==='expired'?'expired':'ended')+'. Start again.'}})
.catch(function(){setTimeout(poll,3000)})}poll()})()`,
    })
  })

  routes.get('/sign-in/claim/status', async (c) => {
    const status = await claimState(db, clock, { id: c.req.query('r') ?? '', proof: claimProof(c) })
    return c.json({ status: status === 'unknown' ? 'expired' : status })
  })

  routes.post('/sign-in/claim', async (c) => {
    const values = await form(c)
    const request = await claimApproved(db, clock, { id: values.r ?? '', proof: claimProof(c) })
    if (!request) {
      return page(c, 'Not approved yet', `<h1>Not approved yet</h1><p>Open the link we emailed you and press Approve, then continue here.</p>
        <p><a href="/sign-in/wait?r=${escapeHtml(isUuid(values.r ?? '') ? values.r! : '')}">Back</a></p>`, { status: 409 })
    }
    const user = request.userId ? await findUserById(db, request.userId) : null
    if (!user) throw new ServiceError('FORBIDDEN', 'this sign-in request has no account')
    const { session, cookie } = await createSession(db, clock, { user, userAgent: c.req.header('user-agent') ?? null })
    writeCookie(c, deps.cookies, {
      kind: 'session', value: cookie, maxAgeSeconds: (session.expiresAt.getTime() - clock.now().getTime()) / 1000,
    })
    clearCookie(c, deps.cookies, 'claim')
    return redirectTo(c, safeContinue(request.continueTo), 303)
  })

  routes.get('/confirm', async (c) => {
    const id = c.req.query('r') ?? ''
    const secret = c.req.query('t') ?? ''
    if (!isUuid(id) || !isBrowserSecret(secret)) return linkProblem(c, 'unknown')
    const { state, request } = await inspectLink(db, clock, id, secret)
    if (state !== 'valid' || !request) return linkProblem(c, state)
    const preview = await bindPreview(db, id)
    writeCookie(c, deps.cookies, {
      kind: 'preview', value: preview, maxAgeSeconds: LIFETIMES.previewMs / 1000,
    })
    const what = request.purpose === 'confirm_email'
      ? 'Confirm your email address'
      : request.purpose === 'onboarding' ? 'Approve your coding agent' : 'Approve this sign-in'
    return page(c, what, `<h1>${what}</h1>
      <p>For <strong>${escapeHtml(request.email)}</strong>, requested at ${escapeHtml(request.createdAt.toISOString().slice(11, 16))} UTC.</p>
      <p class="muted">If you did not ask for this, close this window.</p>
      <form method="post" action="/confirm">${hidden('r', id)}${hidden('t', secret)}<button>Approve</button></form>`)
  })

  routes.post('/confirm', async (c) => {
    checkOrigin(c, deps.urls.auth)
    const body = await c.req.parseBody()
    const outcome = await approveLink(db, clock, {
      id: String(body.r ?? ''), linkSecret: String(body.t ?? ''), previewSecret: readCookie(c, deps.cookies, 'preview'),
    })
    clearCookie(c, deps.cookies, 'preview')
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
      await attachRequestUser(db, { requestId: request.id, userId: user.id })
    }
    // Opening the link proves the mailbox: an unconfirmed account is confirmed either way.
    // Whoever set it up keeps their password and sessions only if this is their browser.
    let notice = ''
    if (!user.emailConfirmedAt || user.pausedAt) {
      const cookie = readCookie(c, deps.cookies, 'session')
      const here = await sessionFromCookie(db, clock, cookie)
      const byRegistrant = here?.user.id === user.id
      const confirmed = await confirmEmail(db, clock, { userId: user.id, byRegistrant })
      notice = takenOverNotice(confirmed)
      // This browser's provisional session now lasts 30 days: so must its cookie, which was
      // set to end at the confirmation deadline.
      const kept = byRegistrant ? await sessionFromCookie(db, clock, cookie) : null
      if (kept) writeSessionCookie(c, cookie!, kept.session)
    }
    if (request.purpose === 'onboarding') {
      // Onboarding confirmation: this browser gets the normal session and the launch page.
      const launch = safeContinue(request.continueTo)
      const onboardingId = /^\/launch\/([0-9a-f-]{36})$/.exec(launch)?.[1]
      if (onboardingId) await confirmOnboarding(db, clock, onboardingId)
      await startSession(c, (await findUserById(db, user.id))!)
      return redirectTo(c, launch, 303)
    }
    if (request.purpose === 'confirm_email') {
      return page(c, 'Email confirmed', `<h1>Email confirmed</h1><p>Thank you. Your apps run normally. You may close this window.</p>${notice}`)
    }
    return page(c, 'Confirmed', `<h1>Confirmed</h1><p>You may close this window. The window where you started continues by itself.</p>${notice}`)
  })

  routes.get('/authorize', async (c) => {
    const slug = c.req.query('app') ?? ''
    const returnTo = c.req.query('return_to') ?? ''
    const app = isAppSlug(slug) ? await findAppBySlug(db, slug) : null
    if (!app) throw new ServiceError('NOT_FOUND', 'there is no such app to sign in to')
    // Only the app's own origin, or a custom domain mapped to this app, is a return target:
    // no open redirect, and never another app's domain.
    const custom = await customReturnOrigin(db, deps.urls, app, returnTo)
    const origin = custom ?? deps.urls.app(app.slug)
    const target = sameOriginUrl(returnTo, origin)
    const state = c.req.query('state') ?? ''
    // The app origin's state binds the sign-in to the browser that started it. A request
    // without one (an old or hand-made link) starts over on the app origin, which sets it.
    if (!isBrowserSecret(state)) return c.redirect(`${origin}/_service/auth/sign-in?return_to=${encodeURIComponent(target)}`, 302)
    const active = await sessionFromCookie(db, clock, readCookie(c, deps.cookies, 'session'))
    if (!active) {
      const self = `/authorize?app=${encodeURIComponent(slug)}&return_to=${encodeURIComponent(target)}&state=${state}`
      return redirectTo(c, `/sign-in?continue=${encodeURIComponent(self)}`, 302)
    }
    const code = await issueCode(db, clock, { sessionId: active.session.id, appId: app.id, returnTo: target })
    const callback = `${origin}/_service/auth/callback?code=${encodeURIComponent(code)}&state=${state}`
    if (custom === null) return c.redirect(callback, 302)
    // A custom domain is not among the form-action sources of the sign-in pages, and browsers
    // hold the redirects after a form post (password, claim) to form-action: this page ends
    // the chain and the browser goes on by itself (Refresh), or with the link.
    return page(c, 'Signing in', `<h1>Signing in</h1>
      <p><a href="${escapeHtml(callback)}">Continue to ${escapeHtml(new URL(origin).host)}</a></p>`,
    { headers: { refresh: `0;url=${callback}` } })
  })

  routes.get('/preferences', async (c) => {
    const active = await sessionFromCookie(db, clock, readCookie(c, deps.cookies, 'session'))
    if (!active) return redirectTo(c, `/sign-in?continue=${encodeURIComponent('/preferences')}`, 302)
    const confirmed = active.user.emailConfirmedAt !== null
    return page(c, 'Preferences', `<h1>Preferences</h1><p>Signed in as <strong>${escapeHtml(active.user.email)}</strong>.</p>
      ${confirmed ? '' : `<p class="error">Your email is not confirmed yet. Confirm it within 24 hours of registering, or your apps pause.</p>
        <form method="post" action="/verification/resend">${hidden('csrf', csrf(c))}<button>Send the confirmation email again</button></form>`}
      <h2>Password</h2>
      <form method="post" action="/preferences/password">${hidden('csrf', csrf(c))}
        <label for="password">New password</label>
        <input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="72" required>
        <label for="repeat">Repeat the new password</label>
        <input id="repeat" name="repeat" type="password" autocomplete="new-password" minlength="8" maxlength="72" required>
        <p class="muted">8 to 72 characters; type the same password twice. Email-link sign-in keeps working.</p>
        <button>Save password</button>
      </form>
      <h2>Connected applications</h2>
      <p><a href="/mcp/clients">The coding agents you approved to use the MCP server</a>, and revoking them.</p>`)
  })

  routes.post('/preferences/password', async (c) => {
    const values = await form(c)
    const active = await sessionFromCookie(db, clock, readCookie(c, deps.cookies, 'session'))
    if (!active) return redirectTo(c, '/sign-in?continue=%2Fpreferences', 303)
    await limit(rules.password, active.user.id)
    if ((values.password ?? '') !== (values.repeat ?? '')) {
      return page(c, 'Preferences', `<h1>Passwords differ</h1><p class="error">The two passwords are not the same; type the same password twice.</p>
        <p><a href="/preferences">Back</a></p>`, { status: 400 })
    }
    const verifier = await hashPassword(checkPassword(values.password))
    await storePasswordVerifier(db, { userId: active.user.id, verifier })
    return page(c, 'Password saved', '<h1>Password saved</h1><p>You can sign in with this password or with an email link.</p><p><a href="/preferences">Back</a></p>')
  })

  routes.get('/verification/resend', (c) => {
    const slug = c.req.query('app') ?? ''
    if (slug && !isAppSlug(slug)) throw new ServiceError('NOT_FOUND', 'there is no such app')
    return page(c, 'Resend confirmation', `<h1>Resend the confirmation email</h1>
      <p>The confirmation link goes to the email address of the app's owner.</p>
      <form method="post" action="/verification/resend">${hidden('csrf', csrf(c))}${hidden('app', slug)}<button>Send it again</button></form>`)
  })

  routes.post('/verification/resend', async (c) => {
    const values = await form(c)
    let user: User | null = null
    if (values.app) {
      if (!isAppSlug(values.app)) throw new ServiceError('NOT_FOUND', 'there is no such app')
      // The paused app's page offers this to whoever sees it; the mail goes to its owner only.
      const app = await findAppBySlug(db, values.app)
      user = app ? await findUserById(db, app.ownerId) : null
    } else {
      user = (await sessionFromCookie(db, clock, readCookie(c, deps.cookies, 'session')))?.user ?? null
    }
    if (user && !user.emailConfirmedAt) {
      await limit(rules.address, user.email)
      await sendConfirmation(user)
    }
    return page(c, 'Confirmation sent', '<h1>Check the owner\'s email</h1><p>If the account still needs confirming, a new confirmation link is on its way.</p>')
  })

  routes.route('/', companyPages({ db, clock, urls: deps.urls, cookies: deps.cookies, safeContinue }))

  routes.post('/sign-out', async (c) => {
    await form(c)
    const active = await sessionFromCookie(db, clock, readCookie(c, deps.cookies, 'session'))
    if (active) await revokeSession(db, clock, active.session.id, 'signed_out')
    clearCookie(c, deps.cookies, 'session')
    return page(c, 'Signed out', '<h1>Signed out</h1><p>This browser is signed out. Other browsers stay signed in.</p>')
  })

  return routes
}

/** What the page says when confirming took a password or sessions away from whoever set the account up. */
function takenOverNotice(outcome: ConfirmationOutcome): string {
  if (!outcome.passwordDiscarded && outcome.sessionsEnded === 0) return ''
  return `<p class="error">This address was registered before its mailbox was proven, from another browser.
    For your safety we ${outcome.passwordDiscarded ? 'removed the password set then and ' : ''}signed out every browser
    that was signed in with it. If that was you, sign in again${outcome.passwordDiscarded ? ' and set your password in Preferences' : ''}.</p>`
}

function linkProblem(c: Context, state: string): Response {
  const text = state === 'expired'
    ? 'This link has expired. Sign-in links work for 15 minutes, an onboarding confirmation link for 24 hours; ask for a new one.'
    : state === 'used'
      ? 'This link was already used. Each link works once; ask for a new one if you still need to sign in.'
      : 'This link is not valid. Ask for a new one.'
  return page(c, 'Link not valid', `<h1>Link not valid</h1><p>${text}</p><p><a href="/sign-in">Sign in</a></p>`, { status: 410 })
}
