/**
 * `service integrations dev ...`, `catalog` and `deliveries` against a real platform over HTTP with real Deno Functions:
 * a provider "shop" publishing "orders" (a fake for orders.list and for order.created) and
 * a consumer "desk" whose slot's events run onOrder, both deployed to the development
 * namespace "ada". Each command is checked by its effect (a development call answering the
 * fake or going live, a provider Function running on the chosen connection, a handler's
 * outcome and log lines), with --json, the refusals and the next command they name; then
 * the contracts the builder may use and the production deliveries of events the provider
 * emitted.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { ServerType } from '@hono/node-server'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { consumerManifest, createTestConnection, deployApp, listOrders, ORDER_CREATED, ordersContract } from '../../../platform/test/integration-fixture.ts'
import { findAppBySlug } from '../../../platform/src/apps/apps.ts'
import { capture, serveHarness } from '../../test/cli-harness.ts'
import { main } from '../main.ts'

const KEY = 'sk_cli_dev_integrations_51c0e7'
const FAKE_ORDERS = { orders: [{ id: 'fake-1', total: 12.5 }] }

const PROVIDER = `functions:
  - name: ordersImpl
    entrypoint: functions/orders.ts
    access: system
${ordersContract({ operations: [{ ...listOrders('ordersImpl'), fake: FAKE_ORDERS }], events: [{ ...ORDER_CREATED, fake: { orderId: 'fake-1' } }] })}`

const PROVIDER_CODE = `import { defineFunction, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({ emit: optional(string()) }),
  async handler({ input, integration, secrets }) {
    if (input.emit) return { emitted: await integration.emit({ type: 'order.created', id: 'evt-' + input.emit, data: { orderId: input.emit } }) }
    return { connectionId: integration?.connectionId ?? null, keyLength: (await secrets.get('SHOP_API_KEY'))?.length ?? 0 }
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

const CALL_CODE = `import { defineFunction, object, optional, string } from '@service/server'
export default defineFunction({ input: object({ emit: optional(string()) }), handler: ({ input, integrations }) => integrations.use('shop').call('orders.list', input) })
`

const HANDLER_CODE = `import { defineFunction, errors, object, string } from '@service/server'
export default defineFunction({
  input: object({ id: string(), type: string(), occurredAt: string(), integration: string(), provider: string(), bindingId: string(),
    data: object({ orderId: string() }) }),
  handler({ input, log }) {
    log.info('received ' + input.data.orderId)
    if (input.data.orderId === 'explode') throw errors.conflict('HANDLER_REFUSED', 'no thanks \\u001b[31m')
    return { handled: input.data.orderId, id: input.id }
  },
})
`

describe(`service integrations dev, catalog and deliveries over HTTP (${backend})`, () => {
  let h: Harness
  let server: ServerType
  let url: string
  let alice: { token: string; userId: string } // Acme; owns shop and desk
  let carol: { token: string; userId: string } // Acme; Edit on shop, not the connection's owner
  let eve: { token: string; userId: string } // Globex
  let connectionId: string

  before(async () => {
    h = await startHarness()
    ;({ server, url } = await serveHarness(h))
    alice = await h.createOwner('alice@acme.test', 'Acme')
    carol = await h.createOwner('carol@acme.test', 'Acme')
    eve = await h.createOwner('eve@globex.test', 'Globex')
    const files = {
      shop: { 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/orders.ts': PROVIDER_CODE },
      desk: { 'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/call.ts': CALL_CODE, 'functions/on-order.ts': HANDLER_CODE },
    }
    for (const [slug, bundleFiles] of Object.entries(files)) {
      assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug, visibility: 'private' } })).status, 201)
      await deployApp(h, alice.token, slug, bundleFiles)
      const dev = await h.request(`/v1/apps/${slug}/dev/ada/deployments`, { token: alice.token, json: bundle(bundleFiles) })
      assert.equal(dev.status, 201, await dev.text())
    }
    assert.equal((await ownerApi(h, alice.token, 'PUT', '/v1/apps/shop/members/carol@acme.test', { role: 'edit' })).status, 201)
    connectionId = await createTestConnection(h, { userId: alice.userId, kind: 'personal', values: { SHOP_API_KEY: KEY } })
  })
  after(async () => {
    server.close()
    await h.close()
  })

  async function run(token: string, ...args: string[]) {
    const { io, out, err } = capture({ SERVICE_URL: url, SERVICE_TOKEN: token })
    const code = await main(args, io)
    return { code, out, err: err.join('\n') }
  }
  async function json(token: string, ...args: string[]) {
    const { code, out, err } = await run(token, ...args, '--json')
    const errLines = err === '' ? [] : err.split('\n').map((line) => JSON.parse(line) as Record<string, any>)
    return { code, result: out.length === 0 ? undefined : JSON.parse(out[0]!), error: errLines.at(-1)?.error as { code: string; message: string; next?: string; details?: any } | undefined }
  }
  const devCall = async () => (await ownerApi(h, alice.token, 'POST', '/v1/apps/desk/dev/ada/functions/callShop/invoke', { input: {} })).body

  test('list shows the defaults, mode switches a consumer namespace between the declared fakes and the live provider', async () => {
    const empty = await run(alice.token, 'integrations', 'dev', 'list', '--dev', 'ada', '--app', 'desk')
    assert.equal(empty.code, 0, empty.err)
    assert.deepEqual(empty.out, ['desk (development namespace ada): every integration answers its declared fakes (the default); no test connection chosen'])
    assert.deepEqual((await devCall()).value, FAKE_ORDERS)

    const live = await json(alice.token, 'integrations', 'dev', 'mode', 'orders', 'live', '--dev', 'ada', '--app', 'desk')
    assert.equal(live.code, 0, JSON.stringify(live.error))
    assert.deepEqual(Object.keys(live.result.integration).sort(), ['integration', 'mode', 'testConnectionId', 'updatedAt'])
    assert.deepEqual([live.result.integration.integration, live.result.integration.mode], ['orders', 'live'])
    assert.equal((await devCall()).error.code, 'INTEGRATION_NOT_BOUND', 'live goes through the app\'s real (absent) binding')
    const listed = await run(alice.token, 'integrations', 'dev', 'list', '--dev', 'ada', '--app', 'desk')
    assert.equal(listed.out.length, 1)
    assert.match(listed.out[0]!, /^orders\s+live\s+-$/)

    const fake = await run(alice.token, 'integrations', 'dev', 'mode', 'orders', 'fake', '--dev', 'ada', '--app', 'desk')
    assert.deepEqual([fake.code, fake.out], [0, ['desk (development namespace ada): calls to orders now answer the operations\' declared fakes']])
    assert.deepEqual((await devCall()).value, FAKE_ORDERS)
  })

  test('test-connection chooses the connection a provider namespace runs on, and none clears it; another person may not use it', async () => {
    const before = await ownerApi(h, alice.token, 'POST', '/v1/apps/shop/dev/ada/functions/ordersImpl/invoke', { input: {} })
    assert.equal(before.body.error.code, 'INTEGRATION_TEST_CONNECTION_REQUIRED')

    const chosen = await json(alice.token, 'integrations', 'dev', 'test-connection', 'orders', connectionId, '--dev', 'ada', '--app', 'shop')
    assert.equal(chosen.code, 0, JSON.stringify(chosen.error))
    assert.equal(chosen.result.integration.testConnectionId, connectionId)
    const ran = await ownerApi(h, alice.token, 'POST', '/v1/apps/shop/dev/ada/functions/ordersImpl/invoke', { input: {} })
    assert.deepEqual(ran.body.value, { connectionId, keyLength: KEY.length }, ran.text)
    const listed = await run(alice.token, 'integrations', 'dev', 'list', '--dev', 'ada', '--app', 'shop')
    assert.match(listed.out[0]!, new RegExp(`^orders\\s+fake\\s+${connectionId}$`))

    const refused = await json(carol.token, 'integrations', 'dev', 'test-connection', 'orders', connectionId, '--dev', 'ada', '--app', 'shop')
    assert.deepEqual([refused.code, refused.error?.code, refused.error?.next], [1, 'CONNECTION_NOT_FOUND', 'service connections list'])

    const cleared = await run(alice.token, 'integrations', 'dev', 'test-connection', 'orders', 'none', '--dev', 'ada', '--app', 'shop')
    assert.equal(cleared.code, 0, cleared.err)
    assert.match(cleared.out[0]!, /orders has no test connection/)
    const after = await ownerApi(h, alice.token, 'POST', '/v1/apps/shop/dev/ada/functions/ordersImpl/invoke', { input: {} })
    assert.equal(after.body.error.code, 'INTEGRATION_TEST_CONNECTION_REQUIRED')
  })

  test('inject runs the namespace\'s handler with the declared fake, or --data and --id; its logs go to stderr', async () => {
    const injected = await run(alice.token, 'integrations', 'dev', 'inject', 'orders', 'order.created', '--dev', 'ada', '--app', 'desk')
    assert.equal(injected.code, 0, injected.err)
    assert.match(injected.err, /received fake-1/)
    const printedOut = injected.out.join('\n')
    assert.match(printedOut, /^shop \(onOrder\): \{/)
    assert.match(printedOut, /"handled": "fake-1"/)

    const given = await json(alice.token, 'integrations', 'dev', 'inject', 'orders', 'order.created', '--dev', 'ada', '--app', 'desk',
      '--data', '{"orderId":"o-7"}', '--id', 'evt-cli-1')
    assert.equal(given.code, 0, JSON.stringify(given.error))
    assert.deepEqual(given.result.event, { id: 'evt-cli-1', type: 'order.created' })
    const [delivery] = given.result.deliveries
    assert.deepEqual([delivery.slot, delivery.function, delivery.ok, delivery.value], ['shop', 'onOrder', true, { handled: 'o-7', id: 'evt-cli-1' }])
    assert.deepEqual(delivery.logs.map((line: { message: string }) => line.message), ['received o-7'])
  })

  test('a failing handler exits 1 with its code, escaped, and names service logs', async () => {
    const failed = await run(alice.token, 'integrations', 'dev', 'inject', 'orders', 'order.created', '--dev', 'ada', '--app', 'desk', '--data', '{"orderId":"explode"}')
    assert.equal(failed.code, 1)
    assert.ok(!failed.err.includes('\u001b'), 'no terminal control reaches the screen')
    assert.match(failed.err, /shop \(onOrder\): error HANDLER_REFUSED \(409\): no thanks \\x1b\[31m/)
    assert.match(failed.err, /next: service logs --app desk --dev ada --function onOrder/)
    const asJson = await json(alice.token, 'integrations', 'dev', 'inject', 'orders', 'order.created', '--dev', 'ada', '--app', 'desk', '--data', '{"orderId":"explode"}')
    assert.equal(asJson.code, 1)
    assert.equal(asJson.result.deliveries[0].ok, false)
    assert.equal(asJson.error?.code, 'HANDLER_REFUSED')
    assert.deepEqual(asJson.error?.details.failed.map((f: { slot: string; code: string }) => [f.slot, f.code]), [['shop', 'HANDLER_REFUSED']])
  })

  test('refusals: the command line (exit 2, nothing sent), the platform\'s codes with the next command, strangers', async () => {
    for (const args of [
      ['integrations', 'dev', 'list', '--app', 'desk'], // no --dev
      ['integrations', 'dev', 'mode', 'orders', 'sandbox', '--dev', 'ada', '--app', 'desk'],
      ['integrations', 'dev', 'mode', 'orders', '--dev', 'ada', '--app', 'desk'],
      ['integrations', 'dev', 'inject', 'orders', 'order.created', '--dev', 'ada', '--app', 'desk', '--data', '{not json'],
      ['integrations', 'dev', 'list', '--dev', 'ada', '--app', 'desk', '--data', '{}'],
      ['integrations', 'dev', 'sync', '--dev', 'ada', '--app', 'desk'],
    ]) {
      const refused = await json(alice.token, ...args)
      assert.deepEqual([refused.code, refused.error?.code], [2, 'USAGE'], args.join(' '))
    }
    const listing = await json(alice.token, 'integrations', 'dev', 'list', '--dev', 'ada', '--app', 'desk')
    assert.deepEqual(listing.result.integrations.map((s: { mode: string }) => s.mode), ['fake'], 'the refused mode changed nothing')

    const noNamespace = await json(alice.token, 'integrations', 'dev', 'mode', 'orders', 'live', '--dev', 'zed', '--app', 'desk')
    assert.deepEqual([noNamespace.code, noNamespace.error?.code, noNamespace.error?.next], [1, 'DEV_NAMESPACE_NOT_FOUND', 'service deploy <dir> --dev zed'])
    const undeclared = await json(alice.token, 'integrations', 'dev', 'inject', 'orders', 'order.shipped', '--dev', 'ada', '--app', 'desk')
    assert.deepEqual([undeclared.code, undeclared.error?.code], [1, 'INTEGRATION_EVENT_TYPE_NOT_DECLARED'])
    const stranger = await json(eve.token, 'integrations', 'dev', 'list', '--dev', 'ada', '--app', 'desk')
    assert.deepEqual([stranger.code, stranger.error?.code], [1, 'APP_NOT_FOUND'])
  })
  test('catalog lists the contracts the builder may use from the app; strangers get APP_NOT_FOUND', async () => {
    const listed = await run(alice.token, 'integrations', 'catalog', 'desk')
    assert.equal(listed.code, 0, listed.err)
    assert.match(listed.out[0]!, /^orders\s+shop\s+Orders$/)
    assert.match(listed.out[1]!, /^  operation orders\.list\s+orders\.read\s+Lists orders$/)
    assert.match(listed.out[2]!, /^  event     order\.created\s+orders\.read\s+An order was placed$/)
    const asJson = await json(alice.token, 'integrations', 'catalog', 'desk')
    assert.deepEqual(asJson.result.integrations.map((i: { name: string; provider: { appSlug: string } }) => [i.name, i.provider.appSlug]), [['orders', 'shop']])
    assert.ok(!JSON.stringify(asJson.result).includes('ordersImpl'), 'never how the provider implements it')
    const stranger = await json(eve.token, 'integrations', 'catalog', 'desk')
    assert.deepEqual([stranger.code, stranger.error?.code], [1, 'APP_NOT_FOUND'])
  })

  test('deliveries pages the app\'s production event deliveries with state, attempts and last error, never the payload', async () => {
    const none = await run(alice.token, 'integrations', 'deliveries', 'desk')
    assert.deepEqual([none.code, none.out], [0, ['no event deliveries to desk']])
    // Production: desk's slot bound to alice's connection; the provider emits through desk's call.
    assert.equal((await ownerApi(h, alice.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId })).status, 200)
    const desk = (await findAppBySlug(h.t.db, 'desk'))!
    const callShop = (await h.platform.functions.resolve(desk, 'callShop'))!
    for (const orderId of ['o-1', 'explode']) {
      const called = await h.platform.functions.run(callShop, { input: { emit: orderId }, user: null })
      assert.deepEqual(called.ok && called.value, { emitted: 1 }, JSON.stringify(called))
    }
    assert.equal(await h.platform.events.runDue(), 2)

    const listed = await run(alice.token, 'integrations', 'deliveries', 'desk')
    assert.equal(listed.code, 0, listed.err)
    assert.equal(listed.out.length, 2)
    assert.ok(listed.out.some((line) => /order\.created\s+shop\s+delivered\s+1$/.test(line)), listed.out.join('\n'))
    const failing = listed.out.find((line) => /\swaiting\s/.test(line))
    assert.match(failing ?? '', /order\.created\s+shop\s+waiting\s+1 next \S+ HANDLER_REFUSED: no thanks \\x1b\[31m$/, listed.out.join('\n'))
    assert.ok(!listed.out.join('\n').includes('explode'), 'never the payload')

    const firstPage = await json(alice.token, 'integrations', 'deliveries', 'desk', '--limit', '1')
    assert.equal(firstPage.result.deliveries.length, 1)
    assert.equal(typeof firstPage.result.nextCursor, 'string')
    const human = await run(alice.token, 'integrations', 'deliveries', 'desk', '--limit', '1')
    assert.equal(human.out.at(-1), `more: service integrations deliveries desk --cursor ${firstPage.result.nextCursor}`)
    const secondPage = await json(alice.token, 'integrations', 'deliveries', 'desk', '--limit', '1', '--cursor', firstPage.result.nextCursor)
    assert.deepEqual([secondPage.result.deliveries.length, secondPage.result.nextCursor], [1, null])
    assert.notEqual(secondPage.result.deliveries[0].id, firstPage.result.deliveries[0].id)
    const waiting = await json(alice.token, 'integrations', 'deliveries', 'desk', '--state', 'waiting')
    assert.deepEqual(waiting.result.deliveries.map((d: { lastError: { code: string } }) => d.lastError.code), ['HANDLER_REFUSED'])

    const badState = await json(alice.token, 'integrations', 'deliveries', 'desk', '--state', 'lost')
    assert.deepEqual([badState.code, badState.error?.code], [1, 'VALIDATION_FAILED'])
    const misplaced = await json(alice.token, 'integrations', 'list', 'desk', '--state', 'waiting')
    assert.deepEqual([misplaced.code, misplaced.error?.code], [2, 'USAGE'])
    const stranger = await json(eve.token, 'integrations', 'deliveries', 'desk')
    assert.deepEqual([stranger.code, stranger.error?.code], [1, 'APP_NOT_FOUND'])
  })
})
