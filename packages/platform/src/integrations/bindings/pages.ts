/**
 * The connect-and-bind page on `{auth_url}` (spec 5.6, 7.2 `INTEGRATION_CONNECTION_REQUIRED`'s
 * `details.connectUrl`): `/integrations/connect?app=<consumer app>&slot=<calling_user slot>`.
 * The signed-in person binds the slot for themself in one step: to one of their own
 * personal connections of the slot's integration, or to a new one whose credentials they
 * enter here (the same fields as the connections page), or, for an OAuth 2.0 integration, a
 * new one made by signing in at the provider, whose callback binds it. Never an agent: a
 * person's browser session, a CSRF token and the auth origin are required.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { ServiceError } from '../../lib/errors.ts'
import { escapeHtml, hidden, page } from '../../lib/html.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { findAppByIdOrSlug, type App } from '../../apps/apps.ts'
import {
  confirmedPerson, csrfToken, pageErrorHandler, readForm, type CookieOptions, type User,
} from '../../identity/index.ts'
import { findPublishedIntegration, type ConnectionKeyring, type PublishedIntegration } from '../connections/index.ts'
// The connections feature's page-only operation (creating a connection from entered values).
import { createConnection } from '../connections/connections.ts'
import { bindSlot, publishedContract, slotsOf } from './bindings.ts'
import { selectOwnConnections } from './queries.ts'
import type { IntegrationSlot } from '../../manifest/index.ts'
import type { OAuthPageHooks } from '../oauth/index.ts'

export interface BindPageDeps {
  db: Db
  clock: Clock
  logger: Logger
  urls: HostUrls
  cookies: CookieOptions
  keyring: ConnectionKeyring
  /** Starts an OAuth 2.0 flow whose callback binds the new connection (integrations/oauth `pageHooks`). */
  oauth?: OAuthPageHooks
}

const VALUE_PREFIX = 'value.'

/** The connect-and-bind page of a `calling_user` slot (for `connectUrl`). */
export function connectAndBindPath(input: { app: string; slot: string }): string {
  return `/integrations/connect?app=${encodeURIComponent(input.app)}&slot=${encodeURIComponent(input.slot)}`
}


/** The consumer app, its calling_user slot and the integration it uses, as the person may see them. */
async function target(deps: BindPageDeps, input: { user: User; app: string; slot: string }): Promise<{ app: App; slot: IntegrationSlot; integration: PublishedIntegration }> {
  const app = input.app.length > 0 && input.app.length <= 100 ? await findAppByIdOrSlug(deps.db, input.app) : null
  if (!app || app.organisationId === null || app.organisationId !== input.user.organisationId) {
    throw new ServiceError('APP_NOT_FOUND', `no app "${input.app.slice(0, 100)}" in your organisation`)
  }
  const slots = await slotsOf(deps.db, app)
  const slot = Object.hasOwn(slots, input.slot) ? slots[input.slot] : undefined
  if (!slot || slot.account !== 'calling_user') {
    throw new ServiceError('SLOT_NOT_FOUND', `the app "${app.slug}" has no slot "${input.slot.slice(0, 64)}" that each person connects`)
  }
  const contract = await findPublishedContractApp(deps.db, app, slot.integration)
  const integration = await findPublishedIntegration(deps.db, { app: contract, integration: slot.integration, actor: input.user })
  return { app, slot, integration }
}

async function findPublishedContractApp(db: Db, app: App, name: string): Promise<string> {
  const published = await publishedContract(db, { organisationId: app.organisationId, name })
  if (!published) throw new ServiceError('INTEGRATION_NOT_FOUND', `no active app of your organisation publishes the integration "${name}"`)
  return published.providerAppId
}

