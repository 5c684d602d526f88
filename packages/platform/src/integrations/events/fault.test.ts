// The events fault test (issue 13's evidence): events emitted for two subscribed bindings,
// delivered by real platform processes (child processes running the delivery worker on one
// PostgreSQL) to a consumer handler that fails the first attempts of some events and takes
// its time on others. One process is SIGKILLed while handlers run; the consumer is deployed
// again while deliveries are pending and again while another process delivers. Every event
// reaches the handler of every binding, none is lost, each is recorded once per binding;
// the duplicates (handler runs beyond one per event and binding, and completed runs beyond
// one) are counted and reported. PostgreSQL only: PGlite is one process's embedded database.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { manifest, ownerApi, startHarness, type Harness } from '../../../test/harness.ts'
import { platformProcesses, type PlatformProcesses } from '../../../test/platform-processes.ts'
import { consumerManifest, createTestConnection, deployApp, ORDER_CREATED, ordersContract } from '../../../test/integration-fixture.ts'
import { findAppBySlug } from '../../apps/apps.ts'
import { createProviderInvoker } from '../provider-invoker.ts'

const EVENTS = 24

const PROVIDER = `functions:
  - name: emitImpl
    entrypoint: functions/emit.ts
    access: system
${ordersContract({ credentials: [], events: [ORDER_CREATED] })}`
const EMIT_CODE = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ calls: string() }),
  async handler({ input, integration }) {
    const out = []
    for (const event of JSON.parse(input.calls)) out.push(await integration.emit(event))
    return out
  },
})
`

const CONSUMER = (slot: string) => `functions:
  - name: onEvent
    entrypoint: functions/on-event.ts
    access: system
    timeoutSeconds: 5
