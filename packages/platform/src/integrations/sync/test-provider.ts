/**
 * Test support for integration sync (sync.test.ts in process, processes.test.ts across child
 * platform processes): the provider app "shop" whose contract declares a sync, and a server in
 * the test that its sync Function reports each run to (reached on loopback) and that tells the
 * Function what to do: succeed, fail, answer unauthorized, or hold until released. The
 * reporter counts the runs in progress, so a test sees two runs of one connection overlap.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { manifest } from '../../../test/harness.ts'
import { listOrders, ordersContract } from '../../../test/integration-fixture.ts'

/** What the sync Function does when the reporter answers. */
export type ReporterMode = 'ok' | 'fail' | 'unauthorized' | 'hold'

/** What one run of the sync Function saw. */
export interface SyncReport {
  input: unknown
  integration: { connectionId: string; trigger: string; operation: string | null }
  key: string | null
  env: string
  emitted: number
}

export interface SyncReporter {
  readonly server: Server
  /** The loopback port the sync Function posts to. */
  readonly port: number
  readonly reports: SyncReport[]
  /** Runs that reached the reporter and have not been answered yet. */
  readonly active: number
  /** The most runs in progress at once since the start or `resetMax`. */
  readonly maxActive: number
  /** Starts counting the most runs at once afresh. */
  resetMax(): void
  setMode(next: ReporterMode): void
  /** Lets every held run finish, and holds later ones again. */
  release(): void
  /** Releases what is held and stops the server. */
  close(): Promise<void>
}

/**
 * @example
 * const reporter = await startReporter()
 * await deployApp(h, token, 'shop', providerFiles({ port: reporter.port, sync: { function: 'syncImpl', schedule: '* * * * *' } }))
 * // ... after
 * await reporter.close()
 */
export async function startReporter(): Promise<SyncReporter> {
  const reports: SyncReport[] = []
  let mode: ReporterMode = 'ok'
  let active = 0
  let maxActive = 0
  let release: () => void = () => {}
  let held = new Promise<void>((resolve) => { release = resolve })
  const server: Server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => { body += chunk })
    req.on('end', () => {
      reports.push(JSON.parse(body) as SyncReport)
      active += 1
      maxActive = Math.max(maxActive, active)
      const answer = mode
      void (answer === 'hold' ? held : Promise.resolve()).then(() => {
        active -= 1
        res.end(answer === 'hold' ? 'ok' : answer)
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const reporter: SyncReporter = {
    server,
    port: (server.address() as AddressInfo).port,
    reports,
    get active() { return active },
    get maxActive() { return maxActive },
    resetMax() { maxActive = active },
    setMode(next) { mode = next },
    release() {
      release()
      held = new Promise<void>((resolve) => { release = resolve })
    },
    async close() {
      reporter.release()
      await new Promise((resolve) => server.close(resolve))
    },
  }
  return reporter
}

/** A contract's sync block (spec 2.6). */
export interface SyncBlock { function: string; schedule: string; timezone?: string }

/** The provider's manifest body: the sync Function `syncImpl` (own timeout 1 s), an operation and an event type. */
function providerManifest(sync: SyncBlock): string {
  return `functions:
  - name: syncImpl
    entrypoint: functions/sync.ts
    access: system
    timeoutSeconds: 1
  - name: ordersImpl
    entrypoint: functions/orders.ts
    access: system
${ordersContract({ operations: [listOrders('ordersImpl')], events: [{ type: 'order.updated', capability: 'orders.read', description: 'An order changed' }], sync })}`
}

/** The sync Function: emits one event, reports what it saw to the reporter on `port`, and does what the answer says. */
function syncCode(port: number): string {
  return `import { defineFunction, errors, object } from '@service/server'
export default defineFunction({
  input: object({}),
  async handler({ input, integration, secrets }) {
    const emitted = await integration.emit({ type: 'order.updated', id: 'o-' + crypto.randomUUID(), data: { status: 'paid' } })
    let env = 'readable'
    try { Deno.env.get('SHOP_API_KEY') } catch { env = 'denied' }
    const res = await fetch('http://127.0.0.1:${port}/run', {
      method: 'POST',
      body: JSON.stringify({
        input,
        integration: { connectionId: integration.connectionId, trigger: integration.trigger, operation: integration.operation ?? null },
        key: await secrets.get('SHOP_API_KEY'),
        env,
        emitted,
      }),
    })
    const mode = await res.text()
    if (mode === 'unauthorized') throw errors.unauthorized('KEY_REJECTED', 'the shop rejected the key')
    if (mode === 'fail') throw errors.badRequest('SHOP_BROKE', 'the shop could not list its orders')
    return { synced: true }
  },
})
`
}

/**
 * The bundle of the provider app "shop": its manifest with `sync` and its Functions.
 *
 * @example
 * await deployApp(h, alice.token, 'shop', providerFiles({ port: reporter.port, sync }))
 */
export function providerFiles(input: { port: number; sync: SyncBlock }): Record<string, string> {
  return {
    'service.yaml': manifest('shop', providerManifest(input.sync), 'private'),
    'functions/sync.ts': syncCode(input.port),
    'functions/orders.ts': `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), handler: () => [] })
`,
  }
}
