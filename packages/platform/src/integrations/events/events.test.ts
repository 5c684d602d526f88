/**
 * Integration events end to end (spec 2.9, 4.1, 4.3, 6.1, 8) with real Deno Functions: a
 * provider app "shop" whose operation, sync and webhook invocations emit, consumer apps
 * whose slots subscribe (or not), and the delivery worker driven pass by pass on a manual
 * clock. Emission counts and deduplication, every validation code, who receives (types
 * filter, capability, suspension, revocation), the handler's input, retries with the
 * schedule, a deploy between attempts, payloads discarded, the listing and its paging and
 * role, retention, and a provider's development session.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { manifest, ownerApi, startHarness, type Harness } from '../../../test/harness.ts'
import { createTestConnection, deployApp, ORDER_CREATED, ordersContract, READ_AND_WRITE, type ContractEvent } from '../../../test/integration-fixture.ts'
import { findAppBySlug } from '../../apps/apps.ts'
import { createProviderInvoker } from '../provider-invoker.ts'
import type { IntegrationTrigger } from '../provider-invocation.ts'
import { emitEvent, MAX_EVENT_DATA_BYTES } from './emit.ts'
import { everyCandidate } from './queries.ts'
import { RETRY_DELAYS_SECONDS } from './delivery-worker.ts'
import { DELIVERY_RETENTION_MS, eventEnvelope, runEventHandler } from './index.ts'

const PROVIDER = (extraEvents: ContractEvent[] = []) => `functions:
  - name: emitImpl
    entrypoint: functions/emit.ts
    access: system
${ordersContract({
  credentials: [],
  capabilities: READ_AND_WRITE,
  operations: [{ name: 'orders.emit', capability: 'orders.read', function: 'emitImpl', description: 'Emits the events it is given' }],
  events: [
    { ...ORDER_CREATED, fake: { order: 'A-1' } },
    { type: 'order.shipped', capability: 'orders.read', description: 'An order was shipped' },
    { type: 'order.refunded', capability: 'orders.write', description: 'An order was refunded' },
    ...extraEvents,
  ],
})}`

/** Emits each event of `calls` (JSON text) and returns each count, or the error's code. */
const EMIT_CODE = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ calls: string() }),
  async handler({ input, integration }) {
    const out = []
    for (const event of JSON.parse(input.calls)) {
      try { out.push(await integration.emit(event)) } catch (e) { out.push({ code: e.code, status: e.status }) }
    }
    return { trigger: integration.trigger, out }
  },
})
`

/** A consumer slot of `orders`, with events as given, plus a public Function calling orders.emit. */
function consumer(options: { capabilities: string[]; events?: string }): string {
  return `functions:
  - name: callShop
    entrypoint: functions/call.ts
    access: public
  - name: onEvent
    entrypoint: functions/on-event.ts
    access: system
integrations:
  shop:
    provider: custom
    integration: orders
    account: app
    cardinality: one
    capabilities: [${options.capabilities.join(', ')}]
${options.events === undefined ? '' : `    events:\n${options.events}`}`
}

const CALL_CODE = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ calls: string() }),
  handler({ input, integrations }) {
    return integrations.use('shop').call('orders.emit', { calls: input.calls })
  },
})
`

/** Records every invocation; fails (errors.unavailable) while this event has been seen at most data.failFirst times. */
const ON_EVENT = (version: number) => `import { defineFunction, errors, number, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({
    id: string(), type: string(), occurredAt: string(), integration: string(), provider: string(), bindingId: string(),
    data: object({ order: string(), failFirst: optional(number()) }),
  }),
  async handler({ input, data, user }) {
    const received = data.table('received')
    await received.create({ event_id: input.id, input, version: ${version}, anonymous: user === null })
    const seen = await received.list({ where: { event_id: input.id }, limit: 100 })
    if (seen.length <= (input.data.failFirst ?? 0)) throw errors.unavailable('NOT_YET', 'failing attempt ' + seen.length)
    return null
  },
})
`

const MIGRATION = `
create table received (
  id uuid primary key default gen_random_uuid(),
  event_id text not null,
  input jsonb not null,
  version integer not null,
  anonymous boolean not null
);
alter table received enable row level security;
create policy received_system on received for all using (auth.is_system()) with check (auth.is_system());
`

