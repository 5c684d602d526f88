/**
 * Development mode for integrations (spec 4.5, 6.1, 7.2) with real Deno Functions: a
 * provider "shop" publishing "orders" and a consumer "desk", each also deployed to a
 * development namespace. A consumer's development calls answer the declared fakes unless
 * `live` is chosen; a provider's operation, sync and webhook Functions invoked in
 * development need a test connection its developer may use; injected events run the
 * consumer's development handler; settings go with their namespace.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../../test/harness.ts'
import { consumerManifest, createTestConnection, deployApp, listOrders, ORDER_CREATED, ordersContract, READ_AND_WRITE } from '../../../test/integration-fixture.ts'
import { findAppBySlug } from '../../apps/apps.ts'
import { UNBOUND_BINDING_ID } from './index.ts'
import { findConnection, markReconnectRequired } from '../connections/index.ts'
import { AUTH } from '../../../test/sign-in-flow.ts'

const KEY = 'sk_dev_mode_alice_3f9a1c'
const CAROL_KEY = 'sk_dev_mode_carol_77d2e0'
const FAKE_ORDERS = { orders: [{ id: 'fake-1', total: 12.5 }] }
const FAKE_EVENT = { orderId: 'fake-1', total: 12.5 }

const PROVIDER = `functions:
  - name: ordersImpl
    entrypoint: functions/orders.ts
    access: system
  - name: hookImpl
    entrypoint: functions/orders.ts
    access: system
  - name: syncImpl
    entrypoint: functions/orders.ts
    access: system
  - name: plain
    entrypoint: functions/plain.ts
    access: public
${ordersContract({
  capabilities: READ_AND_WRITE,
  operations: [
    { ...listOrders('ordersImpl'), fake: FAKE_ORDERS },
    { name: 'orders.get', capability: 'orders.read', function: 'ordersImpl', description: 'One order, with no fake' },
    { name: 'orders.cancel', capability: 'orders.write', function: 'ordersImpl', description: 'Cancels an order', fake: { cancelled: true } },
  ],
  sync: { function: 'syncImpl', schedule: '*/15 * * * *' },
  webhook: 'hookImpl',
  events: [
    { ...ORDER_CREATED, fake: FAKE_EVENT },
    { type: 'order.cancelled', capability: 'orders.write', description: 'An order was cancelled' },
  ],
})}`

const PROVIDER_CODE = `import { defineFunction, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({ mode: optional(string()) }),
  async handler({ input, integration, secrets }) {
    if (input.mode === 'emit') {
      return { emitted: await integration.emit({ type: 'order.created', id: 'evt-production-1', data: { orderId: 'p-1', total: 3 } }) }
    }
    const key = await secrets.get('SHOP_API_KEY')
    const digest = key === null ? null : Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key))))
      .map((b) => b.toString(16).padStart(2, '0')).join('')
    return { live: true, integration: integration && { connectionId: integration.connectionId, trigger: integration.trigger, operation: integration.operation ?? null }, digest }
  },
})
`

const CONSUMER = `functions:
  - name: callShop
    entrypoint: functions/call.ts
    access: public
  - name: onOrder
    entrypoint: functions/on-order.ts
    access: system
