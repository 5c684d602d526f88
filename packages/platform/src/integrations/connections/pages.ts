/**
 * The pages where a person enters a connection's credential values (spec 2.8: never an
 * agent, never the owner API). They live on `{auth_url}`, beside the sign-in pages, because
 * that is where the person's central session and the CSRF cookie are (decisions.md,
 * "Connections"):
 * - `/connections/new?app=<provider app slug or id>&integration=<name>`: connect;
 * - `/connections/:id`: its managers' page: status, the last sync (when the provider syncs),
 *   non-secret values, the webhook URL, and
 *   the forms that replace the credentials (reactivating it) or remove it.
 *
 * Every form is CSRF-protected and Origin-checked; secret values are never put back into a
 * page, not even after a failed submission.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { ServiceError } from '../../lib/errors.ts'
import { escapeHtml, hidden, page } from '../../lib/html.ts'
import { sameOriginUrl } from '../../lib/redirects.ts'
import type { HostUrls } from '../../http/hosts.ts'
import {
  confirmedPerson, csrfToken, mayUseIntegration, pageErrorHandler, readForm, type CookieOptions, type User,
} from '../../identity/index.ts'
import {
  connectableKinds, createConnection, findPublishedIntegration, managedConnection, readWebhookToken, removeConnection, replaceCredentials,
  visibleCredentialValues, type Connection, type ConnectionKeyring, type ConnectionKind, type PublishedIntegration,
} from './connections.ts'
import type { OAuthPageHooks } from '../oauth/index.ts'
import { integrationPagePath } from '../provider-page/path.ts'
import { syncStatus, type SyncStatus } from '../sync/status.ts'

export interface ConnectionPageDeps {
  db: Db
  clock: Clock
  logger: Logger
  urls: HostUrls
  cookies: CookieOptions
  keyring: ConnectionKeyring
  /** Connecting integrations that declare OAuth 2.0 (integrations/oauth); without it their page answers 501. */
  oauth?: OAuthPageHooks
}

/** Form fields carrying credential values are named `value.<FIELD NAME>`. */
const VALUE_PREFIX = 'value.'

/** The secret webhook URL of a connection with this token. */
export function webhookUrl(urls: HostUrls, token: string): string {
  return `${urls.base}/v1/hooks/${token}`
}

/**
 * A connection's page on `{auth_url}`, where the people who manage it see its webhook URL and
 * replace its credentials: the `connectUrl` of INTEGRATION_RECONNECT_REQUIRED.
 */
export function connectionPageUrl(urls: Pick<HostUrls, 'auth'>, connectionId: string): string {
  return `${urls.auth}/connections/${connectionId}`
}

/** The page where a person connects to a published integration (for links and `connectUrl`). */
export function connectPagePath(input: { app: string; integration: string }): string {
  return `/connections/new?app=${encodeURIComponent(input.app)}&integration=${encodeURIComponent(input.integration)}`
}

export const STATUS_TEXT = { active: 'Active', reconnect_required: 'Reconnect required' } as const

const SYNC_OUTCOME_TEXT = { succeeded: 'succeeded', failed: 'failed', timed_out: 'timed out', unauthorized: 'rejected as unauthorized' } as const

function instantText(at: Date): string {
  return `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC`
}

/** "Last sync: ..." of a connection whose provider declares a sync (integrations/sync). */
function lastSyncText(sync: SyncStatus): string {
  const last = sync.running && sync.lastStartedAt
    ? `running since ${instantText(sync.lastStartedAt)}`
    : sync.lastOutcome && sync.lastFinishedAt
      ? `${instantText(sync.lastFinishedAt)}, ${SYNC_OUTCOME_TEXT[sync.lastOutcome]}${sync.lastError ? ` (${sync.lastError.code}: ${sync.lastError.message})` : ''}`
      : 'not yet'
  const next = sync.nextRunAt ? `next ${instantText(sync.nextRunAt)}` : 'stopped until the connection is active and bound into an app'
  return `${escapeHtml(last)} <span class="muted">(${escapeHtml(next)})</span>`
}

