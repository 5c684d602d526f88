/**
 * Integrations of an app (spec 2.6 to 2.8, 5.6): its consumer slots with their bindings
 * (`appIntegrationSlots`, as `GET …/integrations`), the published contracts the person may use
 * (`listCustomIntegrations`, as `GET …/custom-integrations`), and the connections the person
 * can see (`listConnections`, as `GET /v1/connections`), "Reconnect required" first and
 * prominent. Nothing secret is shown here: the OAuth callback URL and each connection's
 * webhook URL stay on the existing pages that show them only to the people who manage them
 * (the integration page, the connection page), which this page links to; connecting links to
 * its page too, since entering credentials is a person's action there. An `account: app` slot
 * is bound to one of the person's connections to its integration, or unbound, with a
 * CSRF-checked form calling `bindSlot` and `unbindSlot`, as `PUT/DELETE …/integrations/{slot}/binding`
 * do (Edit on the app); a `calling_user` slot is bound by each person on its connect page.
 */
import type { Hono } from 'hono'
import { escapeHtml, hidden } from '../lib/html.ts'
import { appForRole } from '../identity/index.ts'
import { listCustomIntegrations } from '../integrations/index.ts'
import { appIntegrationSlots, bindSlot, connectAndBindPath, unbindSlot } from '../integrations/bindings/index.ts'
import { connectPagePath, listConnections, managesConnection, type Connection } from '../integrations/connections/index.ts'
import { appOf, attempt, doneRedirect, formOf, pageCsrf, signedIn, type DashboardDeps, type DashboardEnv } from './context.ts'
import { badge, card, notice, pageHead, table, time, type Tone } from './format.ts'
import { sectionPath, shell } from './layout.ts'

const DONE: Record<string, string> = {
  'slot-bound': 'Bound. The app\'s calls through the slot use that connection from now on.',
  'slot-unbound': 'Unbound. The app\'s calls through the slot fail INTEGRATION_NOT_BOUND until it is bound again.',
}

const BINDING_STATE: Record<string, { text: string; tone: Tone }> = {
  active: { text: 'Bound', tone: 'ok' },
  suspended: { text: 'Suspended', tone: 'warn' },
  revoked: { text: 'Revoked', tone: 'muted' },
  reconnect_required: { text: 'Reconnect required', tone: 'bad' },
}

const MAX_LISTED = 100