function consumerFiles(slug: string, yaml: string, version = 1): Record<string, string> {
  return {
    'service.yaml': manifest(slug, yaml, 'private'),
    'functions/call.ts': CALL_CODE,
    'functions/on-event.ts': ON_EVENT(version),
    'database/migrations/0001_received.sql': MIGRATION,
  }
}

describe(`integration events (${backend})`, () => {
  let h: Harness
  let alice: { token: string; userId: string } // organisation administrator of Acme, owns the provider app
  let bob: { token: string; userId: string } // member of Acme, owns the consumer apps
  let carol: { token: string; userId: string } // member of Acme, Edit on "team"
  let eve: { token: string; userId: string } // another organisation
  let orgConnection: string
  let step = 0

  async function api(token: string, method: string, path: string, json?: unknown) {
    return await ownerApi(h, token, method, path, json)
  }

  async function connection(userId: string, kind: 'personal' | 'organisation'): Promise<string> {
    return createTestConnection(h, { userId, kind, values: {} })
  }

  /** The provider's emitImpl for `connectionId` as a sync (or webhook, oauth) invocation. */
  async function emitAs(trigger: IntegrationTrigger, connectionId: string, calls: unknown[], mayEmit = trigger !== 'oauth') {
    const invoke = createProviderInvoker({ db: h.t.db, host: () => h.platform.functions })
    const shop = (await findAppBySlug(h.t.db, 'shop'))!
    const result = await invoke({
      providerAppId: shop.id, functionName: 'emitImpl', input: { calls: JSON.stringify(calls) },
      integration: { connectionId, trigger }, secrets: {}, mayEmit, timeoutMs: 25_000,
    })
    assert.ok(result.ok, JSON.stringify(result))
    return (result.value as { out: unknown[] }).out
  }

  /** The consumer `app`'s callShop, which calls orders.emit through the broker (an operation invocation). */
  async function emitThroughOperation(app: string, calls: unknown[]) {
    const fn = (await h.platform.functions.resolve((await findAppBySlug(h.t.db, app))!, 'callShop'))!
    const result = await h.platform.functions.run(fn, { input: { calls: JSON.stringify(calls) }, user: null })
    assert.ok(result.ok, JSON.stringify(result))
    return result.value as { trigger: string; out: unknown[] }
  }

  async function received(app: string): Promise<{ event_id: string; input: any; version: number; anonymous: boolean }[]> {
    return await h.t.db.query(`select event_id, input, version, anonymous from app_${app}.received order by event_id, version`)
  }

  async function deliveries(where = 'true', params: unknown[] = []) {
    return await h.t.db.query<{ id: string; slot: string; event_id: string; state: string; attempts: number; data: unknown; last_error: any; consumer_app_id: string }>(
      `select id, slot, event_id, state, attempts, data, last_error, consumer_app_id from platform.integration_event_deliveries where ${where} order by created_at, id`, params)
  }

  /** A fresh event id per test. */
  function id(name: string): string {
    step += 1
    return `${name}-${step}`
  }

  async function bind(token: string, app: string, connectionId: string) {
    const bound = await api(token, 'PUT', `/v1/apps/${app}/integrations/shop/binding`, { connectionId })
    assert.equal(bound.status, 200, bound.text)
    return bound.body.binding.id as string
  }

  before(async () => {
    h = await startHarness()
    alice = await h.createOwner('alice@acme.test', 'Acme')
    bob = await h.createOwner('bob@acme.test', 'Acme')
    carol = await h.createOwner('carol@acme.test', 'Acme')
    eve = await h.createOwner('eve@globex.test', 'Globex')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'shop', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'shop', { 'service.yaml': manifest('shop', PROVIDER(), 'private'), 'functions/emit.ts': EMIT_CODE })
    const apps: [string, string][] = [
      // Every type it is granted.
      ['desk', consumer({ capabilities: ['orders.read', 'orders.write'], events: '      function: onEvent\n' })],
      // Only order.shipped.
      ['typed', consumer({ capabilities: ['orders.read', 'orders.write'], events: '      function: onEvent\n      types: [order.shipped]\n' })],
      // No events.
      ['quiet', consumer({ capabilities: ['orders.read', 'orders.write'] })],
      // Every type, but granted orders.read only: never order.refunded.
      ['narrow', consumer({ capabilities: ['orders.read'], events: '      function: onEvent\n' })],
      // Carol binds her personal connection here (revocation).
      ['team', consumer({ capabilities: ['orders.read'], events: '      function: onEvent\n' })],
    ]
    for (const [slug, yaml] of apps) {
      assert.equal((await h.request('/v1/apps', { token: bob.token, json: { slug, visibility: 'private' } })).status, 201)
      await deployApp(h, bob.token, slug, consumerFiles(slug, yaml))
    }
    orgConnection = await connection(alice.userId, 'organisation')
    for (const [slug] of apps.slice(0, 4)) await bind(bob.token, slug, orgConnection)
  })
  after(() => h.close())

  test('emit returns the number of new deliveries: subscribed slots only, by types filter and granted capability; re-emitting the same id returns 0', async () => {
    const created = id('created')
    const shipped = id('shipped')
    const refunded = id('refunded')
    const first = await emitThroughOperation('desk', [
      { type: 'order.created', id: created, data: { order: 'A-1' } },
      { type: 'order.created', id: created, data: { order: 'A-1' } },
      { type: 'order.shipped', id: shipped, data: { order: 'A-1' } },
      { type: 'order.refunded', id: refunded, data: { order: 'A-1' } },
    ])
    assert.equal(first.trigger, 'operation')
    // created: desk and narrow; again: nothing new; shipped: desk, typed, narrow; refunded: desk only.
    assert.deepEqual(first.out, [2, 0, 3, 1])
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.created', id: created, data: { order: 'changed' } }]), [0],
      'the same change from another trigger is still one delivery per binding')
    const rows = await deliveries('event_id = any($1)', [[created, shipped, refunded]])
    const apps = new Map((await h.t.db.query<{ id: string; slug: string }>('select id, slug from platform.apps')).map((a) => [a.id, a.slug]))
    assert.deepEqual(rows.map((r) => `${apps.get(r.consumer_app_id)}:${r.event_id.split('-')[0]}`).sort(),
      ['desk:created', 'desk:refunded', 'desk:shipped', 'narrow:created', 'narrow:shipped', 'typed:shipped'])
    assert.ok(rows.every((r) => r.state === 'waiting' && r.attempts === 0))
    await h.platform.events.runDue()
    assert.deepEqual((await received('quiet')).length, 0)
  })

  test('the handler runs as the consumer\'s system identity with { id, type, occurredAt, integration, provider, bindingId, data }; the payload is discarded once delivered', async () => {
    const event = id('shape')
    const emittedAt = h.clock.now().toISOString()
    assert.deepEqual(await emitAs('webhook', orgConnection, [{ type: 'order.created', id: event, data: { order: 'B-7' } }]), [2])
    h.clock.advance(5000)
    assert.equal(await h.platform.events.runDue(), 2)
    const bindingId = (await h.t.db.query<{ id: string }>(
      `select b.id from platform.integration_bindings b join platform.apps a on a.id = b.consumer_app_id where a.slug = 'desk' and b.status = 'active'`))[0]!.id
    const got = (await received('desk')).filter((r) => r.event_id === event)
    assert.equal(got.length, 1)
    assert.deepEqual(got[0]!.input, {
      id: event, type: 'order.created', occurredAt: emittedAt, integration: 'shop', provider: 'custom', bindingId, data: { order: 'B-7' },
    })
    assert.equal(got[0]!.anonymous, true, 'ctx.user is null: the app\'s system identity')
    const rows = await deliveries('event_id = $1', [event])
    assert.deepEqual(rows.map((r) => [r.state, r.attempts, r.data]), [['delivered', 1, null], ['delivered', 1, null]])
  })

  test('runEventHandler hands an envelope to a slot handler as the system identity (development mode\'s seam); a non-system Function is FUNCTION_NOT_FOUND', async () => {
    const desk = (await findAppBySlug(h.t.db, 'desk'))!
    const event = id('direct')
    const envelope = eventEnvelope({ id: event, type: 'order.created', occurredAt: h.clock.now(), slot: 'shop', provider: 'custom', bindingId: '00000000-0000-0000-0000-000000000000', data: { order: 'D-1' } })
    const result = await runEventHandler(h.platform.functions, { app: desk, handler: 'onEvent', envelope })
    assert.ok(result.ok, JSON.stringify(result))
    assert.deepEqual((await received('desk')).filter((r) => r.event_id === event).map((r) => [r.input, r.anonymous]), [[envelope, true]])
    await assert.rejects(runEventHandler(h.platform.functions, { app: desk, handler: 'callShop', envelope }), (error: any) => error.code === 'FUNCTION_NOT_FOUND')
  })

  test('validation: each malformed event fails with its code; 64 KiB of data passes and one byte more does not', async () => {
    const exact = { order: 'x'.repeat(MAX_EVENT_DATA_BYTES - JSON.stringify({ order: '' }).length) }
    assert.equal(Buffer.byteLength(JSON.stringify(exact)), MAX_EVENT_DATA_BYTES)
    const over = { order: `${exact.order.slice(1)}é` }
    assert.equal(Buffer.byteLength(JSON.stringify(over)), MAX_EVENT_DATA_BYTES + 1)
    const out = await emitAs('sync', orgConnection, [
      'not an object',
      { type: 'order.created', id: id('extra'), data: {}, extra: 1 },
      { type: 'order.created', id: '', data: {} },
      { type: 'order.created', id: 'x'.repeat(256), data: {} },
      { type: 'order.created', data: {} },
      { type: 'order.created', id: id('array'), data: [] },
      { type: 'order.created', id: id('null'), data: null },
      { type: 'order.created', id: id('nul'), data: { order: 'a\u0000b' } },
      { type: 'order.deleted', id: id('undeclared'), data: {} },
      { id: id('notype'), data: {} },
      { type: 'order.created', id: id('over'), data: over },
      { type: 'order.created', id: id('exact'), data: exact },
    ])
    const invalid = { code: 'INTEGRATION_EVENT_INVALID', status: 400 }
    assert.deepEqual(out, [
      invalid, invalid, invalid, invalid, invalid, invalid, invalid, invalid,
      { code: 'INTEGRATION_EVENT_TYPE_NOT_DECLARED', status: 400 },
      invalid,
      { code: 'INTEGRATION_EVENT_TOO_LARGE', status: 413 },
      2,
    ])
    assert.equal((await emitAs('sync', orgConnection, [{ type: 'order.created', id: 'x'.repeat(255), data: { order: 'long' } }]))[0], 2,
      'an id of 255 characters is accepted')
  })

  test('emit is unavailable during OAuth exchange and refresh, and outside an integration invocation', async () => {
    assert.deepEqual(await emitAs('oauth', orgConnection, [{ type: 'order.created', id: id('oauth'), data: {} }]),
      [{ code: 'INTEGRATION_EMIT_UNAVAILABLE', status: 409 }])
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.created', id: id('nomay'), data: {} }], false),
      [{ code: 'INTEGRATION_EMIT_UNAVAILABLE', status: 409 }])
    const shop = (await findAppBySlug(h.t.db, 'shop'))!
    await assert.rejects(
      emitEvent({ db: h.t.db, clock: h.clock }, { appId: shop.id, releaseId: shop.activeReleaseId!, devName: '', integration: null, mayEmit: false, args: [{}] }),
      (error: any) => error.code === 'INTEGRATION_EMIT_UNAVAILABLE')
  })

  test('a suspended binding receives nothing, and a delivery whose binding is suspended at attempt time fails without retry', async () => {
    await h.platform.events.runDue()
    const pending = id('pending')
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.created', id: pending, data: { order: 'S-1' } }]), [2])
    const narrowed = await api(alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'people', usePeople: ['carol@acme.test'] })
    assert.equal(narrowed.status, 200, narrowed.text)
    try {
      assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.created', id: id('suspended'), data: { order: 'S-2' } }]), [0])
      assert.equal(await h.platform.events.runDue(), 2)
      const rows = await deliveries('event_id = $1', [pending])
      assert.deepEqual(rows.map((r) => [r.state, r.attempts, r.data, r.last_error.code]),
        [['failed', 1, null, 'INTEGRATION_BINDING_SUSPENDED'], ['failed', 1, null, 'INTEGRATION_BINDING_SUSPENDED']])
      assert.equal((await received('desk')).filter((r) => r.event_id === pending).length, 0)
    } finally {
      assert.equal((await api(alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'organisation' })).status, 200)
    }
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.created', id: id('restored'), data: { order: 'S-3' } }]), [2])
    await h.platform.events.runDue()
  })

  test('a revoked binding receives nothing; a delivery whose binding was revoked before its attempt fails without retry', async () => {
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/team/members/carol@acme.test', { role: 'edit' })).status, 201)
    const carols = await connection(carol.userId, 'personal')
    await bind(carol.token, 'team', carols)
    const before = id('before')
    assert.deepEqual(await emitAs('sync', carols, [{ type: 'order.created', id: before, data: { order: 'R-1' } }]), [1])
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/team/members/carol@acme.test', { role: 'use' })).status, 200)
    assert.equal(await h.platform.events.runDue(), 1)
    const [row] = await deliveries('event_id = $1', [before])
    assert.deepEqual([row!.state, row!.attempts, row!.data, row!.last_error.code], ['failed', 1, null, 'INTEGRATION_BINDING_REVOKED'])
    assert.deepEqual(await emitAs('sync', carols, [{ type: 'order.created', id: id('after'), data: { order: 'R-2' } }]), [0])
    assert.equal((await received('team')).length, 0)
  })

  test('a slot that no longer subscribes to the type at attempt time (a deploy in between) fails the delivery without retry', async () => {
    await h.platform.events.runDue()
    const event = id('unsubscribed')
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.shipped', id: event, data: { order: 'U-1' } }]), [3])
    await deployApp(h, bob.token, 'typed', consumerFiles('typed', consumer({ capabilities: ['orders.read', 'orders.write'], events: '      function: onEvent\n      types: [order.created]\n' })))
    assert.equal(await h.platform.events.runDue(), 3)
    const apps = new Map((await h.t.db.query<{ id: string; slug: string }>('select id, slug from platform.apps')).map((a) => [a.id, a.slug]))
    const rows = await deliveries('event_id = $1', [event])
    assert.deepEqual(rows.map((r) => [apps.get(r.consumer_app_id), r.state, r.attempts, r.last_error?.code ?? null]).sort(), [
      ['desk', 'delivered', 1, null], ['narrow', 'delivered', 1, null], ['typed', 'failed', 1, 'INTEGRATION_EVENT_NOT_SUBSCRIBED'],
    ])
    assert.equal((await received('typed')).filter((r) => r.event_id === event).length, 0)
  })

  test('a slot that stops requesting an event\'s capability receives none of it, though its binding still grants it; a delivery waiting then fails without retry', async () => {
    await h.platform.events.runDue()
    const apps = new Map((await h.t.db.query<{ id: string; slug: string }>('select id, slug from platform.apps')).map((a) => [a.id, a.slug]))
    const narrowRows = async (event: string) => (await deliveries('event_id = $1', [event])).filter((r) => apps.get(r.consumer_app_id) === 'narrow')
    const waiting = id('dropped')
    await emitAs('sync', orgConnection, [{ type: 'order.created', id: waiting, data: { order: 'D-1' } }])
    assert.equal((await narrowRows(waiting)).length, 1)
    // The slot now requests orders.write only (the binding, made before, still lists orders.read).
    await deployApp(h, bob.token, 'narrow', consumerFiles('narrow', consumer({ capabilities: ['orders.write'], events: '      function: onEvent\n' })))
    await h.platform.events.runDue()
    assert.deepEqual((await narrowRows(waiting)).map((r) => [r.state, r.attempts, r.last_error?.code]), [['failed', 1, 'INTEGRATION_CAPABILITY_NOT_GRANTED']])
    const later = id('dropped')
    await emitAs('sync', orgConnection, [{ type: 'order.created', id: later, data: { order: 'D-2' } }])
    assert.deepEqual(await narrowRows(later), [], 'no delivery is recorded for a capability the slot no longer requests')
    assert.equal((await received('narrow')).filter((r) => r.event_id === waiting || r.event_id === later).length, 0)
    // Requested again: received again, under the same binding.
    await deployApp(h, bob.token, 'narrow', consumerFiles('narrow', consumer({ capabilities: ['orders.read'], events: '      function: onEvent\n' })))
    const again = id('dropped')
    await emitAs('sync', orgConnection, [{ type: 'order.created', id: again, data: { order: 'D-3' } }])
    assert.equal((await narrowRows(again)).length, 1)
    await h.platform.events.runDue()
  })

  test('an emission reads every binding of its connection, page after page (no cap at the first page)', async () => {
    const quiet = (await findAppBySlug(h.t.db, 'quiet'))!
    const paged = await connection(alice.userId, 'organisation')
    const ids = Array.from({ length: 5 }, () => randomUUID()).sort()
    for (const [i, bindingId] of ids.entries()) {
      await h.t.db.query(
        `insert into platform.integration_bindings (id, consumer_app_id, slot, connection_id, created_by, capabilities, created_at)
         values ($1, $2, $3, $4, $5, '["orders.read"]', now())`, [bindingId, quiet.id, `page_${i}`, paged, bob.userId])
    }
    const read: string[] = []
    for await (const candidate of everyCandidate(h.t.db, { connectionId: paged, pageSize: 2 })) read.push(candidate.binding_id)
    assert.deepEqual(read, ids, 'pages of 2, 2 and 1, in id order, none twice')
    const exact: string[] = []
    for await (const candidate of everyCandidate(h.t.db, { connectionId: paged, pageSize: 5 })) exact.push(candidate.binding_id)
    assert.deepEqual(exact, ids, 'a full last page is followed by an empty one')
    await h.t.db.query('delete from platform.integration_bindings where connection_id = $1', [paged])
  })

  test('at least once: a handler failing its first attempts is retried on the schedule, across a deploy of the consumer, until delivered', async () => {
    const event = id('retry')
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.refunded', id: event, data: { order: 'T-1', failFirst: 2 } }]), [1])
    assert.equal(await h.platform.events.runDue(), 1)
    let [row] = await deliveries('event_id = $1', [event])
    assert.deepEqual([row!.state, row!.attempts, row!.last_error], ['waiting', 1, { code: 'NOT_YET', message: 'failing attempt 1', status: 503 }])
    const listed = await api(bob.token, 'GET', '/v1/apps/desk/integration-events?state=waiting')
    assert.equal(listed.body.deliveries[0].nextAttemptAt, new Date(h.clock.now().getTime() + RETRY_DELAYS_SECONDS[0]! * 1000).toISOString())
    assert.equal(await h.platform.events.runDue(), 0, 'not due before its retry time')
    h.clock.advance(RETRY_DELAYS_SECONDS[0]! * 1000)
    assert.equal(await h.platform.events.runDue(), 1)
    ;[row] = await deliveries('event_id = $1', [event])
    assert.deepEqual([row!.state, row!.attempts], ['waiting', 2])
    // A deploy between attempts: the next attempt runs the new active release's handler.
    await deployApp(h, bob.token, 'desk', consumerFiles('desk', consumer({ capabilities: ['orders.read', 'orders.write'], events: '      function: onEvent\n' }), 2))
    h.clock.advance(RETRY_DELAYS_SECONDS[1]! * 1000)
    assert.equal(await h.platform.events.runDue(), 1)
    ;[row] = await deliveries('event_id = $1', [event])
    assert.deepEqual([row!.state, row!.attempts, row!.data], ['delivered', 3, null])
    assert.deepEqual((await received('desk')).filter((r) => r.event_id === event).map((r) => r.version), [1, 1, 2])
  })

  test('a handler that never succeeds is retried for about three hours, then failed with its payload discarded', async () => {
    const total = RETRY_DELAYS_SECONDS.reduce((a, b) => a + b, 0)
    assert.ok(total > 2.5 * 3600 && total < 3.5 * 3600, `about three hours (${total} s)`)
    const event = id('never')
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.refunded', id: event, data: { order: 'N-1', failFirst: 1000 } }]), [1])
    for (const wait of [0, ...RETRY_DELAYS_SECONDS]) {
      h.clock.advance(wait * 1000)
      assert.equal(await h.platform.events.runDue(), 1)
    }
    const [row] = await deliveries('event_id = $1', [event])
    assert.deepEqual([row!.state, row!.attempts, row!.data, row!.last_error.code], ['failed', RETRY_DELAYS_SECONDS.length + 1, null, 'NOT_YET'])
    h.clock.advance(24 * 3600 * 1000)
    assert.equal(await h.platform.events.runDue(), 0)
  })

  test('GET integration-events lists the app\'s deliveries newest first with cursor paging, never their data; Edit is needed', async () => {
    const ids = [id('page'), id('page'), id('page')]
    for (const event of ids) {
      h.clock.advance(1000)
      assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.refunded', id: event, data: { order: 'P' } }]), [1])
    }
    const first = await api(bob.token, 'GET', '/v1/apps/desk/integration-events?limit=2')
    assert.equal(first.status, 200, first.text)
    assert.deepEqual(first.body.deliveries.map((d: any) => d.eventId), [ids[2], ids[1]])
    const item = first.body.deliveries[0]
    assert.deepEqual(Object.keys(item).sort(), [
      'attempts', 'bindingId', 'createdAt', 'deliveredAt', 'eventId', 'finishedAt', 'id', 'integration', 'lastError', 'nextAttemptAt',
      'occurredAt', 'provider', 'providerAppId', 'slot', 'state', 'type',
    ])
    assert.equal(first.text.includes('"data"'), false)
    assert.deepEqual([item.type, item.slot, item.provider, item.state, item.attempts], ['order.refunded', 'shop', 'custom', 'waiting', 0])
    const second = await api(bob.token, 'GET', `/v1/apps/desk/integration-events?limit=2&nextCursor=${first.body.nextCursor}`)
    assert.equal(second.body.deliveries[0].eventId, ids[0])
    assert.equal(second.body.deliveries.length, 2)
    await h.platform.events.runDue()
    const delivered = await api(bob.token, 'GET', '/v1/apps/desk/integration-events?state=delivered&limit=100')
    assert.ok(delivered.body.deliveries.some((d: any) => d.eventId === ids[2] && d.deliveredAt !== null))
    for (const query of ['limit=0', 'limit=101', 'state=done', 'nextCursor=bogus']) {
      const bad = await api(bob.token, 'GET', `/v1/apps/desk/integration-events?${query}`)
      assert.equal(bad.status, 400, query)
      assert.equal(bad.body.error.code, 'VALIDATION_FAILED')
    }
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/members/carol@acme.test', { role: 'use' })).status, 201)
    const useOnly = await api(carol.token, 'GET', '/v1/apps/desk/integration-events')
    assert.equal(useOnly.status, 403)
    assert.equal(useOnly.body.error.code, 'FORBIDDEN')
    assert.equal((await api(eve.token, 'GET', '/v1/apps/desk/integration-events')).body.error.code, 'APP_NOT_FOUND')
  })

  test('in a provider\'s development session emit validates against the development revision and delivers nothing', async () => {
    await deployApp(h, alice.token, 'shop/dev/alice', {
      'service.yaml': manifest('shop', PROVIDER([{ type: 'order.drafted', capability: 'orders.read', description: 'Only in development' }]), 'private'),
      'functions/emit.ts': EMIT_CODE,
    })
    const shop = (await findAppBySlug(h.t.db, 'shop'))!
    const fn = (await h.platform.functions.resolveDev(shop, 'alice', 'emitImpl'))!
    const before = (await deliveries()).length
    const result = await h.platform.functions.run(fn, {
      input: { calls: JSON.stringify([
        { type: 'order.drafted', id: id('dev'), data: {} },
        { type: 'order.created', id: id('dev'), data: {} },
        { type: 'order.nope', id: id('dev'), data: {} },
      ]) },
      user: null,
      // As development mode's invocations pass it: without mayEmit, the trigger decides.
      integration: { context: { connectionId: orgConnection, trigger: 'sync' }, secrets: {} },
    })
    assert.ok(result.ok, JSON.stringify(result))
    assert.deepEqual((result.value as any).out, [0, 0, { code: 'INTEGRATION_EVENT_TYPE_NOT_DECLARED', status: 400 }])
    assert.equal((await deliveries()).length, before)
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.drafted', id: id('prod'), data: {} }]),
      [{ code: 'INTEGRATION_EVENT_TYPE_NOT_DECLARED', status: 400 }], 'production validates against the published contract')
  })

  test('delivery records are kept 14 days after they end, then purged', async () => {
    const event = id('old')
    assert.deepEqual(await emitAs('sync', orgConnection, [{ type: 'order.refunded', id: event, data: { order: 'O' } }]), [1])
    await h.platform.events.runDue()
    h.clock.advance(DELIVERY_RETENTION_MS - 1000)
    await h.platform.events.purge()
    assert.equal((await deliveries('event_id = $1', [event])).length, 1)
    h.clock.advance(2000)
    assert.ok((await h.platform.events.purge()) >= 1)
    assert.equal((await deliveries('event_id = $1', [event])).length, 0)
  })
})