function enteredValues(values: Record<string, string>): Record<string, string> {
  const entered: Record<string, string> = {}
  for (const [key, value] of Object.entries(values)) if (key.startsWith(VALUE_PREFIX)) entered[key.slice(VALUE_PREFIX.length)] = value
  return entered
}

/** The credential inputs; only non-secret fields get a value back. */
function credentialInputs(integration: PublishedIntegration, kept: ReadonlyMap<string, string>): string {
  return integration.credentials.map((field) => {
    const id = `f-${field.name}`
    const value = field.secret ? '' : kept.get(field.name) ?? ''
    return `<label for="${escapeHtml(id)}">${escapeHtml(field.label)}${field.optional ? ' <span class="muted">(optional)</span>' : ''}</label>
      <input id="${escapeHtml(id)}" name="${escapeHtml(VALUE_PREFIX + field.name)}" type="${field.secret ? 'password' : 'text'}"
        autocomplete="off" spellcheck="false"${field.optional ? '' : ' required'}${value ? ` value="${escapeHtml(value)}"` : ''}>`
  }).join('\n')
}

function connectForm(c: Context, input: {
  deps: ConnectionPageDeps; integration: PublishedIntegration; kinds: readonly ConnectionKind[]; label?: string; kind?: string
  kept?: ReadonlyMap<string, string>; error?: string; status?: number; formAction?: string
}): Response {
  const { integration } = input
  const kind = input.kinds.length === 2
    ? `<label for="kind">Who it belongs to</label>
      <select id="kind" name="kind">
        <option value="personal"${input.kind === 'organisation' ? '' : ' selected'}>Only me (a personal connection)</option>
        <option value="organisation"${input.kind === 'organisation' ? ' selected' : ''}>The organisation (its administrators manage it)</option>
      </select>`
    : hidden('kind', input.kinds[0]!)
  return page(c, `Connect ${integration.title}`, `<h1>Connect ${escapeHtml(integration.title)}</h1>
    ${integration.description ? `<p>${escapeHtml(integration.description)}</p>` : ''}
    <p class="muted">Provided by the app <strong>${escapeHtml(integration.appSlug)}</strong> of your organisation${
      input.kinds.includes('personal') ? ` (<a id="integration-page" href="${escapeHtml(integrationPagePath(integration.appSlug))}">about this integration</a>)` : ''}.
    Values are stored encrypted and are never shown again; apps call the integration without seeing them.</p>
    ${input.error ? `<p class="error">${escapeHtml(input.error)}</p>` : ''}
    <form method="post" action="/connections/new">${hidden('csrf', csrfToken(c, input.deps.cookies))}${hidden('app', integration.appSlug)}${
      hidden('integration', integration.name)}
      <label for="label">Name of this connection</label>
      <input id="label" name="label" required maxlength="100" value="${escapeHtml(input.label ?? '')}">
      ${kind}
      ${credentialInputs(integration, input.kept ?? new Map())}
      <button>${integration.oauth ? 'Continue to sign in at the provider' : 'Connect'}</button>
    </form>`, { status: input.status ?? 200, ...(input.formAction ? { formAction: input.formAction } : {}) })
}

