/**
 * `npm run bench:events` (issue 13): integration event delivery beside the jobs engine, in the
 * same run, on the same storage and Functions host:
 *
 * - emit-to-handler latency: with the workers idle, one event at a time, the time from
 *   calling `integration.emit` (the host's handler for it: validation, subscribed bindings,
 *   the deduplicated insert, the notice) until the delivery worker hands the attempt to the
 *   Functions host (a pipe write away from the consumer's Deno handler); p50 and p99;
 * - beside it, the jobs engine's enqueue-to-start, measured the same way (enqueue until the
 *   jobs dispatcher hands the attempt to the host);
 * - deliveries per second: 8 producers emit N events while the worker runs; N over the time
 *   from the first emit until the last handler has answered.
 *
 * Environment: DATABASE_URL (else the embedded PGlite), EVENTS_SAMPLES (default 200),
 * EVENTS_N (default 2,000). The last line is one JSON object.
 */
import { performance } from 'node:perf_hooks'
import { manifest, startHarness } from '../../packages/platform/test/harness.ts'
import { consumerManifest, createApp, createTestConnection, deployApp, ORDER_CREATED, ordersContract } from '../../packages/platform/test/integration-fixture.ts'
import { findAppBySlug } from '../../packages/platform/src/apps/apps.ts'
import { findNamespace } from '../../packages/platform/src/namespaces/namespaces.ts'
import { enqueueOnQueue } from '../../packages/platform/src/jobs/enqueue.ts'
import type { QueueDeclaration } from '../../packages/platform/src/manifest/index.ts'

const SAMPLES = Number(process.env.EVENTS_SAMPLES ?? 200)
const N = Number(process.env.EVENTS_N ?? 2000)
const PRODUCERS = 8
const WARMUP = 20

const PROVIDER = `functions:
  - name: emitImpl
    entrypoint: functions/emit.ts
    access: system
${ordersContract({ credentials: [], events: [ORDER_CREATED] })}`
const CONSUMER = `functions:
  - name: onEvent
    entrypoint: functions/on-event.ts
    access: system
  - name: noop
    entrypoint: functions/noop.ts
    access: system
queues:
  - name: noop
    function: noop
    concurrency: 100
    maxAttempts: 3
    retryDelaySeconds: 1
    timeoutSeconds: 60
${consumerManifest({ slots: { shop: { integration: 'orders', capabilities: ['orders.read'], events: 'onEvent' } } })}`
const ON_EVENT = `import { defineFunction, number, object, string } from '@service/server'
export default defineFunction({
  input: object({ id: string(), type: string(), occurredAt: string(), integration: string(), provider: string(), bindingId: string(), data: object({ i: number() }) }),
  handler: () => null,
})
`
const NOOP = `import { defineFunction, number, object } from '@service/server'
export default defineFunction({ input: object({ i: number() }), handler: () => null })
`
const QUEUE: QueueDeclaration = { name: 'noop', function: 'noop', concurrency: 100, maxAttempts: 3, retryDelaySeconds: 1, retryBackoff: false, timeoutSeconds: 60 }

