import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { ServerType } from '@hono/node-server'
import { bundle, manifest, startHarness, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { consumerManifest, createTestConnection, listOrders, ordersContract } from '../../../platform/test/integration-fixture.ts'
import { capture, serveHarness } from '../../test/cli-harness.ts'
import { main } from '../main.ts'

const API_KEY = 'sk_live_cli_integrations_3a9e51'

const PROVIDER = `functions:
  - name: ordersImpl
    entrypoint: functions/orders.ts
    access: system
${ordersContract({ operations: [listOrders('ordersImpl')] })}`

const PROVIDER_CODE = `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), handler: () => [] })
`

const CONSUMER = consumerManifest({
  slots: {
    shop: { integration: 'orders', capabilities: ['orders.read'] },
    my_shop: { integration: 'orders', account: 'calling_user', capabilities: ['orders.read'] },
  },
})

describe(`service integrations and connections over HTTP (${backend})`, () => {
  let h: Harness
  let server: ServerType
  let url: string
  let alice: { token: string; userId: string } // Acme, owns the provider app
  let bob: { token: string; userId: string } // Acme, owns the consumer app
  let eve: { token: string; userId: string } // another organisation
  let connectionId: string

  async function deploy(token: string, slug: string, files: Record<string, string>) {
    assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'private' } })).status, 201)
    const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: bundle(files) })
    assert.equal(res.status, 201, await res.text())
  }

  before(async () => {
    h = await startHarness()
    ;({ server, url } = await serveHarness(h))
    alice = await h.createOwner('alice@acme.test', 'Acme')
    bob = await h.createOwner('bob@acme.test', 'Acme')
    eve = await h.createOwner('eve@globex.test', 'Globex')
    await deploy(alice.token, 'shop', { 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/orders.ts': PROVIDER_CODE })
    await deploy(bob.token, 'desk', { 'service.yaml': manifest('desk', CONSUMER, 'private') })
    connectionId = await createTestConnection(h, { userId: bob.userId, kind: 'personal', label: 'bob\'s shop', values: { SHOP_API_KEY: API_KEY } })
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

  test('connections list shows id, integration, provider app, kind, status and label, never the value', async () => {
    const listed = await run(bob.token, 'connections', 'list')
    assert.equal(listed.code, 0, listed.err)
    assert.equal(listed.out.length, 1)
    assert.match(listed.out[0]!, new RegExp(`^${connectionId}\\s+orders\\s+shop\\s+personal\\s+active\\s+bob's shop$`))
    assert.ok(!listed.out.join('\n').includes(API_KEY))
    const none = await run(eve.token, 'connections', 'list')
    assert.equal(none.code, 0, none.err)
    assert.deepEqual(none.out, ['no connections yet: connect one on the platform\'s auth pages (/connections/new)'])
  })

  test('bind, list and unbind an account: app slot', async () => {
    const before = await run(bob.token, 'integrations', 'list', 'desk')
    assert.equal(before.code, 0, before.err)
    assert.equal(before.out.length, 2)
    assert.match(before.out[0]!, /^my_shop\s+orders\s+calling_user\s+unbound\s+-$/)
    assert.match(before.out[1]!, /^shop\s+orders\s+app\s+unbound\s+-$/)
    const bound = await run(bob.token, 'integrations', 'bind', 'desk', 'shop', '--connection', connectionId)
    assert.equal(bound.code, 0, bound.err)
    assert.deepEqual(bound.out, [`bound shop of desk to connection ${connectionId} (orders.read)`])
    const listed = await run(bob.token, 'integrations', 'list', 'desk')
    assert.match(listed.out[1]!, new RegExp(`^shop\\s+orders\\s+app\\s+active\\s+${connectionId}$`))
    const unbound = await run(bob.token, 'integrations', 'unbind', 'desk', 'shop')
    assert.equal(unbound.code, 0, unbound.err)
    assert.deepEqual(unbound.out, ['shop of desk is unbound'])
    assert.match((await run(bob.token, 'integrations', 'list', 'desk')).out[1]!, /^shop\s+orders\s+app\s+unbound\s+-$/)
  })

  test('refusals exit 1 with the platform code', async () => {
    const person = await run(bob.token, 'integrations', 'bind', 'desk', 'my_shop', '--connection', connectionId)
    assert.equal(person.code, 1)
    assert.match(person.err, /^error BINDING_NEEDS_PERSON/)
    const noSlot = await run(bob.token, 'integrations', 'bind', 'desk', 'nope', '--connection', connectionId)
    assert.match(noSlot.err, /^error SLOT_NOT_FOUND/)
    const unknown = await run(bob.token, 'integrations', 'bind', 'desk', 'shop', '--connection', '00000000-0000-4000-8000-000000000000')
    assert.match(unknown.err, /^error CONNECTION_NOT_FOUND/)
    const notBound = await run(bob.token, 'integrations', 'unbind', 'desk', 'shop')
    assert.equal(notBound.code, 1)
    assert.match(notBound.err, /^error BINDING_NOT_FOUND/)
    const outsider = await run(eve.token, 'integrations', 'list', 'desk')
    assert.equal(outsider.code, 1)
    assert.match(outsider.err, /^error /)
    assert.equal(outsider.out.length, 0)
  })

  test('usage errors exit 2 without calling the platform', async () => {
    for (const args of [
      ['integrations', 'list'], ['integrations', 'bind', 'desk', 'shop'], ['integrations', 'bind', 'desk', '--connection', 'x'],
      ['integrations', 'unbind', 'desk'], ['integrations', 'link', 'desk', 'shop'], ['connections', 'list', 'extra'],
    ]) {
      const result = await run(bob.token, ...args)
      assert.equal(result.code, 2, args.join(' '))
      assert.match(result.err, /usage: service integrations|--connection <connectionId>|unknown command/)
      assert.equal(result.out.length, 0)
    }
  })
})