async function managePage(c: Context, input: {
  deps: ConnectionPageDeps; user: User; connection: Connection; notice?: string; error?: string; status?: number
}): Promise<Response> {
  const { deps, connection, user } = input
  const integration = await findPublishedIntegration(deps.db, { app: connection.providerAppId, integration: connection.integration, actor: user })
    .catch((error: unknown) => { if (error instanceof ServiceError) return null; throw error })
  const shown = integration
    ? await visibleCredentialValues(deps.db, { keyring: deps.keyring, connectionId: connection.id, fields: integration.credentials })
    : new Map<string, string>()
  const token = await readWebhookToken(deps.db, { keyring: deps.keyring, connectionId: connection.id })
  const sync = await syncStatus(deps.db, { connectionId: connection.id, now: deps.clock.now() })
  const csrf = csrfToken(c, deps.cookies)
  const visible = integration?.credentials.filter((field) => shown.has(field.name)) ?? []
  const integrationName = integration && await mayUseIntegration(deps.db, { user, providerApp: { id: integration.appId } })
    ? `<a id="integration-page" href="${escapeHtml(integrationPagePath(connection.providerAppSlug))}">${escapeHtml(connection.integration)}</a>`
    : escapeHtml(connection.integration)
  const replace = integration?.oauth
    ? `<h2>Reconnect</h2>
      <p class="muted">Sign in at the provider again${integration.credentials.length > 0 ? ' after entering every value again' : ''}; the connection becomes active with the new tokens.</p>
      <form method="post" action="/connections/${escapeHtml(connection.id)}/credentials">${hidden('csrf', csrf)}
        ${credentialInputs(integration, shown)}
        <button>Reconnect at the provider</button>
      </form>`
    : integration
    ? `<h2>Replace the credentials</h2>
      <p class="muted">Enter every value again; the connection becomes active with them.</p>
      <form method="post" action="/connections/${escapeHtml(connection.id)}/credentials">${hidden('csrf', csrf)}
        ${credentialInputs(integration, shown)}
        <button>Replace and reconnect</button>
      </form>`
    : '<p class="muted">The provider app no longer publishes this integration to you, so its credentials cannot be replaced.</p>'
  return page(c, connection.label, `<h1>${escapeHtml(connection.label)}</h1>
    ${input.notice ? `<p>${escapeHtml(input.notice)}</p>` : ''}
    ${input.error ? `<p class="error">${escapeHtml(input.error)}</p>` : ''}
    <p>Integration <strong>${integrationName}</strong> of the app <strong>${escapeHtml(connection.providerAppSlug)}</strong>,
    ${connection.kind === 'personal' ? 'a personal connection' : 'an organisation connection'}.</p>
    <p>Status: <strong id="status">${STATUS_TEXT[connection.status]}</strong>${
      connection.status === 'reconnect_required' && connection.statusReason ? ` <span class="muted">(${escapeHtml(connection.statusReason)})</span>` : ''}</p>
    ${sync ? `<p>Last sync: <span id="last-sync">${lastSyncText(sync)}</span></p>` : ''}
    ${visible.map((field) => `<p>${escapeHtml(field.label)}: <code>${escapeHtml(shown.get(field.name)!)}</code></p>`).join('\n')}
    <label for="webhook">Webhook URL</label>
    <input id="webhook" readonly value="${escapeHtml(webhookUrl(deps.urls, token))}" autocomplete="off" spellcheck="false">
    <p class="muted">Keep it secret: whoever has it can post to this connection.</p>
    ${replace}
    <h2>Remove</h2>
    <form method="post" action="/connections/${escapeHtml(connection.id)}/remove">${hidden('csrf', csrf)}
      <button>Remove this connection</button>
    </form>`, {
    status: input.status ?? 200,
    ...(integration?.oauth && deps.oauth ? { formAction: await deps.oauth.formAction(integration) } : {}),
  })
}

/** An integration that declares OAuth 2.0 is connected by signing in at the provider, which comes later. */
function oauthNotYet(c: Context, integration: PublishedIntegration): Response {
  return page(c, `Connect ${integration.title}`, `<h1>Connect ${escapeHtml(integration.title)}</h1>
    <p>This integration connects by signing in with the provider (OAuth 2.0), which this platform does not offer yet.</p>`,
  { status: 501 })
}


