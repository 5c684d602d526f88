/**
 * The integration page of a provider app (spec 2.6, 4.1, 5.6), on `{auth_url}` beside the
 * connection pages, for the person's browser session: `/apps/:app/integration`.
 * - People who may administer the integration (mayChangeIntegrationAudience: its Administer
 *   audience and the app's administrators) see the contract, and for an OAuth 2.0 contract the exact redirect URI to register at the external system
 *   with the declared authorization URL, client id and scopes; they see and change its Use
 *   and Administer audiences with a CSRF-protected form (`POST …/integration/audience`).
 * - People who may use it (mayUseIntegration) see the contract and who may use it, read only.
 * - Both see the connections to it they manage or may bind (metadata only) and the links to
 *   each connection's page and to connect a new one.
 * - Anyone else gets the same 404 as for an app that publishes nothing.
 *
 * Never on the page: a credential value, a token, a webhook URL, the client secret (only its
 * name is in the manifest, and not even that is shown), the provider's Function names.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { ServiceError } from '../../lib/errors.ts'
import { escapeHtml, hidden, page } from '../../lib/html.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { findAppByIdOrSlug, type App } from '../../apps/apps.ts'
import type { IntegrationContract } from '../../manifest/index.ts'
import {
  confirmedPerson, csrfToken, findUserById, mayChangeIntegrationAudience, mayUseIntegration, pageErrorHandler,
  readForm, readIntegrationAudience, setIntegrationAudience, type CookieOptions, type IntegrationAudience, type User,
} from '../../identity/index.ts'
import { connectPagePath, managesConnection, toConnection, type Connection } from '../connections/index.ts'
import { STATUS_TEXT } from '../connections/pages.ts'
import { callbackUrl } from '../oauth/index.ts'
import { integrationPagePath } from './path.ts'
import { selectIntegrationConnections, selectReleaseIntegration } from './queries.ts'

export interface ProviderPageDeps {
  db: Db
  clock: Clock
  logger: Logger
  urls: HostUrls
  cookies: CookieOptions
}

/** The page lists at most this many connections (the newest). */
export const MAX_LISTED_CONNECTIONS = 50

type Standing = 'administer' | 'use'

interface ProviderIntegration {
  readonly app: App
  readonly contract: IntegrationContract
  readonly standing: Standing
}


/**
 * The integration the app's active release declares, with what `user` may do with it; the
 * same INTEGRATION_NOT_FOUND for an unknown or archived app, an app that declares none, and
 * a person who may neither use nor administer it (no existence oracle).
 */
async function providerIntegration(db: Db, input: { user: User; app: string }): Promise<ProviderIntegration> {
  const ref = input.app
  const notFound = new ServiceError('INTEGRATION_NOT_FOUND', `no integration you may see is published by the app "${ref.slice(0, 100)}"`)
  if (ref.length === 0 || ref.length > 100) throw notFound
  const app = await findAppByIdOrSlug(db, ref)
  if (!app || app.status === 'archived' || app.activeReleaseId === null) throw notFound
  const standing: Standing | null = await mayChangeIntegrationAudience(db, { user: input.user, app })
    ? 'administer'
    : await mayUseIntegration(db, { user: input.user, providerApp: app }) ? 'use' : null
  if (standing === null) throw notFound
  const block = await selectReleaseIntegration(db, app.activeReleaseId)
  if (block === null || typeof block !== 'object' || typeof (block as { name?: unknown }).name !== 'string') throw notFound
  return { app, contract: block as IntegrationContract, standing }
}

function list(items: readonly string[], empty: string): string {
  return items.length === 0 ? `<p class="muted">${empty}</p>` : `<ul>${items.map((item) => `<li>${item}</li>`).join('')}</ul>`
}

