/**
 * `{auth_url}/mcp/authorize`: where a person approves an MCP client (an agent) to act for
 * them, as an explicit action: the GET shows the client's name, the scope (the whole
 * account, or one app) and where it returns; only the CSRF-protected POST of a signed-in,
 * confirmed person issues a code (spec 5.2: an unconfirmed account cannot approve connected
 * clients). Deny goes back with `access_denied`. A client or redirect URI that does not match
 * a registration is shown as an error here and never followed.
 *
 * `{auth_url}/mcp/clients` lists the clients a person approved that still work (name, scope,
 * when approved, when it last got tokens) with a CSRF-protected Revoke for each: its tokens
 * stop working at once. Linked from Preferences.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { escapeHtml, hidden, page } from '../../lib/html.ts'
import { appForRole } from '../access/roles.ts'
import type { User } from '../accounts/users.ts'
import { confirmedPerson, pageErrorHandler } from '../pages/auth-pages.ts'
import type { CookieOptions } from '../pages/cookies.ts'
import { csrfToken, readForm } from '../pages/forms.ts'
import {
  approveAuthorization, listMcpApprovals, readAuthorizationRequest, redirectWith, revokeMcpApproval, type AuthorizationRequest, type McpApproval,
} from './mcp-oauth.ts'

/** The authorization request's parameters, carried from the GET into the form. */
const PARAMS = ['client_id', 'redirect_uri', 'response_type', 'state', 'code_challenge', 'code_challenge_method', 'scope', 'resource'] as const

export interface McpConsentDeps {
  db: Db
  clock: Clock
  logger: Logger
  urls: HostUrls
  cookies: CookieOptions
}

/** The MCP resource (`{base_url}/mcp`) and the issuer (`{base_url}`). */
function expected(urls: HostUrls) {
  return { resource: `${urls.base}/mcp`, issuer: urls.base }
}

/** Where the form may lead after its POST (CSP form-action covers the redirect): here and the client's redirect. */
function formAction(redirectUri: string): string {
  const url = new URL(redirectUri)
  const target = url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol
  return `'self' ${target}`
}

function problemPage(c: Context, message: string): Response {
  return page(c, 'Cannot connect this application', `<h1>Cannot connect this application</h1><p class="error">${escapeHtml(message)}</p>`, { status: 400 })
}

/** For a one-app scope: the app, which the person must hold Edit on. */
async function scopedApp(db: Db, user: User, request: AuthorizationRequest) {
  return request.appSlug === null ? null : appForRole(db, user, request.appSlug, 'edit')
}

function scopeText(request: AuthorizationRequest): string {
  return request.appSlug === null
    ? '<strong>your whole account</strong>: list, create and deploy your apps, set their secrets, run their cron, read their logs and production diagnostics, and ask for access tokens, as you'
    : `<strong>only the app ${escapeHtml(request.appSlug)}</strong>: validate and deploy it, run it in development sessions, set its secrets and read its logs, as you (no production diagnostics, no other app)`
}

const minute = (iso: string) => `<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`

function approvalItem(csrf: string, approval: McpApproval): string {
  const scope = approval.appSlug === null ? 'your whole account' : `only the app ${escapeHtml(approval.appSlug)}`
  return `<li><strong>${escapeHtml(approval.clientName)}</strong>: ${scope}<br>
    <span class="muted">Approved ${minute(approval.approvedAt)}; last got tokens ${minute(approval.lastIssuedAt)}.</span>
    <form method="post" action="/mcp/clients/revoke">${hidden('csrf', csrf)}${hidden('approval', approval.id)}
      <button aria-label="Revoke ${escapeHtml(approval.clientName)}">Revoke</button></form></li>`
}