function percentile(sorted: readonly number[], p: number): number {
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
    await deploy('shop', { 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/emit.ts': NOOP })
    await deploy('desk', { 'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/on-event.ts': ON_EVENT, 'functions/noop.ts': NOOP })
    const shop = (await findAppBySlug(h.t.db, 'shop'))!
    const desk = (await findAppBySlug(h.t.db, 'desk'))!
    const namespace = (await findNamespace(h.t.db, desk.id))!
    const connectionId = await createTestConnection(h, { userId: owner.userId, kind: 'organisation', label: 'bench', values: {} })
    const bound = await h.request('/v1/apps/desk/integrations/shop/binding', { token: owner.token, method: 'PUT', json: { connectionId } })
    if (bound.status !== 200) throw new Error(`bind: ${await bound.text()}`)

    // The attempt's start is where a worker hands it to the Functions host; its end where the host answers.
    const started = new Map<string, (at: number) => void>()
    const answered = new Map<string, () => void>()
    const run = h.platform.functions.run.bind(h.platform.functions)
    h.platform.functions.run = async (fn, options) => {
      const input = options.input as { id?: string; i?: number; data?: { i: number } }
      const key = input.id !== undefined ? `event:${input.id}` : `job:${input.i}`
      started.get(key)?.(performance.now())
      started.delete(key)
      const result = await run(fn, options)
      answered.get(key)?.()
      answered.delete(key)
      return result
    }
    const emit = (i: number) => h.platform.events.emit({
      appId: shop.id, releaseId: shop.activeReleaseId!, devName: '', integration: { connectionId, trigger: 'sync' }, mayEmit: true,
      args: [{ type: 'order.created', id: `e-${i}`, data: { i } }],
    })
    const enqueue = (i: number) => enqueueOnQueue(h.t.db, {
      appId: desk.id, namespaceId: namespace.id, declaration: QUEUE, enqueuedBy: null, now: h.clock.now(),
      request: { queue: 'noop', payload: { i }, idempotencyKey: `job-${i}`, delaySeconds: 0, timeoutMs: null },
    })
    await h.platform.events.start()
    await h.platform.jobs.start()

    let next = 0
    /** One at a time: from `send` until the handler's attempt is handed to the host, after its previous one answered. */
    async function latency(kind: 'event' | 'job', send: (i: number) => Promise<unknown>, count: number): Promise<number[]> {
      const times: number[] = []
      for (let k = 0; k < count; k++) {
        const i = next++
        const key = kind === 'event' ? `event:e-${i}` : `job:${i}`
        const start = new Promise<number>((resolve) => started.set(key, resolve))
        const done = new Promise<void>((resolve) => answered.set(key, resolve))
        const sent = performance.now()
        await send(i)
        times.push((await start) - sent)
        await done
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      return times.sort((a, b) => a - b)
    }
    await latency('event', emit, WARMUP)
    await latency('job', enqueue, WARMUP)
    const events = await latency('event', emit, SAMPLES)
    const jobs = await latency('job', enqueue, SAMPLES)

    const first = next
    next += N
    const all = Array.from({ length: N }, (_, k) => new Promise<void>((resolve) => answered.set(`event:e-${first + k}`, resolve)))
    const t0 = performance.now()
    let cursor = first
    await Promise.all(Array.from({ length: PRODUCERS }, async () => {
      while (cursor < first + N) await emit(cursor++)
    }))
    const emitted = performance.now()
    await Promise.all(all)
    const t1 = performance.now()
    const perSecond = N / ((t1 - t0) / 1000)

    const round = (v: number) => Math.round(v * 1000) / 1000
    const figures = {
      'emit-to-handler p50 ms': round(percentile(events, 0.5)),
      'emit-to-handler p99 ms': round(percentile(events, 0.99)),
      'jobs enqueue-to-start p50 ms': round(percentile(jobs, 0.5)),
      'jobs enqueue-to-start p99 ms': round(percentile(jobs, 0.99)),
      'deliveries per second': Math.round(perSecond),
      'emits per second (8 producers)': Math.round(N / ((emitted - t0) / 1000)),
    }
    console.log(`bench:events on ${h.t.db.kind}: ${SAMPLES} sequential samples each (after ${WARMUP}), ${N} events from ${PRODUCERS} producers\n`)
    console.log('| figure | value |')
    console.log('| --- | ---: |')
    for (const [label, value] of Object.entries(figures)) console.log(`| ${label} | ${value} |`)
    console.log(JSON.stringify({
      bench: 'events',
      ratios: { 'emit-to-handler p50 / jobs enqueue-to-start p50': round(percentile(events, 0.5) / percentile(jobs, 0.5)) },
      figures: { storage: h.t.db.kind === 'postgres' ? 1 : 0, ...figures },
    }))
  } finally {
    await h.platform.events.stop()
    await h.platform.jobs.stop()
    await h.close()
  }
}

await main()
