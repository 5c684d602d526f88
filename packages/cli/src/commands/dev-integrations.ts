/**
 * `service integrations dev ...`: development mode for integrations from the command line
 * (spec 4.5, 9), the owner API routes the MCP tools `set_dev_integration_mode`,
 * `set_dev_integration_test_connection` and `inject_dev_integration_event` call too:
 * - `list`: the namespace's settings (mode and test connection per integration);
 * - `mode <integration> live|fake`: how a consumer's development namespace answers calls;
 * - `test-connection <integration> <connectionId>|none`: the connection a provider's
 *   development namespace runs its integration Functions on;
 * - `inject <integration> <type> [--data '<json>'] [--id <id>]`: a made-up event delivered
 *   to the namespace's handlers at once. Their log lines go to stderr, each delivery's
 *   outcome to stdout; a failed handler exits 1.
 * The app is `--app`, else app.id of ./service.yaml; `--dev <name>` is required.
 */
import type { Client } from '../client.ts'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
import { appTarget, type AppTarget } from './app-target.ts'
import { formatLogLine, terminalSafe, type LogLine } from './logs.ts'

export interface DevIntegrationsOptions {
  readonly action: string | undefined
  readonly rest: readonly string[]
  readonly app: string | undefined
  readonly dev: string | undefined
  readonly data: string | undefined
  readonly id: string | undefined
}

interface DevSetting {
  integration: string
  mode: 'live' | 'fake'
  testConnectionId: string | null
  updatedAt: string
}

type Delivery =
  | { slot: string; function: string; requestId: string; ok: true; value: unknown; logs: LogLine[] }
  | { slot: string; function: string; requestId: string; ok: false; status: number; error: { code: string; message: string; details?: { stack?: string } }; logs: LogLine[] }

interface Injection {
  event: { id: string; type: string }
  deliveries: Delivery[]
}

const USAGE = 'integrations'

function usage(message: string): never {
  throw usageError(`service integrations dev: ${message}`, usageOf(USAGE))
}

function settingLine(s: DevSetting): string {
  return `${s.integration.padEnd(16)} ${s.mode.padEnd(5)} ${s.testConnectionId ?? '-'}`
}

export async function devIntegrationsCommand(io: Io, client: Client, options: DevIntegrationsOptions): Promise<number> {
  const { action, rest } = options
  if (!options.dev) usage('name the development namespace with --dev <name>')
  const found = appTarget(options)
  if (typeof found === 'string') usage(found)
  const target: AppTarget = found
  const integrationPath = (integration: string) => `${target.prefix}/integrations/${encodeURIComponent(integration)}`
  if (action !== 'inject' && (options.data !== undefined || options.id !== undefined)) usage('--data and --id go with inject')
  switch (action) {
    case 'list': {
      if (rest.length > 0) usage('list takes no arguments')
      const { integrations } = await client.call<{ integrations: DevSetting[] }>('GET', `${target.prefix}/integrations`)
      printResult(io, { integrations }, () => {
        if (integrations.length === 0) io.out(`${target.label}: every integration answers its declared fakes (the default); no test connection chosen`)
        for (const s of integrations) io.out(settingLine(s))
      })
      return 0
    }
    case 'mode': {
      const [integration, mode] = rest
      if (!integration || !mode || rest.length > 2) usage('mode <integration> live|fake')
      if (mode !== 'live' && mode !== 'fake') usage(`the mode is live or fake, not "${mode}"`)
      const { integration: setting } = await client.call<{ integration: DevSetting }>('PUT', `${integrationPath(integration)}/mode`, { mode })
      printResult(io, { integration: setting }, () => io.out(mode === 'live'
        ? `${target.label}: calls to ${integration} now go to the provider through the app's bindings`
        : `${target.label}: calls to ${integration} now answer the operations' declared fakes`))
      return 0
    }
    case 'test-connection': {
      const [integration, connectionId] = rest
      if (!integration || !connectionId || rest.length > 2) usage('test-connection <integration> <connectionId>|none (service connections list shows them)')
      const { integration: setting } = connectionId === 'none'
        ? await client.call<{ integration: DevSetting }>('DELETE', `${integrationPath(integration)}/test-connection`)
        : await client.call<{ integration: DevSetting }>('PUT', `${integrationPath(integration)}/test-connection`, { connectionId })
      printResult(io, { integration: setting }, () => io.out(setting.testConnectionId === null
        ? `${target.label}: ${integration} has no test connection; its Functions fail INTEGRATION_TEST_CONNECTION_REQUIRED until one is chosen`
        : `${target.label}: ${integration} runs on the test connection ${setting.testConnectionId}`))
      return 0
    }
    case 'inject':
      return inject(io, client, target, options)
    default:
      return usage('list, mode, test-connection or inject?')
  }
}

async function inject(io: Io, client: Client, target: AppTarget, options: DevIntegrationsOptions): Promise<number> {
  const [integration, type] = options.rest
  if (!integration || !type || options.rest.length > 2) usage('inject <integration> <type> [--data \'<json>\'] [--id <id>]')
  let data: unknown
  if (options.data !== undefined) {
    try {
      data = JSON.parse(options.data)
    } catch {
      usage('--data must be JSON, for example --data \'{"orderId":"o-1"}\'')
    }
  }
  const result = await client.call<Injection>('POST', `${target.prefix}/integrations/${encodeURIComponent(integration)}/events`, {
    type,
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(data === undefined ? {} : { data }),
  })
  const failed = result.deliveries.filter((d): d is Extract<Delivery, { ok: false }> => !d.ok)
  if (io.json === true) {
    printResult(io, result, () => {})
  } else {
    for (const delivery of result.deliveries) {
      for (const line of delivery.logs) io.err(formatLogLine(line))
      // The handler wrote the value, the message and the stack: no terminal controls reach the screen.
      if (delivery.ok) {
        io.out(terminalSafe(`${delivery.slot} (${delivery.function}): ${JSON.stringify(delivery.value, null, 2)}`, { keepNewlines: true }))
      } else {
        io.err(terminalSafe(`${delivery.slot} (${delivery.function}): error ${delivery.error.code} (${delivery.status}): ${delivery.error.message}`))
        if (delivery.error.details?.stack) io.err(terminalSafe(String(delivery.error.details.stack), { keepNewlines: true }))
      }
    }
  }
  if (failed.length === 0) return 0
  const first = failed[0]!
  // The handler wrote the message: escaped here too, since the error line is printed as is.
  throw new CliError(first.error.code, terminalSafe(`${failed.length} of ${result.deliveries.length} handlers failed; ${first.slot} (${first.function}): ${first.error.message}`), {
    details: { event: result.event, failed: failed.map((d) => ({ slot: d.slot, function: d.function, status: d.status, code: d.error.code, requestId: d.requestId })) },
    next: `service logs --app ${target.app} --dev ${target.dev} --function ${first.function}`,
  })
}