export function mcpConsentPages(deps: McpConsentDeps) {
  const { db, clock } = deps
  const routes = new Hono()
  routes.onError(pageErrorHandler(deps.logger, 'Connect an application'))

  routes.get('/mcp/authorize', async (c) => {
    const params = c.req.query()
    const request = await readAuthorizationRequest(db, params, expected(deps.urls))
    if ('kind' in request) return request.kind === 'page' ? problemPage(c, request.message) : c.redirect(request.location, 302)
    const query = new URL(c.req.url).search
    const user = await confirmedPerson(c, deps, `/mcp/authorize${query}`)
    if (user instanceof Response) return user
    const app = await scopedApp(db, user, request)
    const fields = PARAMS.map((name) => (params[name] === undefined ? '' : hidden(name, params[name]!))).join('')
    const returnsTo = new URL(request.redirectUri)
    return page(c, 'Connect an application', `<h1>Allow ${escapeHtml(request.client.name)} to act for you?</h1>
      <p>The application <strong>${escapeHtml(request.client.name)}</strong> asks to use this platform's MCP server as
      <strong>${escapeHtml(user.email)}</strong>, with access to ${scopeText(request)}.</p>
      <p class="muted">Scope: <code>${escapeHtml(request.scope)}</code>${app === null ? '' : ` (app id ${escapeHtml(app.id)})`}.
      It returns to <code>${escapeHtml(returnsTo.protocol === 'http:' || returnsTo.protocol === 'https:' ? returnsTo.origin : returnsTo.protocol)}</code>.
      It never receives your browser session. Approve only if you started this from your coding agent just now.</p>
      <form method="post" action="/mcp/authorize">${hidden('csrf', csrfToken(c, deps.cookies))}${fields}
        <button name="decision" value="approve">Approve</button>
        <button name="decision" value="deny" class="secondary">Deny</button></form>`, { formAction: formAction(request.redirectUri) })
  })

  routes.post('/mcp/authorize', async (c) => {
    const form = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const request = await readAuthorizationRequest(db, form, expected(deps.urls))
    if ('kind' in request) return request.kind === 'page' ? problemPage(c, request.message) : c.redirect(request.location, 303)
    const user = await confirmedPerson(c, deps, '/mcp/authorize')
    if (user instanceof Response) return user
    if (form.decision !== 'approve') {
      return c.redirect(redirectWith(request.redirectUri, { error: 'access_denied', error_description: 'the person denied the request', state: request.state, iss: deps.urls.base }), 303)
    }
    const app = await scopedApp(db, user, request)
    return c.redirect(await approveAuthorization(db, clock, { request, user, appId: app?.id ?? null, issuer: deps.urls.base }), 303)
  })

  routes.get('/mcp/clients', async (c) => {
    const user = await confirmedPerson(c, deps, '/mcp/clients')
    if (user instanceof Response) return user
    const approvals = await listMcpApprovals(db, clock, user)
    // One token for every form: each csrfToken call without a cookie yet would mint another.
    const csrf = csrfToken(c, deps.cookies)
    const revoked = c.req.query('revoked') === '1' ? '<p role="status">Revoked: that application\'s tokens no longer work.</p>' : ''
    const list = approvals.length === 0
      ? '<p>No application can use the MCP server for you. Approving one (from your coding agent) lists it here.</p>'
      : `<ul>${approvals.map((approval) => approvalItem(csrf, approval)).join('')}</ul>`
    return page(c, 'Connected applications', `<h1>Connected applications</h1>${revoked}
      <p>Applications (coding agents) you approved to use this platform's MCP server as <strong>${escapeHtml(user.email)}</strong>.
      Revoking one ends its access at once; it must ask you again to come back.</p>${list}
      <p><a href="/preferences">Preferences</a></p>`)
  })

  routes.post('/mcp/clients/revoke', async (c) => {
    const form = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const user = await confirmedPerson(c, deps, '/mcp/clients')
    if (user instanceof Response) return user
    await revokeMcpApproval(db, clock, { user, approvalId: form.approval ?? '' })
    return c.redirect(`${deps.urls.auth}/mcp/clients?revoked=1`, 303)
  })
  return routes
}