function contractSection(app: App, contract: IntegrationContract): string {
  const published = app.status === 'active' && app.organisationId !== null
    ? 'Published in your organisation.'
    : app.organisationId === null
    ? 'Not published: the app belongs to no organisation.'
    : `Not published while the app is ${escapeHtml(app.status)}.`
  return `<p class="muted">The integration <code>${escapeHtml(contract.name)}</code> of the app <strong>${escapeHtml(app.slug)}</strong>. ${published}</p>
    ${contract.description ? `<p id="description">${escapeHtml(contract.description)}</p>` : ''}
    <p>Connecting: ${contract.authorization
      ? '<strong id="connects">OAuth 2.0</strong> (a person signs in at the external system)'
      : '<strong id="connects">credentials</strong> a person enters'}.</p>
    <h2>Capabilities</h2>
    ${list((contract.capabilities ?? []).map((cap) => `<code>${escapeHtml(cap.name)}</code>: ${escapeHtml(cap.description)}`), 'None.')}
    <h2>Operations</h2>
    ${list((contract.operations ?? []).map((op) =>
      `<code>${escapeHtml(op.name)}</code> <span class="muted">(needs <code>${escapeHtml(op.capability)}</code>)</span>: ${escapeHtml(op.description)}`), 'None.')}
    <h2>Events</h2>
    ${list((contract.events ?? []).map((event) =>
      `<code>${escapeHtml(event.type)}</code> <span class="muted">(needs <code>${escapeHtml(event.capability)}</code>)</span>: ${escapeHtml(event.description)}`), 'None.')}`
}

/** What administrators register at the external system (the owner API's `integration-oauth`, as a page). */
function oauthSection(deps: ProviderPageDeps, contract: IntegrationContract): string {
  const authorization = contract.authorization
  if (!authorization) return ''
  const scopes = authorization.scopes ?? []
  return `<h2>OAuth 2.0</h2>
    <label for="callback-url">Redirect URI to register at the external system</label>
    <input id="callback-url" readonly value="${escapeHtml(callbackUrl(deps.urls.base))}" autocomplete="off" spellcheck="false">
    <p>Authorization URL: <code id="authorization-url">${escapeHtml(authorization.authorizationUrl)}</code></p>
    <p>Client id: <code id="client-id">${escapeHtml(authorization.clientId)}</code></p>
    <p>Scopes: ${scopes.length === 0 ? '<span class="muted">none</span>' : scopes.map((s) => `<code>${escapeHtml(s)}</code>`).join(' ')}</p>
    <p>PKCE (S256): ${authorization.pkce === false ? 'no' : 'yes'}</p>
    <p class="muted">The client secret stays a secret of the app, read by its exchange and refresh Functions; it is never shown here.</p>`
}

function emails(people: IntegrationAudience['usePeople']): string {
  return people.map((p) => p.email).join('\n')
}

function audienceForm(c: Context, input: {
  deps: ProviderPageDeps; app: App; audience: IntegrationAudience; ownerEmail: string | null; entered?: Record<string, string>
}): string {
  const { app, audience, entered } = input
  const scope = entered?.useScope ?? audience.useScope
  return `<h2>Who may use and administer it</h2>
    <p class="muted">Only confirmed members of the app's organisation can be named. The owner${
      input.ownerEmail ? `, <strong>${escapeHtml(input.ownerEmail)}</strong>,` : ''} always belongs to both audiences,
      and whoever may administer it may use it.</p>
    <form method="post" action="${escapeHtml(integrationPagePath(app.slug))}/audience">${hidden('csrf', csrfToken(c, input.deps.cookies))}
      <label for="useScope">Who may use it</label>
      <select id="useScope" name="useScope">
        <option value="organisation"${scope === 'people' ? '' : ' selected'}>The whole organisation</option>
        <option value="people"${scope === 'people' ? ' selected' : ''}>Only the people named below</option>
      </select>
      <label for="usePeople">People who may use it <span class="muted">(one email address a line; kept while the whole organisation may)</span></label>
      <textarea id="usePeople" name="usePeople" rows="4" cols="40" spellcheck="false">${escapeHtml(entered?.usePeople ?? emails(audience.usePeople))}</textarea>
      <label for="administerPeople">People who may administer it <span class="muted">(one email address a line)</span></label>
      <textarea id="administerPeople" name="administerPeople" rows="3" cols="40" spellcheck="false">${
        escapeHtml(entered?.administerPeople ?? emails(audience.administerPeople))}</textarea>
      <button>Save the audiences</button>
    </form>`
}

function audienceSummary(audience: IntegrationAudience): string {
  return `<h2>Who may use it</h2>
    <p id="use-scope">${audience.useScope === 'organisation' ? 'The whole organisation.' : 'Named people; you are one of them.'}
    <span class="muted">Its administrators decide.</span></p>`
}

