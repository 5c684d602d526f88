/**
 * `service integrations list|bind|unbind|catalog|deliveries <app> ...` and `service
 * connections list`: the app integration API from the command line, so a builder binds an
 * `account: app` slot to a connection without curl, reads the contracts it may use (what
 * `list_custom_integrations` shows an agent) and the app's event deliveries (what
 * `list_integration_event_deliveries` shows). Connections are shown as metadata only (the API
 * never returns a credential value); deliveries never carry their payload. Everything needs
 * Edit on the app; connections are created in the browser.
 */
import type { Client } from '../client.ts'
import { usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
import { terminalSafe } from './logs.ts'

interface SlotView {
  slot: string
  integration: string
  account: string
  capabilities: string[]
  binding: null | { connectionId: string; capabilities: string[]; state: string }
}

interface ConnectionView {
  id: string
  integration: string
  providerApp: { id: string; slug: string }
  kind: string
  status: string
  label: string
}

interface ContractView {
  name: string
  title: string
  provider: { appId: string; appSlug: string }
  capabilities: { name: string; description: string }[]
  operations: { name: string; capability: string; description: string }[]
  events: { type: string; capability: string; description: string }[]
}

interface DeliveryView {
  id: string
  eventId: string
  type: string
  slot: string
  integration: string
  state: string
  attempts: number
  lastError: { code: string; message: string; status?: number } | null
  createdAt: string
  nextAttemptAt: string | null
}

const slotPath = (app: string, slot: string) => `/v1/apps/${encodeURIComponent(app)}/integrations/${encodeURIComponent(slot)}/binding`

const INTEGRATIONS_USAGE = 'integrations'

function usage(_io: Io, command: string, message = `service ${command}: see the usage`): never {
  throw usageError(message, usageOf(command))
}

export async function integrationsCommand(
  io: Io, client: Client,
  options: {
    action: string | undefined; app: string | undefined; rest: string[]; connection: string | undefined
    state?: string | undefined; limit?: string | undefined; cursor?: string | undefined
  },
): Promise<number> {
  const { action, app, rest, connection } = options
  if (!app) return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind, unbind, catalog or deliveries, and the app')
  if (action !== 'deliveries' && (options.state ?? options.limit ?? options.cursor) !== undefined) {
    return usage(io, INTEGRATIONS_USAGE, 'service integrations: --state, --limit and --cursor go with deliveries')
  }
  switch (action) {
    case 'catalog': {
      if (rest.length > 0 || connection !== undefined) return usage(io, INTEGRATIONS_USAGE, 'service integrations catalog: the app only')
      return catalog(io, client, app)
    }
    case 'deliveries': {
      if (rest.length > 0 || connection !== undefined) return usage(io, INTEGRATIONS_USAGE, 'service integrations deliveries: the app, then --state, --limit or --cursor')
      return deliveries(io, client, { app, state: options.state, limit: options.limit, cursor: options.cursor })
    }
    case 'list': {
      if (rest.length > 0 || connection !== undefined) return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind, unbind, catalog or deliveries, and the app')
      const { slots } = await client.call<{ slots: SlotView[] }>('GET', `/v1/apps/${encodeURIComponent(app)}/integrations`)
      printResult(io, { slots }, () => {
        if (slots.length === 0) io.out(`${app} declares no integration slots`)
        for (const s of slots) {
          const state = s.binding ? s.binding.state : 'unbound'
          io.out(`${s.slot.padEnd(16)} ${s.integration.padEnd(16)} ${s.account.padEnd(13)} ${state.padEnd(18)} ${s.binding?.connectionId ?? '-'}`)
        }
      })
      return 0
    }
    case 'bind': {
      const [slot] = rest
      if (!slot || rest.length > 1) return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind, unbind, catalog or deliveries, and the app')
      if (!connection) usage(io, INTEGRATIONS_USAGE, 'service integrations bind: name the connection with --connection <connectionId> (service connections list shows them)')
      const { binding } = await client.call<{ binding: { connectionId: string; capabilities: string[] } }>(
        'PUT', slotPath(app, slot), { connectionId: connection })
      printResult(io, { binding }, () => io.out(`bound ${slot} of ${app} to connection ${binding.connectionId} (${binding.capabilities.join(', ')})`))
      return 0
    }
    case 'unbind': {
      const [slot] = rest
      if (!slot || rest.length > 1 || connection !== undefined) return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind, unbind, catalog or deliveries, and the app')
      await client.call('DELETE', slotPath(app, slot))
      printResult(io, { unbound: slot }, () => io.out(`${slot} of ${app} is unbound`))
      return 0
    }
    default:
      return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind, unbind, catalog or deliveries, and the app')
  }
}

/** Every published contract the caller may use from the app, every page, by name. */
async function catalog(io: Io, client: Client, app: string): Promise<number> {
  const integrations: ContractView[] = []
  let cursor: string | null = null
  do {
    const query: string = cursor ? `?limit=100&nextCursor=${encodeURIComponent(cursor)}` : '?limit=100'
    const page: { integrations: ContractView[]; nextCursor: string | null } = await client.call('GET', `/v1/apps/${encodeURIComponent(app)}/custom-integrations${query}`)
    integrations.push(...page.integrations)
    cursor = page.nextCursor
  } while (cursor)
  printResult(io, { integrations }, () => {
    if (integrations.length === 0) io.out(`no integration of ${app}'s organisation is published to you`)
    for (const i of integrations) {
      io.out(`${i.name.padEnd(16)} ${i.provider.appSlug.padEnd(16)} ${i.title}`)
      for (const o of i.operations) io.out(`  operation ${o.name.padEnd(24)} ${o.capability.padEnd(20)} ${o.description}`)
      for (const e of i.events) io.out(`  event     ${e.type.padEnd(24)} ${e.capability.padEnd(20)} ${e.description}`)
    }
  })
  return 0
}

/** One page of the app's event deliveries, newest first; the next page's command when there is one. */
async function deliveries(io: Io, client: Client, options: { app: string; state: string | undefined; limit: string | undefined; cursor: string | undefined }): Promise<number> {
  const params = new URLSearchParams()
  if (options.state !== undefined) params.set('state', options.state)
  if (options.limit !== undefined) params.set('limit', options.limit)
  if (options.cursor !== undefined) params.set('nextCursor', options.cursor)
  const query = params.size > 0 ? `?${params}` : ''
  const page = await client.call<{ deliveries: DeliveryView[]; nextCursor: string | null }>(
    'GET', `/v1/apps/${encodeURIComponent(options.app)}/integration-events${query}`)
  printResult(io, page, () => {
    if (page.deliveries.length === 0) io.out(`no event deliveries to ${options.app}${options.state ? ` in state ${options.state}` : ''}`)
    for (const d of page.deliveries) {
      // A handler wrote the last error's message: no terminal controls reach the screen.
      const error = d.lastError === null ? '' : terminalSafe(` ${d.lastError.code}: ${d.lastError.message}`)
      const next = d.nextAttemptAt === null ? '' : ` next ${d.nextAttemptAt}`
      io.out(`${d.createdAt}  ${d.type.padEnd(24)} ${d.slot.padEnd(16)} ${d.state.padEnd(9)} ${String(d.attempts).padStart(2)}${next}${error}`)
    }
    if (page.nextCursor !== null) {
      io.out(`more: service integrations deliveries ${options.app}${options.state ? ` --state ${options.state}` : ''} --cursor ${page.nextCursor}`)
    }
  })
  return 0
}

/** Lists the caller's personal and organisation connections, every page, newest first. */
export async function connectionsListCommand(io: Io, client: Client): Promise<number> {
  let cursor: string | null = null
  const connections: ConnectionView[] = []
  do {
    const query: string = cursor ? `?limit=100&nextCursor=${encodeURIComponent(cursor)}` : '?limit=100'
    const page: { connections: ConnectionView[]; nextCursor: string | null } = await client.call('GET', `/v1/connections${query}`)
    connections.push(...page.connections)
    cursor = page.nextCursor
  } while (cursor)
  printResult(io, { connections }, () => {
    for (const c of connections) {
      io.out(`${c.id}  ${c.integration.padEnd(16)} ${c.providerApp.slug.padEnd(16)} ${c.kind.padEnd(12)} ${c.status.padEnd(18)} ${c.label}`)
    }
    if (connections.length === 0) io.out('no connections yet: connect one on the platform\'s auth pages (/connections/new)')
  })
  return 0
}
