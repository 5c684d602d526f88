/**
 * Auth-host pages for companies and onboarding: company setup, accepting an invitation, and
 * the owner launch page an onboarding confirmation lands on (non-secret: it shows status and
 * waits for company setup when needed). Mounted inside the central sign-in routes.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { APP_CHANGED } from '../../apps/apps.ts'
import { dropLocal } from '../../db/notified-cache.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { acceptInvitation, findInvitation, setUpCompany } from './companies.ts'
import { readCookie, type CookieOptions } from '../pages/cookies.ts'
import { csrfToken, readForm } from '../pages/forms.ts'
import { signInFirst } from '../pages/auth-pages.ts'
import { findOnboarding, settleOnboarding } from './onboarding.ts'
import { escapeHtml, hidden, page } from '../../lib/html.ts'
import { sessionFromCookie, type ActiveSession } from '../sessions/sessions.ts'

export function companyPages(deps: { db: Db; clock: Clock; urls: HostUrls; cookies: CookieOptions; safeContinue: (v: string | undefined) => string }) {
  const { db, clock } = deps
  const routes = new Hono()

  async function signedIn(c: Context): Promise<ActiveSession | Response> {
    const active = await sessionFromCookie(db, clock, readCookie(c, deps.cookies, 'session'))
    if (active) return active
    const here = new URL(c.req.url)
    return signInFirst(c, { auth: deps.urls.auth, path: here.pathname + here.search })
  }

  routes.get('/company', async (c) => {
    const active = await signedIn(c)
    if (active instanceof Response) return active
    if (active.user.organisationId) {
      return page(c, 'Your company', '<h1>Your company is set up</h1><p>Your account belongs to a company already. An account belongs to exactly one.</p>')
    }
    return page(c, 'Set up your company', `<h1>Set up your company</h1>
      <p>Your apps, people and integrations live in your company. You become its administrator.
      Joining an existing company instead? Ask its administrator for an invitation.</p>
      <form method="post" action="/company">${hidden('csrf', csrfToken(c, deps.cookies))}${hidden('continue', deps.safeContinue(c.req.query('continue')))}
        <label for="name">Company name</label><input id="name" name="name" required maxlength="120">
        <button>Create company</button></form>`)
  })

  routes.post('/company', async (c) => {
    const values = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const active = await signedIn(c)
    if (active instanceof Response) return active
    const company = await db.transaction(async (tx) => {
      const created = await setUpCompany(tx, active.user, values.name ?? '')
      await settleOnboarding(tx, active.user.id)
      return created
    })
    dropLocal(db, APP_CHANGED)
    const next = deps.safeContinue(values.continue)
    if (next !== '/') return c.redirect(deps.urls.auth + next, 303)
    return page(c, 'Company created', `<h1>${escapeHtml(company.name)} is set up</h1><p>You are its administrator.</p>`)
  })

  routes.get('/invitations/:id', async (c) => {
    const active = await signedIn(c)
    if (active instanceof Response) return active
    const invitation = await findInvitation(db, clock, c.req.param('id'), c.req.query('k') ?? '')
    if (!invitation || invitation.acceptedAt) {
      return page(c, 'Invitation', '<h1>Invitation not valid</h1><p>It expired, was used, or the link is wrong. Ask for a new one.</p>', { status: 410 })
    }
    return page(c, 'Invitation', `<h1>Join ${escapeHtml(invitation.organisationName)}</h1>
      <p>The invitation is for <strong>${escapeHtml(invitation.email)}</strong>; you are signed in as <strong>${escapeHtml(active.user.email)}</strong>.</p>
      <form method="post" action="/invitations/${escapeHtml(invitation.id)}">${hidden('csrf', csrfToken(c, deps.cookies))}${hidden('k', c.req.query('k') ?? '')}
        <button>Join</button></form>`)
  })

  routes.post('/invitations/:id', async (c) => {
    const values = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const active = await signedIn(c)
    if (active instanceof Response) return active
    const invitation = await findInvitation(db, clock, c.req.param('id'), values.k ?? '')
    if (!invitation) return page(c, 'Invitation', '<h1>Invitation not valid</h1>', { status: 410 })
    await db.transaction(async (tx) => {
      await acceptInvitation(tx, clock, invitation, active.user)
      await settleOnboarding(tx, active.user.id)
    })
    dropLocal(db, APP_CHANGED)
    return page(c, 'Joined', `<h1>You joined ${escapeHtml(invitation.organisationName)}</h1>`)
  })

  routes.get('/launch/:id', async (c) => {
    const active = await signedIn(c)
    if (active instanceof Response) return active
    const request = await findOnboarding(db, c.req.param('id'))
    if (!request || request.userId !== active.user.id) {
      return page(c, 'Project', '<h1>No such project request</h1>', { status: 404 })
    }
    const name = escapeHtml(request.projectName)
    if (request.status === 'ready') {
      return page(c, name, `<h1>${name}</h1><p>Everything is set. Your coding agent continues now and opens the project here once it is deployed.</p>`)
    }
    if (request.status === 'organisation_setup_required') {
      const setup = `/company?continue=${encodeURIComponent(`/launch/${request.id}`)}`
      return page(c, name, `<h1>${name}</h1><p>One step left: set up your company or accept an invitation to one.</p>
        <p><a href="${escapeHtml(setup)}" target="_blank" rel="noopener">Set up your company</a> (opens in a new tab). This page continues by itself.</p>`,
        { script: 'setTimeout(function(){location.reload()},3000)' })
    }
    return page(c, name, `<h1>${name}</h1><p>Waiting for you to confirm the email we sent.</p>`,
      { script: 'setTimeout(function(){location.reload()},3000)' })
  })

  return routes
}