export function connectionPages(deps: ConnectionPageDeps) {
  const routes = new Hono()
  routes.onError(pageErrorHandler(deps.logger, 'Connection'))

  routes.get('/connections/new', async (c) => {
    const app = c.req.query('app') ?? ''
    const name = c.req.query('integration') ?? ''
    const user = await confirmedPerson(c, deps, connectPagePath({ app, integration: name }))
    if (user instanceof Response) return user
    const integration = await findPublishedIntegration(deps.db, { app, integration: name, actor: user })
    if (integration.oauth && !deps.oauth) return oauthNotYet(c, integration)
    const kinds = await connectableKinds(deps.db, { actor: user, integration })
    if (kinds.length === 0) throw new ServiceError('FORBIDDEN', 'you are not in the Use audience of this integration; ask its administrators')
    const formAction = integration.oauth && deps.oauth ? await deps.oauth.formAction(integration) : undefined
    return connectForm(c, { deps, integration, kinds, ...(formAction ? { formAction } : {}) })
  })

  routes.post('/connections/new', async (c) => {
    const values = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const user = await confirmedPerson(c, deps, '/')
    if (user instanceof Response) return user
    const integration = await findPublishedIntegration(deps.db, { app: values.app ?? '', integration: values.integration ?? '', actor: user })
    if (integration.oauth && !deps.oauth) return oauthNotYet(c, integration)
    const kind = values.kind === 'organisation' ? 'organisation' : values.kind === 'personal' ? 'personal' : null
    if (!kind) throw new ServiceError('VALIDATION_FAILED', 'choose who the connection belongs to', { details: { field: 'kind' } })
    const entered = enteredValues(values)
    try {
      if (integration.oauth && deps.oauth) {
        return await deps.oauth.start(c, { actor: user, integration, kind, label: values.label ?? '', values: entered })
      }
      const { connection } = await createConnection(deps, { actor: user, integration, kind, label: values.label ?? '', values: entered })
      deps.logger.info('connection created', { connectionId: connection.id, integration: integration.name, providerAppId: integration.appId, kind })
      return c.redirect(sameOriginUrl(`/connections/${connection.id}`, deps.urls.auth), 303)
    } catch (error) {
      if (!(error instanceof ServiceError) || error.code !== 'VALIDATION_FAILED') throw error
      const kept = new Map(integration.credentials.filter((field) => !field.secret).map((field) => [field.name, entered[field.name] ?? '']))
      const kinds = await connectableKinds(deps.db, { actor: user, integration })
      const formAction = integration.oauth && deps.oauth ? await deps.oauth.formAction(integration) : undefined
      return connectForm(c, {
        deps, integration, kinds, label: values.label ?? '', kind, kept, error: error.message, status: 400, ...(formAction ? { formAction } : {}),
      })
    }
  })

  routes.get('/connections/:id', async (c) => {
    const id = c.req.param('id')
    const user = await confirmedPerson(c, deps, `/connections/${encodeURIComponent(id)}`)
    if (user instanceof Response) return user
    const connection = await managedConnection(deps.db, { actor: user, id })
    return managePage(c, { deps, user, connection })
  })

  routes.post('/connections/:id/credentials', async (c) => {
    const values = await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const user = await confirmedPerson(c, deps, '/')
    if (user instanceof Response) return user
    const before = await managedConnection(deps.db, { actor: user, id: c.req.param('id') })
    const integration = await findPublishedIntegration(deps.db, { app: before.providerAppId, integration: before.integration, actor: user })
    try {
      if (integration.oauth && deps.oauth) {
        return await deps.oauth.start(c, { actor: user, integration, reconnect: before.id, values: enteredValues(values) })
      }
      const connection = await replaceCredentials(deps, { actor: user, id: before.id, integration, values: enteredValues(values) })
      deps.logger.info('connection credentials replaced', { connectionId: connection.id, previousStatus: before.status })
      return managePage(c, { deps, user, connection, notice: 'The credentials were replaced; the connection is active.' })
    } catch (error) {
      if (!(error instanceof ServiceError) || error.code !== 'VALIDATION_FAILED') throw error
      return managePage(c, { deps, user, connection: before, error: error.message, status: 400 })
    }
  })

  routes.post('/connections/:id/remove', async (c) => {
    await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const user = await confirmedPerson(c, deps, '/')
    if (user instanceof Response) return user
    const id = c.req.param('id')
    await removeConnection(deps.db, { actor: user, id })
    deps.logger.info('connection removed', { connectionId: id })
    return page(c, 'Connection removed', '<h1>Connection removed</h1><p>Its credentials were deleted. Apps bound to it can no longer use it.</p>')
  })

  return routes
}