async function bindPage(c: Context, input: {
  deps: BindPageDeps; user: User; app: App; slotName: string; integration: PublishedIntegration; error?: string; status?: number; label?: string
}): Promise<Response> {
  const { deps, integration } = input
  const csrf = csrfToken(c, deps.cookies)
  const own = await selectOwnConnections(deps.db, { userId: input.user.id, providerAppId: integration.appId, integration: integration.name })
  const common = `${hidden('csrf', csrf)}${hidden('app', input.app.slug)}${hidden('slot', input.slotName)}`
  const existing = own.length === 0 ? '' : `<h2>Use a connection you already have</h2>
    <form method="post" action="/integrations/connect">${common}
      <label for="connectionId">Connection</label>
      <select id="connectionId" name="connectionId">${own.map((row) =>
        `<option value="${escapeHtml(row.id)}">${escapeHtml(row.label)}${row.status === 'reconnect_required' ? ' (reconnect required)' : ''}</option>`).join('')}</select>
      <button>Use it</button>
    </form>`
  // With OAuth 2.0 the button leads to the provider's sign-in, and the callback binds the new connection here (oauth/pages.ts).
  const oauth = integration.oauth && deps.oauth !== undefined
  const fresh = integration.oauth && !oauth
    ? '<p class="muted">This integration connects by signing in with the provider, which this platform does not offer here.</p>'
    : `<h2>${own.length === 0 ? 'Connect your account' : 'Or connect another account'}</h2>
    <form method="post" action="/integrations/connect">${common}
      <label for="label">Name of this connection</label>
      <input id="label" name="label" required maxlength="100" value="${escapeHtml(input.label ?? '')}">
      ${integration.credentials.map((field) => `<label for="f-${escapeHtml(field.name)}">${escapeHtml(field.label)}${field.optional ? ' <span class="muted">(optional)</span>' : ''}</label>
      <input id="f-${escapeHtml(field.name)}" name="${escapeHtml(VALUE_PREFIX + field.name)}" type="${field.secret ? 'password' : 'text'}" autocomplete="off" spellcheck="false"${field.optional ? '' : ' required'}>`).join('\n')}
      <button>${oauth ? `Sign in with ${escapeHtml(integration.title)} and use it in` : 'Connect and use in'} ${escapeHtml(input.app.slug)}</button>
    </form>`
  return page(c, `Connect ${integration.title}`, `<h1>Connect ${escapeHtml(integration.title)} for ${escapeHtml(input.app.slug)}</h1>
    <p>The app <strong>${escapeHtml(input.app.slug)}</strong> uses <strong>${escapeHtml(integration.title)}</strong> with your own account.
    Values are stored encrypted and never shown again; the app calls the integration without seeing them.</p>
    ${input.error ? `<p class="error">${escapeHtml(input.error)}</p>` : ''}
    ${existing}
    ${fresh}`, { status: input.status ?? 200, ...(oauth ? { formAction: await deps.oauth!.formAction(integration) } : {}) })
}

export function bindPages(deps: BindPageDeps) {
  const routes = new Hono()
  routes.onError(pageErrorHandler(deps.logger, 'Connect'))

  routes.get('/integrations/connect', async (c) => {
    const appName = c.req.query('app') ?? ''
    const slotName = c.req.query('slot') ?? ''
    const user = await confirmedPerson(c, deps, connectAndBindPath({ app: appName, slot: slotName }))
    if (user instanceof Response) return user
    const { app, integration } = await target(deps, { user, app: appName, slot: slotName })
    return bindPage(c, { deps, user, app, slotName, integration })
  })

  routes.post('/integrations/connect', async (c) => {
    const values = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const user = await confirmedPerson(c, deps, '/')
    if (user instanceof Response) return user
    const slotName = values.slot ?? ''
    const { app, integration } = await target(deps, { user, app: values.app ?? '', slot: slotName })
    let connectionId = values.connectionId ?? ''
    if (connectionId === '') {
      const entered: Record<string, string> = {}
      for (const [key, value] of Object.entries(values)) if (key.startsWith(VALUE_PREFIX)) entered[key.slice(VALUE_PREFIX.length)] = value
      try {
        if (integration.oauth && deps.oauth) {
          // Signing in at the provider; its callback makes the connection and binds it (bindAfterConnect).
          return await deps.oauth.start(c, {
            actor: user, integration, kind: 'personal', label: values.label ?? '', values: entered, bind: { appId: app.id, slot: slotName },
          })
        }
        const { connection } = await createConnection(deps, { actor: user, integration, kind: 'personal', label: values.label ?? '', values: entered })
        connectionId = connection.id
        deps.logger.info('connection created', { connectionId, integration: integration.name, providerAppId: integration.appId, kind: 'personal' })
      } catch (error) {
        if (!(error instanceof ServiceError) || error.code !== 'VALIDATION_FAILED') throw error
        return bindPage(c, { deps, user, app, slotName, integration, error: error.message, status: 400, label: values.label ?? '' })
      }
    }
    const binding = await bindSlot(deps, { actor: user, app, slot: slotName, connectionId, via: 'page' })
    deps.logger.info('integration slot bound', { appId: app.id, slot: slotName, bindingId: binding.id, connectionId })
    return page(c, 'Connected', `<h1>Connected</h1>
      <p id="bound">The app <strong>${escapeHtml(app.slug)}</strong> now uses <strong>${escapeHtml(integration.title)}</strong> with your account.
      Go back to the app and try again.</p>`)
  })
  return routes
}
