/**
 * `npm run bench:integrations`: what the broker adds to a Function call (issue 12). A consumer
 * app's Function calls a provider app's operation through `ctx.integrations.use(slot).call`:
 * every check of the broker (slot, published operation, capability, binding and live
 * authority, connection status), the connection's credentials decrypted into the provider's
 * invocation, the provider's `system` Function run on its own warm worker, and the result
 * back. Beside it, in the same run, the same consumer app's Function that returns at once (a
 * direct call), and the provider's operation Function run directly. All calls go through the
 * platform's Functions host in process, one at a time, warm.
 *
 * Target: the brokered call at most 2 ms p50 over the direct call.
 * Environment: DATABASE_URL (else the embedded PGlite), BENCH_CALLS (default 2,000 per case).
 */
import { performance } from 'node:perf_hooks'
import { manifest, startHarness } from '../../packages/platform/test/harness.ts'
import { consumerManifest, createApp, createTestConnection, deployApp, listOrders, ordersContract } from '../../packages/platform/test/integration-fixture.ts'
import { findAppBySlug } from '../../packages/platform/src/apps/apps.ts'

const CALLS = Number(process.env.BENCH_CALLS ?? 2000)
const WARMUP = 200

const PROVIDER = `functions:
  - name: ordersImpl
    entrypoint: functions/orders.ts
    access: system
  - name: directProvider
    entrypoint: functions/direct.ts
    access: public
${ordersContract({ operations: [listOrders('ordersImpl')] })}`
const PROVIDER_CODE = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ q: string() }),
  async handler({ input, secrets }) {
    const key = await secrets.get('SHOP_API_KEY')
    return { orders: [{ id: 1, q: input.q }], keyed: key !== null }
  },
})
`
const CONSUMER = `functions:
  - name: direct
    entrypoint: functions/direct.ts
    access: public
  - name: viaBroker
    entrypoint: functions/broker.ts
    access: public
${consumerManifest({ slots: { shop: { integration: 'orders', capabilities: ['orders.read'] } } })}`
const DIRECT_CODE = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({ input: object({ q: string() }), handler: ({ input }) => ({ orders: [{ id: 1, q: input.q }], keyed: true }) })
`
const BROKER_CODE = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({ input: object({ q: string() }), handler: ({ input, integrations }) => integrations.use('shop').call('orders.list', { q: input.q }) })
`

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
}

async function main(): Promise<void> {
  const h = await startHarness()
  try {
    const owner = await h.createOwner('bench@acme.test', 'Acme')
    const deploy = async (slug: string, files: Record<string, string>) => {
      await createApp(h, owner.token, slug)
      await deployApp(h, owner.token, slug, files)
    }
    await deploy('shop', { 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/orders.ts': PROVIDER_CODE, 'functions/direct.ts': DIRECT_CODE })
    await deploy('desk', {
      'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/direct.ts': DIRECT_CODE, 'functions/broker.ts': BROKER_CODE,
    })
    const shop = (await findAppBySlug(h.t.db, 'shop'))!
    const desk = (await findAppBySlug(h.t.db, 'desk'))!
    const connectionId = await createTestConnection(h, { userId: owner.userId, kind: 'personal', label: 'bench', values: { SHOP_API_KEY: 'sk_bench_value' } })
    const bound = await h.request('/v1/apps/desk/integrations/shop/binding', { token: owner.token, method: 'PUT', json: { connectionId } })
    if (bound.status !== 200) throw new Error(`bind: ${await bound.text()}`)

    const cases = {
      'direct consumer call': { app: desk, name: 'direct' },
      'provider Function called directly': { app: shop, name: 'directProvider' },
      'brokered operation call': { app: desk, name: 'viaBroker' },
    }
    const results: Record<string, { p50: number; p99: number; mean: number }> = {}
    for (const [label, target] of Object.entries(cases)) {
      const fn = (await h.platform.functions.resolve(target.app, target.name))!
      const once = async () => {
        const result = await h.platform.functions.run(fn, { input: { q: 'x' }, user: null })
        if (!result.ok) throw new Error(`${label}: ${JSON.stringify(result.error)}`)
      }
      for (let i = 0; i < WARMUP; i++) await once()
      const times: number[] = []
      for (let i = 0; i < CALLS; i++) {
        const started = performance.now()
        await once()
        times.push(performance.now() - started)
      }
      times.sort((a, b) => a - b)
      results[label] = { p50: percentile(times, 0.5), p99: percentile(times, 0.99), mean: times.reduce((a, b) => a + b, 0) / times.length }
    }
    const direct = results['direct consumer call']!
    const brokered = results['brokered operation call']!
    console.log(`bench:integrations on ${h.t.db.kind}, ${CALLS} sequential warm calls per case (after ${WARMUP})\n`)
    console.log('| case | p50 ms | p99 ms | mean ms |')
    console.log('| --- | ---: | ---: | ---: |')
    for (const [label, r] of Object.entries(results)) console.log(`| ${label} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} | ${r.mean.toFixed(3)} |`)
    const overhead = brokered.p50 - direct.p50
    console.log(`\nbroker overhead over the direct call: ${overhead.toFixed(3)} ms p50, ${(brokered.p99 - direct.p99).toFixed(3)} ms p99 (target: below 2 ms p50)`)
    const round = (v: number) => Math.round(v * 1000) / 1000
    console.log(JSON.stringify({
      bench: 'integrations',
      ratios: { 'brokered p50 / direct p50': round(brokered.p50 / direct.p50) },
      figures: {
        storage: h.t.db.kind === 'postgres' ? 1 : 0,
        'overhead p50 ms': round(overhead), 'overhead p99 ms': round(brokered.p99 - direct.p99),
        ...Object.fromEntries(Object.entries(results).flatMap(([k, r]) => [[`${k} p50 ms`, round(r.p50)], [`${k} p99 ms`, round(r.p99)]])),
      },
    }))
  } finally {
    await h.close()
  }
}

await main()
