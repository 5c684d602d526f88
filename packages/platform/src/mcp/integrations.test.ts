/**
 * The MCP integration tools doing their work, over Streamable HTTP with the official client:
 * the published contracts an app may use, a development session's mode (the declared fake
 * answering a consumer's call), an injected event reaching the consumer's handler with the
 * declared fake payload, and the deliveries list (PGlite, or PostgreSQL with DATABASE_URL).
 * Refusals are compared with the owner API's in mcp.test.ts.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { backend } from '../../test/test-db.ts'
import { manifest, ownerApi } from '../../test/harness.ts'
import { consumerManifest, listOrders, ORDER_CREATED, ordersContract, READ_AND_WRITE } from '../../test/integration-fixture.ts'
import { files, mcpClient, ok, startMcpPlatform, type McpPlatform } from './test-mcp.ts'

const FAKE_ORDERS = { orders: [{ id: 'fake-1', total: 12.5 }] }
const FAKE_EVENT = { orderId: 'fake-1', total: 12.5 }

const PROVIDER = `functions:
  - name: ordersImpl
    entrypoint: functions/orders.ts
    access: system
${ordersContract({ capabilities: READ_AND_WRITE, operations: [{ ...listOrders('ordersImpl'), fake: FAKE_ORDERS }], events: [{ ...ORDER_CREATED, fake: FAKE_EVENT }] })}`

const CONSUMER = `functions:
  - name: callShop
    entrypoint: functions/call.ts
    access: public
  - name: onOrder
    entrypoint: functions/on-order.ts
    access: system
${consumerManifest({ slots: { shop: { integration: 'orders', capabilities: ['orders.read'], events: 'onOrder' } } })}`

const SYSTEM_FUNCTION = `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), handler: () => ({ live: true }) })
`
const CALL = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ operation: string() }),
  handler: ({ input, integrations }) => integrations.use('shop').call(input.operation, {}),
})
`
const ON_ORDER = `import { defineFunction, number, object, string, uuid } from '@service/server'
export default defineFunction({
  input: object({ id: string(), type: string(), occurredAt: string(), integration: string(), provider: string(), bindingId: uuid(),
    data: object({ orderId: string(), total: number() }) }),
  handler({ input, log }) {
    log.info('received ' + input.data.orderId)
    return { seen: input.data }
  },
})
`

describe(`MCP integration tools (${backend})`, () => {
  let p: McpPlatform
  let client: Client
  let owner: { token: string; userId: string }
  before(async () => {
    p = await startMcpPlatform()
    owner = await p.h.createOwner('alice@acme.test', 'Acme')
    client = await mcpClient(p, owner.token)
    await ok(client, 'create_app', { slug: 'shop', visibility: 'private' })
    await ok(client, 'create_app', { slug: 'desk', visibility: 'private' })
    await ok(client, 'deploy_app', { appId: 'shop', files: files({ 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/orders.ts': SYSTEM_FUNCTION }) })
    const desk = files({ 'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/call.ts': CALL, 'functions/on-order.ts': ON_ORDER })
    await ok(client, 'deploy_app', { appId: 'desk', files: desk })
    await ok(client, 'deploy_app', { appId: 'desk', sessionId: 'ada', files: desk })
  })
  after(async () => {
    await client?.close()
    await p?.close()
  })

  test('list_custom_integrations answers the organisation\'s published contracts, as the endpoint does', async () => {
    const listed = await ok(client, 'list_custom_integrations', { appId: 'desk' })
    assert.deepEqual(listed.integrations.map((i: { name: string }) => i.name), ['orders'])
    assert.deepEqual(listed, (await ownerApi(p.h, owner.token, 'GET', '/v1/apps/desk/custom-integrations')).body)
  })

  test('a development session answers the declared fake; set_dev_integration_mode switches it', { timeout: 120_000 }, async () => {
    const fake = await ok(client, 'invoke_dev_function', { appId: 'desk', sessionId: 'ada', functionName: 'callShop', input: { operation: 'orders.list' } })
    assert.deepEqual(fake.value, FAKE_ORDERS, JSON.stringify(fake))
    const live = await ok(client, 'set_dev_integration_mode', { appId: 'desk', sessionId: 'ada', integrationName: 'orders', mode: 'live' })
    assert.equal(live.integration.mode, 'live')
    const unbound = await ok(client, 'invoke_dev_function', { appId: 'desk', sessionId: 'ada', functionName: 'callShop', input: { operation: 'orders.list' } })
    assert.equal(unbound.ok, false)
    assert.equal(unbound.error.code, 'INTEGRATION_NOT_BOUND')
    assert.equal((await ok(client, 'set_dev_integration_mode', { appId: 'desk', sessionId: 'ada', integrationName: 'orders', mode: 'fake' })).integration.mode, 'fake')
    const listed = await ownerApi(p.h, owner.token, 'GET', '/v1/apps/desk/dev/ada/integrations')
    assert.equal(listed.body.integrations[0].mode, 'fake', 'the owner API sees what the tool set')
  })

  test('inject_dev_integration_event runs the session\'s handler with the declared fake payload', { timeout: 120_000 }, async () => {
    const injected = await ok(client, 'inject_dev_integration_event', { appId: 'desk', sessionId: 'ada', integrationName: 'orders', type: 'order.created' })
    assert.equal(injected.event.type, 'order.created')
    assert.equal(injected.deliveries.length, 1)
    assert.equal(injected.deliveries[0].ok, true, JSON.stringify(injected))
    assert.deepEqual(injected.deliveries[0].value, { seen: FAKE_EVENT })
    const given = await ok(client, 'inject_dev_integration_event', {
      appId: 'desk', sessionId: 'ada', integrationName: 'orders', type: 'order.created', data: { orderId: 'o-7', total: 3 },
    })
    assert.deepEqual(given.deliveries[0].value, { seen: { orderId: 'o-7', total: 3 } })
    const logs = await ok(client, 'read_logs', { appId: 'desk', sessionId: 'ada', function: 'onOrder' })
    assert.deepEqual(logs.logs.map((line: { message: string }) => line.message).sort(), ['received fake-1', 'received o-7'])
  })

  test('list_integration_event_deliveries answers the endpoint\'s page', async () => {
    const listed = await ok(client, 'list_integration_event_deliveries', { appId: 'desk', limit: 10 })
    assert.deepEqual(listed, (await ownerApi(p.h, owner.token, 'GET', '/v1/apps/desk/integration-events?limit=10')).body)
  })
})