${consumerManifest({ slots: { shop: { integration: 'orders', capabilities: ['orders.read'], events: 'onOrder' } } })}`

const CONSUMER_CODE = `import { defineFunction, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({ slot: string(), operation: string(), mode: optional(string()) }),
  handler({ input, integrations }) {
    return integrations.use(input.slot).call(input.operation, { mode: input.mode ?? 'ok' })
  },
})
`

const HANDLER_CODE = `import { defineFunction, errors, number, object, string, uuid } from '@service/server'
export default defineFunction({
  input: object({ id: string(), type: string(), occurredAt: string(), integration: string(), provider: string(), bindingId: uuid(),
    data: object({ orderId: string(), total: number() }) }),
  handler({ input, user, log }) {
    if (input.data.orderId === 'explode') throw errors.conflict('HANDLER_REFUSED', 'no thanks')
    log.info('received ' + input.id)
    return { seen: input, user }
  },
})
`

function digest(value: string): string {
  return createHash('sha256').update(value).digest('hex')
}

describe(`development mode for integrations (${backend})`, () => {
  let h: Harness
  let alice: { token: string; userId: string } // organisation administrator of Acme; owns shop and desk
  let carol: { token: string; userId: string } // member of Acme
  let eve: { token: string; userId: string } // Globex

  const api = (token: string, method: string, path: string, json?: unknown) => ownerApi(h, token, method, path, json)
  const devInvoke = (token: string, app: string, fn: string, input: unknown) =>
    api(token, 'POST', `/v1/apps/${app}/dev/ada/functions/${fn}/invoke`, { input })

  async function connection(userId: string, input: { kind: 'personal' | 'organisation'; key: string; integration?: string }): Promise<string> {
    return createTestConnection(h, { userId, kind: input.kind, values: { SHOP_API_KEY: input.key }, ...(input.integration ? { integration: input.integration } : {}) })
  }

  before(async () => {
    h = await startHarness()
    alice = await h.createOwner('alice@acme.test', 'Acme')
    carol = await h.createOwner('carol@acme.test', 'Acme')
    eve = await h.createOwner('eve@globex.test', 'Globex')
    const providerFiles = {
      'service.yaml': manifest('shop', PROVIDER, 'private'),
      'functions/orders.ts': PROVIDER_CODE,
      'functions/plain.ts': `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), handler: ({ integration }) => ({ integration }) })
