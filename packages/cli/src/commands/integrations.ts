/**
 * `service integrations list|bind|unbind <app> ...` and `service connections list`: the app
 * integration API from the command line, so a builder binds an `account: app` slot to a
 * connection without curl. Connections are shown as metadata only (the API never returns a
 * credential value). Binding needs Edit on the app; connections are created in the browser.
 */
import type { Client } from '../client.ts'
import { usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'

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

const slotPath = (app: string, slot: string) => `/v1/apps/${encodeURIComponent(app)}/integrations/${encodeURIComponent(slot)}/binding`

const INTEGRATIONS_USAGE = 'integrations'

function usage(_io: Io, command: string, message = `service ${command}: see the usage`): never {
  throw usageError(message, usageOf(command))
}

export async function integrationsCommand(
  io: Io, client: Client,
  options: { action: string | undefined; app: string | undefined; rest: string[]; connection: string | undefined },
): Promise<number> {
  const { action, app, rest, connection } = options
  if (!app) return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind or unbind, and the app')
  switch (action) {
    case 'list': {
      if (rest.length > 0 || connection !== undefined) return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind or unbind, and the app')
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
      if (!slot || rest.length > 1) return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind or unbind, and the app')
      if (!connection) usage(io, INTEGRATIONS_USAGE, 'service integrations bind: name the connection with --connection <connectionId> (service connections list shows them)')
      const { binding } = await client.call<{ binding: { connectionId: string; capabilities: string[] } }>(
        'PUT', slotPath(app, slot), { connectionId: connection })
      printResult(io, { binding }, () => io.out(`bound ${slot} of ${app} to connection ${binding.connectionId} (${binding.capabilities.join(', ')})`))
      return 0
    }
    case 'unbind': {
      const [slot] = rest
      if (!slot || rest.length > 1 || connection !== undefined) return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind or unbind, and the app')
      await client.call('DELETE', slotPath(app, slot))
      printResult(io, { unbound: slot }, () => io.out(`${slot} of ${app} is unbound`))
      return 0
    }
    default:
      return usage(io, INTEGRATIONS_USAGE, 'service integrations: list, bind or unbind, and the app')
  }
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