export function registerIntegrations(routes: Hono<DashboardEnv>, deps: DashboardDeps): void {
  routes.get('/dashboard/apps/:app/integrations', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const { app, role } = await appOf(deps, { person, app: c.req.param('app') })
    const [slots, contracts, connections] = await Promise.all([
      appIntegrationSlots(deps, { user: person, appId: app.id }),
      attempt(() => listCustomIntegrations(deps.db, { user: person, appId: app.id, query: { limit: String(MAX_LISTED) } })),
      listConnections(deps.db, { actor: person, limit: MAX_LISTED, after: null }),
    ])

    const slotAction = (slot: string) => escapeHtml(`${sectionPath(app.slug, 'integrations')}/${encodeURIComponent(slot)}`)
    const slotRows = slots.map((slot, i) => {
      const state = slot.binding === null ? null : BINDING_STATE[slot.binding.state] ?? { text: slot.binding.state, tone: 'muted' as Tone }
      const reconnect = slot.binding?.state === 'reconnect_required'
        ? `<a class="button small" href="/connections/${escapeHtml(encodeURIComponent(slot.binding.connectionId))}">Reconnect</a>` : ''
      const action = slot.account === 'calling_user'
        ? (slot.binding === null ? `<a class="button small secondary" href="${escapeHtml(connectAndBindPath({ app: app.slug, slot: slot.slot }))}">Connect and bind</a>` : reconnect)
        : slot.binding !== null && slot.binding.state !== 'revoked'
          ? `${reconnect}<form class="inline" method="post" action="${slotAction(slot.slot)}/unbind" data-confirm="Unbind ${escapeHtml(slot.slot)}? The app's calls through it fail until it is bound again.">${hidden('csrf', csrf)}
              <button class="danger small">Unbind</button></form>`
          : bindForm({ action: `${slotAction(slot.slot)}/bind`, csrf, id: `bind-${i}`, slot: slot.slot, candidates: connections.filter((c) => bindable(c, slot.integration)) })
      return [
        `<code>${escapeHtml(slot.slot)}</code>`,
        `<code>${escapeHtml(slot.integration)}</code>`,
        slot.account === 'calling_user' ? 'Each person' : 'The app',
        escapeHtml(slot.capabilities.join(', ')),
        state === null ? badge('Not bound') : `${badge(state.text, state.tone)} <span class="muted small-text">${time(slot.binding!.createdAt)}</span>`,
        action,
      ]
    })

    const provided = contracts.ok ? contracts.value.integrations.filter((contract) => contract.provider.appId === app.id) : []
    const contractRows = contracts.ok ? contracts.value.integrations.map((contract) => [
      `<strong>${escapeHtml(contract.title)}</strong> <code>${escapeHtml(contract.name)}</code>${contract.description ? `<div class="muted small-text">${escapeHtml(contract.description)}</div>` : ''}`,
      `<code>${escapeHtml(contract.provider.appSlug)}</code>`,
      escapeHtml(contract.operations.map((operation) => operation.name).join(', ') || '—'),
      [contract.oauth ? badge('OAuth', 'info') : '', contract.sync ? badge('Sync') : '', contract.webhook ? badge('Webhook') : ''].join(' '),
      `<a class="button small secondary" href="${escapeHtml(connectPagePath({ app: contract.provider.appSlug, integration: contract.name }))}">Connect</a>`,
    ]) : []

    const sorted = [...connections].sort((a, b) => Number(b.status === 'reconnect_required') - Number(a.status === 'reconnect_required'))
    const reconnect = sorted.filter((connection) => connection.status === 'reconnect_required')
    const connectionRows = sorted.map((connection) => {
      const manages = managesConnection(person, connection)
      return [
        `<strong>${escapeHtml(connection.label)}</strong>`,
        `<code>${escapeHtml(connection.providerAppSlug)}</code> / <code>${escapeHtml(connection.integration)}</code>`,
        connection.kind === 'organisation' ? 'Organisation' : 'Personal',
        connection.status === 'reconnect_required'
          ? `${badge('Reconnect required', 'bad')}${connection.statusReason ? `<div class="small-text">${escapeHtml(connection.statusReason)}</div>` : ''}`
          : badge('Active', 'ok'),
        time(connection.createdAt.toISOString()),
        manages ? `<a class="button small ${connection.status === 'reconnect_required' ? '' : 'secondary'}" href="/connections/${escapeHtml(encodeURIComponent(connection.id))}">${connection.status === 'reconnect_required' ? 'Reconnect' : 'Manage'}</a>` : '<span class="muted small-text">managed by others</span>',
      ]
    })

    const done = DONE[c.req.query('done') ?? '']
    const reconnectNotice = reconnect.length === 0 ? '' : notice('bad', `<strong class="alert-big">Reconnect required: ${reconnect.map((connection) => escapeHtml(connection.label)).join(', ')}</strong>
      <p>The external system rejected ${reconnect.length === 1 ? 'this connection\'s' : 'these connections\''} credentials; calls through ${reconnect.length === 1 ? 'it' : 'them'} fail until someone who manages ${reconnect.length === 1 ? 'it' : 'them'} signs in again or enters new credentials.</p>`)

    return shell(c, {
      title: 'Integrations', person, csrf, app: { slug: app.slug, name: app.name, role, section: 'integrations' },
      body: `${pageHead({ title: 'Integrations', lede: 'What this app uses from other apps of your organisation, and the connections that carry the credentials.' })}
        ${done ? notice('ok', `<p>${escapeHtml(done)}</p>`) : ''}
        ${reconnectNotice}
        ${provided.length === 0 ? '' : notice('info', `<strong>This app publishes ${provided.map((contract) => `<code>${escapeHtml(contract.name)}</code>`).join(', ')}</strong>
          <p><a href="/apps/${escapeHtml(encodeURIComponent(app.slug))}/integration">Open its integration page</a> (the OAuth callback URL and audiences, for the people who administer it).</p>`)}
        ${card({ title: 'Slots and bindings', id: 'slots', body: table({ caption: 'Consumer slots of the active release', head: ['Slot', 'Integration', 'Account', 'Capabilities', 'Binding', ''], rows: slotRows, empty: 'The active release declares no integrations.' }) })}
        ${card({ title: 'Connections', id: 'connections', body: `${table({ caption: 'Connections you can see', head: ['Name', 'Provider', 'Belongs to', 'Status', 'Created', ''], rows: connectionRows, empty: 'You can see no connections.' })}
          <p class="muted small-text">Webhook URLs and credentials are on each connection's page, for the people who manage it.</p>` })}
        ${card({ title: 'Published integrations you may use', id: 'contracts', body: contracts.ok
          ? table({ caption: 'Published integration contracts', head: ['Integration', 'Provider', 'Operations', 'Features', ''], rows: contractRows, empty: 'Nothing is published in your organisation yet.' })
          : notice('warn', `<p>${escapeHtml(contracts.error.message)}</p>`) })}`,
    })
  })

  routes.post('/dashboard/apps/:app/integrations/:slot/bind', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const form = await formOf(c, deps)
    const app = await appForRole(deps.db, person, c.req.param('app'), 'edit')
    // As the API: a calling_user slot is refused (BINDING_NEEDS_PERSON), it is bound on its page.
    await bindSlot(deps, { actor: person, app, slot: c.req.param('slot'), connectionId: form.connection ?? '', via: 'api' })
    return doneRedirect(c, sectionPath(app.slug, 'integrations'), 'slot-bound')
  })

  routes.post('/dashboard/apps/:app/integrations/:slot/unbind', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    await formOf(c, deps)
    const app = await appForRole(deps.db, person, c.req.param('app'), 'edit')
    await unbindSlot(deps.db, { actor: person, app, slot: c.req.param('slot') })
    return doneRedirect(c, sectionPath(app.slug, 'integrations'), 'slot-unbound')
  })
}

/** A connection the slot could be bound to: to its integration, and not waiting for new credentials. */
function bindable(connection: Connection, integration: string): boolean {
  return connection.integration === integration && connection.status === 'active'
}

function bindForm(input: { action: string; csrf: string; id: string; slot: string; candidates: Connection[] }): string {
  if (input.candidates.length === 0) return '<span class="muted small-text">No connection of yours to bind: connect one below</span>'
  const options = input.candidates.map((connection) =>
    `<option value="${escapeHtml(connection.id)}">${escapeHtml(connection.label)} (${connection.kind === 'organisation' ? 'organisation' : 'personal'})</option>`).join('')
  return `<form class="row" method="post" action="${input.action}">${hidden('csrf', input.csrf)}
    <div class="field"><label for="${escapeHtml(input.id)}">Connection for ${escapeHtml(input.slot)}</label>
    <select id="${escapeHtml(input.id)}" name="connection" required>${options}</select></div>
    <button class="small">Bind</button></form>`
}