`,
    }
    const consumerFiles = {
      'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/call.ts': CONSUMER_CODE, 'functions/on-order.ts': HANDLER_CODE,
    }
    for (const [slug, files] of [['shop', providerFiles], ['desk', consumerFiles]] as const) {
      assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug, visibility: 'private' } })).status, 201)
      await deployApp(h, alice.token, slug, files)
      const dev = await h.request(`/v1/apps/${slug}/dev/ada/deployments`, { token: alice.token, json: bundle(files) })
      assert.equal(dev.status, 201, await dev.text())
    }
  })
  after(() => h.close())

  test('a consumer\'s development call answers the declared fake by default, after the same slot, operation and capability checks', async () => {
    const listed = await api(alice.token, 'GET', '/v1/apps/desk/dev/ada/integrations')
    assert.deepEqual(listed.body, { integrations: [] })
    const fake = await devInvoke(alice.token, 'desk', 'callShop', { slot: 'shop', operation: 'orders.list' })
    assert.deepEqual(fake.body.value, FAKE_ORDERS, fake.text)
    const noFake = await devInvoke(alice.token, 'desk', 'callShop', { slot: 'shop', operation: 'orders.get' })
    assert.equal(noFake.body.error.code, 'INTEGRATION_FAKE_NOT_DECLARED', noFake.text)
    assert.match(noFake.body.error.message, /PUT \/v1\/apps\/desk\/dev\/ada\/integrations\/orders\/mode/)
    const notGranted = await devInvoke(alice.token, 'desk', 'callShop', { slot: 'shop', operation: 'orders.cancel' })
    assert.equal(notGranted.body.error.code, 'INTEGRATION_CAPABILITY_NOT_GRANTED', 'a fake never skips the capability check')
    assert.equal((await devInvoke(alice.token, 'desk', 'callShop', { slot: 'nope', operation: 'orders.list' })).body.error.code, 'SLOT_NOT_FOUND')
  })

  test('live mode calls through the app\'s real binding, as production does', async () => {
    const set = await api(alice.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/orders/mode', { mode: 'live' })
    assert.equal(set.status, 200, set.text)
    assert.equal(set.body.integration.mode, 'live')
    assert.equal((await devInvoke(alice.token, 'desk', 'callShop', { slot: 'shop', operation: 'orders.list' })).body.error.code, 'INTEGRATION_NOT_BOUND')
    const id = await connection(alice.userId, { kind: 'personal', key: KEY })
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: id })).status, 200)
    const live = await devInvoke(alice.token, 'desk', 'callShop', { slot: 'shop', operation: 'orders.get' })
    assert.equal(live.body.ok, true, live.text)
    assert.deepEqual(live.body.value.integration, { connectionId: id, trigger: 'operation', operation: 'orders.get' })
    assert.equal(live.body.value.digest, digest(KEY))
    // Back to fake: the binding stays, the fake answers again.
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/orders/mode', { mode: 'fake' })).body.integration.mode, 'fake')
    assert.deepEqual((await devInvoke(alice.token, 'desk', 'callShop', { slot: 'shop', operation: 'orders.list' })).body.value, FAKE_ORDERS)
  })

  test('production events never reach a development namespace: the same slot there runs no handler', async () => {
    // desk's shop slot is bound (live mode test); production's callShop makes the provider emit once.
    const desk = (await findAppBySlug(h.t.db, 'desk'))!
    const fn = (await h.platform.functions.resolve(desk, 'callShop'))!
    const result = await h.platform.functions.run(fn, { input: { slot: 'shop', operation: 'orders.get', mode: 'emit' }, user: null })
    assert.deepEqual(result.ok && result.value, { emitted: 1 }, JSON.stringify(result))
    assert.equal(await h.platform.events.runDue(), 1)
    // A delivery's log lines are stored after it ends (not awaited by runDue): wait for production's.
    const handledBy = () => h.t.db.query<{ dev_name: string }>(
      `select r.dev_name from platform.function_logs l join platform.releases r on r.id = l.release_id
        where l.app_id = $1 and l.message = 'received evt-production-1'`, [desk.id])
    let handled = await handledBy()
    for (const deadline = Date.now() + 10_000; handled.length === 0 && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      handled = await handledBy()
    }
    assert.deepEqual(handled.map((row) => row.dev_name), [''], 'production\'s handler only, never the ada namespace\'s')
  })

  test('mode refusals: a bad mode, an integration no slot uses, a namespace without a release, Use only, strangers', async () => {
    const bad = await api(alice.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/orders/mode', { mode: 'sandbox' })
    assert.deepEqual([bad.status, bad.body.error.code, bad.body.error.details], [400, 'VALIDATION_FAILED', { field: 'mode' }])
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/orders/mode', { mode: 'live', extra: 1 })).body.error.code, 'VALIDATION_FAILED')
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/crm/mode', { mode: 'live' })).body.error.code, 'INTEGRATION_NOT_FOUND')
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/Not_Kebab/mode', { mode: 'live' })).body.error.code, 'VALIDATION_FAILED')
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/dev/zed/integrations/orders/mode', { mode: 'live' })).body.error.code, 'DEV_NAMESPACE_NOT_FOUND')
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/members/carol@acme.test', { role: 'use' })).status, 201)
    const use = await api(carol.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/orders/mode', { mode: 'live' })
    assert.deepEqual([use.status, use.body.error.code], [403, 'FORBIDDEN'])
    assert.equal((await api(eve.token, 'GET', '/v1/apps/desk/dev/ada/integrations')).body.error.code, 'APP_NOT_FOUND')
    assert.equal((await api(alice.token, 'DELETE', '/v1/apps/desk/members/carol@acme.test')).status, 204)
  })

  test('a provider\'s operation, sync and webhook Functions need a test connection in development; other Functions do not', async () => {
    const op = await devInvoke(alice.token, 'shop', 'ordersImpl', {})
    assert.equal(op.status, 409, op.text)
    assert.equal(op.body.error.code, 'INTEGRATION_TEST_CONNECTION_REQUIRED')
    assert.deepEqual(op.body.error.details, { integration: 'orders', function: 'ordersImpl', trigger: 'operation' })
    for (const [fn, trigger] of [['syncImpl', 'sync'], ['hookImpl', 'webhook']]) {
      const refused = await devInvoke(alice.token, 'shop', fn!, {})
      assert.deepEqual([refused.body.error.code, refused.body.error.details.trigger], ['INTEGRATION_TEST_CONNECTION_REQUIRED', trigger])
    }
    const plain = await devInvoke(alice.token, 'shop', 'plain', {})
    assert.deepEqual(plain.body, { ...plain.body, ok: true, value: { integration: null } })
  })

  test('choosing a test connection: only one the developer may use, of this integration, with Edit on the provider', async () => {
    const carols = await connection(carol.userId, { kind: 'personal', key: CAROL_KEY })
    const others = await api(alice.token, 'PUT', '/v1/apps/shop/dev/ada/integrations/orders/test-connection', { connectionId: carols })
    assert.equal(others.body.error.code, 'CONNECTION_NOT_FOUND', 'another person\'s personal connection is not even visible')
    const ghost = await api(alice.token, 'PUT', '/v1/apps/shop/dev/ada/integrations/orders/test-connection', { connectionId: '0b5f3c1e-1111-4222-8333-944455556666' })
    assert.equal(ghost.body.error.code, 'CONNECTION_NOT_FOUND')
    const notProvided = await api(alice.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/orders/test-connection', { connectionId: carols })
    assert.equal(notProvided.body.error.code, 'INTEGRATION_NOT_FOUND', 'desk does not provide orders')
    // Carol may Edit shop now, but she cannot choose Alice's personal connection, and Alice's choice does not lend her its credentials.
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/shop/members/carol@acme.test', { role: 'edit' })).status, 201)
    const alices = await connection(alice.userId, { kind: 'personal', key: KEY })
    assert.equal((await api(carol.token, 'PUT', '/v1/apps/shop/dev/ada/integrations/orders/test-connection', { connectionId: alices })).body.error.code, 'CONNECTION_NOT_FOUND')
    const chosen = await api(alice.token, 'PUT', '/v1/apps/shop/dev/ada/integrations/orders/test-connection', { connectionId: alices })
    assert.equal(chosen.status, 200, chosen.text)
    assert.equal(chosen.body.integration.testConnectionId, alices)
    const borrowed = await devInvoke(carol.token, 'shop', 'ordersImpl', {})
    assert.deepEqual([borrowed.status, borrowed.body.error.code], [404, 'CONNECTION_NOT_FOUND'], borrowed.text)
    assert.equal((await api(alice.token, 'DELETE', '/v1/apps/shop/members/carol@acme.test')).status, 204)
  })

  test('with a test connection the provider\'s Functions run with ctx.integration and its credentials; clearing it refuses again', async () => {
    const listed = await api(alice.token, 'GET', '/v1/apps/shop/dev/ada/integrations')
    const connectionId = listed.body.integrations.find((s: any) => s.integration === 'orders').testConnectionId
    assert.ok(connectionId, listed.text)
    const op = await devInvoke(alice.token, 'shop', 'ordersImpl', {})
    assert.equal(op.body.ok, true, op.text)
    assert.deepEqual(op.body.value, { live: true, integration: { connectionId, trigger: 'operation', operation: 'orders.list' }, digest: digest(KEY) })
    assert.ok(!op.text.includes(KEY), 'the value itself never comes back')
    const hook = await devInvoke(alice.token, 'shop', 'hookImpl', {})
    assert.deepEqual(hook.body.value.integration, { connectionId, trigger: 'webhook', operation: null })
    const sync = await devInvoke(alice.token, 'shop', 'syncImpl', {})
    assert.deepEqual(sync.body.value.integration, { connectionId, trigger: 'sync', operation: null })
    // Rejected by the external system: refused as production refuses, with the page to reconnect it on.
    assert.ok(await markReconnectRequired(h.t.db, { connection: (await findConnection(h.t.db, connectionId))!, reason: 'rejected', at: h.clock.now() }))
    const rejected = await devInvoke(alice.token, 'shop', 'ordersImpl', {})
    assert.equal(rejected.body.error.code, 'INTEGRATION_RECONNECT_REQUIRED', rejected.text)
    assert.equal(rejected.body.error.details.connectUrl, `${AUTH}/connections/${connectionId}`)
    await h.t.db.query(`update platform.connections set status = 'active' where id = $1`, [connectionId])
    const cleared = await api(alice.token, 'DELETE', '/v1/apps/shop/dev/ada/integrations/orders/test-connection')
    assert.equal(cleared.body.integration.testConnectionId, null)
    assert.equal((await devInvoke(alice.token, 'shop', 'ordersImpl', {})).body.error.code, 'INTEGRATION_TEST_CONNECTION_REQUIRED')
  })

  test('an injected event runs the consumer\'s development handler with the envelope, the declared fake as data by default', async () => {
    const injected = await api(alice.token, 'POST', '/v1/apps/desk/dev/ada/integrations/orders/events', { type: 'order.created' })
    assert.equal(injected.status, 200, injected.text)
    const [delivery] = injected.body.deliveries
    assert.equal(injected.body.deliveries.length, 1)
    assert.deepEqual([delivery.slot, delivery.function, delivery.ok], ['shop', 'onOrder', true], injected.text)
    const binding = (await api(alice.token, 'GET', '/v1/apps/desk/integrations')).body.slots.find((s: any) => s.slot === 'shop').binding
    assert.deepEqual(delivery.value, {
      seen: {
        id: injected.body.event.id, type: 'order.created', occurredAt: h.clock.now().toISOString(), integration: 'shop', provider: 'custom',
        bindingId: binding?.id ?? UNBOUND_BINDING_ID, data: FAKE_EVENT,
      },
      user: null,
    })
    assert.match(injected.body.event.id, /^dev-/)
    assert.deepEqual(delivery.logs.map((line: any) => line.message), [`received ${injected.body.event.id}`])
    const given = await api(alice.token, 'POST', '/v1/apps/desk/dev/ada/integrations/orders/events',
      { type: 'order.created', id: 'evt-7', data: { orderId: 'explode', total: 1 } })
    assert.equal(given.body.event.id, 'evt-7')
    assert.deepEqual([given.body.deliveries[0].ok, given.body.deliveries[0].error.code], [false, 'HANDLER_REFUSED'], 'a failing handler is reported, not retried')
  })

  test('injection refusals: undeclared type, data that is not an object or too large, a type no slot receives', async () => {
    const post = (json: unknown) => api(alice.token, 'POST', '/v1/apps/desk/dev/ada/integrations/orders/events', json)
    assert.equal((await post({ type: 'order.exploded' })).body.error.code, 'INTEGRATION_EVENT_TYPE_NOT_DECLARED')
    assert.equal((await post({ type: 'order.created', data: [1] })).body.error.code, 'INTEGRATION_EVENT_INVALID')
    const large = await post({ type: 'order.created', data: { orderId: 'x'.repeat(64 * 1024), total: 1 } })
    assert.deepEqual([large.status, large.body.error.code], [413, 'INTEGRATION_EVENT_TOO_LARGE'])
    // order.cancelled needs orders.write, which desk's slot does not request.
    assert.equal((await post({ type: 'order.cancelled', data: { orderId: 'o1' } })).body.error.code, 'INTEGRATION_EVENT_NOT_SUBSCRIBED')
    assert.equal((await post({ type: 'order.created', id: '' })).body.error.code, 'INTEGRATION_EVENT_INVALID')
    assert.equal((await post({ type: 'order.created', data: { orderId: 'a\u0000b', total: 1 } })).body.error.code, 'INTEGRATION_EVENT_INVALID', 'as emit refuses it')
    assert.equal((await api(alice.token, 'POST', '/v1/apps/desk/dev/ada/integrations/crm/events', { type: 'x.y' })).body.error.code, 'INTEGRATION_NOT_FOUND')
  })

  test('deleting the development namespace removes its settings with it', async () => {
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/dev/ada/integrations/orders/mode', { mode: 'live' })).status, 200)
    const [before] = await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.dev_integration_settings')
    assert.ok(before!.n >= 1)
    assert.equal((await api(alice.token, 'DELETE', '/v1/apps/desk/dev/ada')).status, 204)
    assert.equal((await api(alice.token, 'DELETE', '/v1/apps/shop/dev/ada')).status, 204)
    const [after] = await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.dev_integration_settings')
    assert.equal(after!.n, 0)
  })
})