${consumerManifest({ slots: { [slot]: { integration: 'orders', capabilities: ['orders.read'], events: 'onEvent' } } })}`

/** Records each run (started, then ended or failed); fails while the event was seen at most failFirst times; sleeps ms. */
const ON_EVENT = (version: number) => `import { defineFunction, errors, number, object, string } from '@service/server'
export default defineFunction({
  input: object({
    id: string(), type: string(), occurredAt: string(), integration: string(), provider: string(), bindingId: string(),
    data: object({ failFirst: number(), ms: number() }),
  }),
  async handler({ input, data }) {
    const runs = data.table('runs')
    const row = await runs.create({ event_id: input.id, binding_id: input.bindingId, version: ${version}, state: 'started' })
    const seen = await runs.list({ where: { event_id: input.id, binding_id: input.bindingId }, limit: 100 })
    if (seen.length <= input.data.failFirst) {
      await runs.updateById(row.id, { state: 'failed' })
      throw errors.unavailable('NOT_YET', 'failing run ' + seen.length)
    }
    await new Promise((resolve) => setTimeout(resolve, input.data.ms))
    await runs.updateById(row.id, { state: 'ended' })
    return null
  },
})
`

const MIGRATION = `
create table runs (
  id uuid primary key default gen_random_uuid(),
  event_id text not null,
  binding_id text not null,
  version integer not null,
  state text not null
);
alter table runs enable row level security;
create policy runs_system on runs for all using (auth.is_system()) with check (auth.is_system());
`


async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe(`integration events across platform process crashes and deploys (${backend})`, { skip: backend !== 'postgres' && 'needs PostgreSQL (PGlite is one process)' }, () => {
  let h: Harness
  let processes: PlatformProcesses
  let token: string
  let aliceId: string

  function consumerFiles(slug: string, slot: string, version: number): Record<string, string> {
    return {
      'service.yaml': manifest(slug, CONSUMER(slot), 'private'),
      'functions/on-event.ts': ON_EVENT(version),
      'database/migrations/0001_runs.sql': MIGRATION,
    }
  }

  before(async () => {
    h = await startHarness()
    const alice = await h.createOwner('alice@acme.test', 'Acme')
    token = alice.token
    aliceId = alice.userId
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'shop', visibility: 'private' } })).status, 201)
    await deployApp(h, token, 'shop', { 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/emit.ts': EMIT_CODE })
    for (const [slug, slot] of [['desk', 'orders'], ['ledger', 'shop']] as const) {
      assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'private' } })).status, 201)
      await deployApp(h, token, slug, consumerFiles(slug, slot, 1))
    }
    processes = await platformProcesses(h)
  })

  after(async () => {
    await processes?.close()
    await h?.close()
  })


  async function runs(): Promise<{ app: string; event_id: string; binding_id: string; version: number; state: string }[]> {
    return await h.t.db.query(
      `select 'desk' as app, event_id, binding_id, version, state from app_desk.runs
       union all select 'ledger', event_id, binding_id, version, state from app_ledger.runs`)
  }

  test('a handler failing its first attempts, a process SIGKILLed mid-delivery and deploys during delivery: every event reaches every binding\'s handler, each recorded once per binding', async (t) => {
    const shop = (await findAppBySlug(h.t.db, 'shop'))!
    const connectionId = await createTestConnection(h, { userId: aliceId, kind: 'organisation', label: 'shop', values: {} })
    for (const [slug, slot] of [['desk', 'orders'], ['ledger', 'shop']]) {
      const bound = await ownerApi(h, token, 'PUT', `/v1/apps/${slug}/integrations/${slot}/binding`, { connectionId })
      assert.equal(bound.status, 200, bound.text)
    }
    // Every third event fails its first two attempts; the others take 1.5 s, so the kill lands mid-delivery.
    const events = Array.from({ length: EVENTS }, (_, i) => ({
      type: 'order.created', id: `order-${i}`, data: { failFirst: i % 3 === 0 ? 2 : 0, ms: i % 3 === 0 ? 0 : 1500 },
    }))
    const invoke = createProviderInvoker({ db: h.t.db, host: () => h.platform.functions })
    const emitted = await invoke({
      providerAppId: shop.id, functionName: 'emitImpl', input: { calls: JSON.stringify([...events, ...events.slice(0, 5)]) },
      integration: { connectionId, trigger: 'sync' }, secrets: {}, mayEmit: true, timeoutMs: 25_000,
    })
    assert.ok(emitted.ok, JSON.stringify(emitted))
    assert.deepEqual(emitted.value, [...events.map(() => 2), 0, 0, 0, 0, 0], 'two new deliveries per event; re-emitted ones none')

    const doomed = await processes.start('events', 4)
    // Handlers asleep (events that do not fail take 1.5 s), so the kill lands while they run.
    const sleeping = (run: { event_id: string; state: string }) => run.state === 'started' && Number(run.event_id.split('-')[1]) % 3 !== 0
    await waitFor('handlers in progress', async () => (await runs()).filter(sleeping).length >= 2)
    doomed.process.kill('SIGKILL')
    await doomed.exited
    const cut = (await runs()).filter((run) => run.state === 'started')
    assert.ok(cut.length >= 1, 'the kill interrupted at least one handler')

    // A deploy while deliveries are pending (some leased by the dead process).
    await deployApp(h, token, 'desk', consumerFiles('desk', 'orders', 2))
    await deployApp(h, token, 'ledger', consumerFiles('ledger', 'shop', 2))
    const survivor = await processes.start('events', 4)
    // And one while the survivor delivers.
    await waitFor('the survivor to deliver', async () =>
      (await h.t.db.query(`select 1 from platform.integration_event_deliveries where state = 'delivered'`)).length >= 4)
    await deployApp(h, token, 'desk', consumerFiles('desk', 'orders', 3))
    await waitFor('every delivery to end', async () =>
      (await h.t.db.query(`select 1 from platform.integration_event_deliveries where state not in ('delivered', 'failed')`)).length === 0)
    survivor.process.kill('SIGTERM')
    await survivor.exited

    const deliveries = await h.t.db.query<{ binding_id: string; event_id: string; state: string; attempts: number; data: unknown }>(
      'select binding_id, event_id, state, attempts, data from platform.integration_event_deliveries')
    assert.equal(deliveries.length, EVENTS * 2, 'each event recorded once per binding')
    assert.deepEqual(new Set(deliveries.map((d) => d.state)), new Set(['delivered']), 'none lost')
    assert.ok(deliveries.every((d) => d.data === null), 'payloads discarded')
    const all = await runs()
    const ended = all.filter((run) => run.state === 'ended')
    for (const d of deliveries) {
      const mine = all.filter((run) => run.binding_id === d.binding_id && run.event_id === d.event_id)
      assert.ok(mine.some((run) => run.state === 'ended'), `${d.event_id} reached its handler for binding ${d.binding_id}`)
      assert.ok(mine.length <= d.attempts, 'every handler run was a counted attempt')
    }
    for (const failing of events.filter((e) => e.data.failFirst > 0)) {
      const attempts = deliveries.filter((d) => d.event_id === failing.id).map((d) => d.attempts)
      assert.ok(attempts.every((n) => n >= 3), `${failing.id} was retried after its two failures`)
    }
    assert.ok(all.some((run) => run.version >= 2), 'deliveries after the deploy ran the new release')
    for (const run of cut) {
      const d = deliveries.find((x) => x.binding_id === run.binding_id && x.event_id === run.event_id)!
      assert.ok(d.attempts >= 2, 'a delivery cut by the kill was retried after its lease expired')
    }
    const designedFailures = events.filter((e) => e.data.failFirst > 0).length * 2 * 2
    const duplicates = {
      events: EVENTS,
      bindings: 2,
      handlerRuns: all.length,
      runsBeyondOnePerEventAndBinding: all.length - EVENTS * 2,
      designedFailures,
      // Runs beyond the designed failures: those the kill interrupted (a cut run of a failing event counts as one of its failures).
      beyondDesigned: all.length - EVENTS * 2 - designedFailures,
      cutByKill: cut.length,
      completedMoreThanOnce: ended.length - new Set(ended.map((run) => `${run.binding_id}:${run.event_id}`)).size,
      byVersion: Object.fromEntries([1, 2, 3].map((v) => [v, all.filter((run) => run.version === v).length])),
    }
    t.diagnostic(`duplicates: ${JSON.stringify(duplicates)}`)
    console.log(`events fault test: ${JSON.stringify(duplicates)}`)
  })
})