function connectionsSection(input: { user: User; app: App; contract: IntegrationContract; connections: readonly Connection[] }): string {
  const { user, connections } = input
  const items = connections.map((connection) => {
    const label = managesConnection(user, connection)
      ? `<a href="/connections/${escapeHtml(connection.id)}">${escapeHtml(connection.label)}</a>`
      : escapeHtml(connection.label)
    return `${label} <span class="muted">(${connection.kind === 'personal' ? 'yours' : 'organisation'})</span>: <strong>${STATUS_TEXT[connection.status]}</strong>`
  })
  return `<h2>Connections</h2>
    <p class="muted">Your personal connections to it and the organisation's: the ones you may bind into apps you may edit.</p>
    ${list(items, 'None yet.')}
    <p><a id="connect" href="${escapeHtml(connectPagePath({ app: input.app.slug, integration: input.contract.name }))}">Connect an account</a></p>`
}

async function integrationPage(c: Context, input: {
  deps: ProviderPageDeps; user: User; target: ProviderIntegration; notice?: string; error?: string; status?: number
  entered?: Record<string, string>
}): Promise<Response> {
  const { deps, user, target } = input
  const { app, contract } = target
  const audience = await readIntegrationAudience(deps.db, app)
  const rows = await selectIntegrationConnections(deps.db, {
    userId: user.id, organisationId: user.organisationId, providerAppId: app.id, integration: contract.name, limit: MAX_LISTED_CONNECTIONS,
  })
  const administer = target.standing === 'administer'
  const owner = administer ? await findUserById(deps.db, app.ownerId) : null
  return page(c, `${contract.title} integration`, `<h1>${escapeHtml(contract.title)}</h1>
    ${input.notice ? `<p id="notice">${escapeHtml(input.notice)}</p>` : ''}
    ${input.error ? `<p class="error">${escapeHtml(input.error)}</p>` : ''}
    ${contractSection(app, contract)}
    ${administer ? oauthSection(deps, contract) : ''}
    ${connectionsSection({ user, app, contract, connections: rows.map(toConnection) })}
    ${administer
      ? audienceForm(c, { deps, app, audience, ownerEmail: owner?.email ?? null, ...(input.entered ? { entered: input.entered } : {}) })
      : audienceSummary(audience)}`, { status: input.status ?? 200 })
}

/** A form's list of people: email addresses (or user ids) separated by lines, commas or spaces. */
function people(value: string | undefined): string[] {
  return (value ?? '').split(/[\s,;]+/).filter((entry) => entry.length > 0)
}

export function providerPages(deps: ProviderPageDeps) {
  const routes = new Hono()
  routes.onError(pageErrorHandler(deps.logger, 'Integration'))

  routes.get('/apps/:app/integration', async (c) => {
    const ref = c.req.param('app')
    const user = await confirmedPerson(c, deps, integrationPagePath(ref))
    if (user instanceof Response) return user
    const target = await providerIntegration(deps.db, { user, app: ref })
    return integrationPage(c, { deps, user, target })
  })

  routes.post('/apps/:app/integration/audience', async (c) => {
    const values = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const user = await confirmedPerson(c, deps, '/')
    if (user instanceof Response) return user
    const target = await providerIntegration(deps.db, { user, app: c.req.param('app') })
    if (target.standing !== 'administer') {
      throw new ServiceError('INTEGRATION_NOT_FOUND', `no integration you may see is published by the app "${target.app.slug}"`)
    }
    const body = { useScope: values.useScope ?? '', usePeople: people(values.usePeople), administerPeople: people(values.administerPeople) }
    try {
      await deps.db.transaction((tx) => setIntegrationAudience(tx, { app: target.app, by: user, body }))
    } catch (error) {
      if (!(error instanceof ServiceError) || error.status >= 500) throw error
      const entered = { useScope: body.useScope, usePeople: values.usePeople ?? '', administerPeople: values.administerPeople ?? '' }
      return integrationPage(c, { deps, user, target, error: error.message, status: error.status, entered })
    }
    deps.logger.info('integration audience changed', { appId: target.app.id, by: user.id, useScope: body.useScope })
    if (!await mayChangeIntegrationAudience(deps.db, { user, app: target.app })) {
      return page(c, 'Audiences saved', `<h1>Audiences saved</h1>
        <p>You are no longer in the Administer audience of this integration.</p>`)
    }
    return integrationPage(c, { deps, user, target, notice: 'The audiences were saved.' })
  })

  return routes
}
