/**
 * Publishing integration contracts (spec 2.6) end to end through the owner API: a deploy
 * publishes, a redeploy replaces, a release without the block unpublishes; names are unique
 * among the active apps of an organisation (race-safe); consumers are warned; the list shows
 * what a consumer needs and nothing of the provider's secrets.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { consumerManifest } from '../../test/integration-fixture.ts'
import { openPostgres } from '../db/postgres.ts'
import { ServiceError } from '../lib/errors.ts'
import type { Queryable } from '../db/db.ts'
import type { IntegrationContract } from '../manifest/index.ts'
import { publishContract } from './contracts.ts'

type Json = Record<string, any>

const SECRET_VALUE = 'sk_live_provider_own_4b1d9e'
const CLIENT_ID = 'orders-client-id-77'

/** A provider manifest section: the "orders" contract with the given capabilities. */
function provider(options: { name?: string; capabilities?: string[]; oauth?: boolean } = {}): string {
  const capabilities = options.capabilities ?? ['orders.read', 'orders.write']
  return `secrets:
  ORDERS_PROVIDER_KEY: required
functions:
  - name: listOrdersImpl
    entrypoint: functions/list.ts
    access: system
  - name: swapCodeImpl
    entrypoint: functions/list.ts
    access: system
provides:
  integration:
    name: ${options.name ?? 'orders'}
    title: Orders
    description: The shop's orders
    credentials:
      - name: SHOP_DOMAIN
        label: Shop domain
        secret: false
      - name: SHOP_API_KEY
        label: API key
${options.oauth === false ? '' : `    authorization:
      type: oauth2
      authorizationUrl: https://shop.example.com/authorize
      clientId: ${CLIENT_ID}
      scopes: [orders]
      exchange: swapCodeImpl
      accessToken: ORDERS_TOKEN_SECRET_NAME
`}    capabilities:
${capabilities.map((c) => `      - name: ${c}\n        description: ${c} access`).join('\n')}
    operations:
      - name: orders.list
        capability: ${capabilities[0]}
        function: listOrdersImpl
        description: Lists orders
        input:
          type: object
          properties:
            status: { type: string }
        output:
          type: array
        fake: [{ id: fake-order-secret-looking }]
    events:
      - type: order.created
        capability: ${capabilities[0]}
        description: An order was placed
        fake: { id: fake-event-payload }
`
}

function consumer(capabilities: string[], integration = 'orders'): string {
  return consumerManifest({ slots: { shop: { integration, capabilities } } })
}

const FUNCTION_FILE = { 'functions/list.ts': 'export default 1' }

describe(`published integration contracts (${backend})`, () => {
  let h: Harness
  let ana: string
  let bo: string
  let cy: string

  const deploy = async (token: string, slug: string, yaml: string, extra: Record<string, string> = {}, path = 'deployments') => {
    const res = await h.request(`/v1/apps/${slug}/${path}`, { token, json: bundle({ 'service.yaml': manifest(slug, yaml), ...FUNCTION_FILE, ...extra }) })
    return { status: res.status, body: (await res.json()) as Json }
  }
  const list = (token: string, slug: string, query = '') => ownerApi(h, token, 'GET', `/v1/apps/${slug}/custom-integrations${query}`)
  const createApp = async (token: string, slug: string) => {
    assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
  }

  before(async () => {
    h = await startHarness()
    ana = (await h.createOwner('ana@acme.test', 'Acme')).token
    bo = (await h.createOwner('bo@acme.test', 'Acme')).token
    cy = (await h.createOwner('cy@globex.test', 'Globex')).token
    for (const slug of ['shop', 'shop-copy', 'storefront']) await createApp(ana, slug)
    await createApp(bo, 'bo-app')
    await createApp(cy, 'globex-shop')
  })
  after(() => h.close())

  test('a deploy with provides.integration publishes the contract in the organisation', async () => {
    const before = await list(ana, 'storefront')
    assert.equal(before.status, 200, before.text)
    assert.deepEqual(before.body, { integrations: [], nextCursor: null })

    const published = await deploy(ana, 'shop', provider())
    assert.equal(published.status, 201, JSON.stringify(published.body))

    // Another app of the organisation, owned by someone else, sees it too.
    for (const [token, slug] of [[ana, 'storefront'], [bo, 'bo-app'], [ana, 'shop']] as const) {
      const { status, body } = await list(token, slug)
      assert.equal(status, 200)
      assert.deepEqual(body.integrations.map((i: Json) => i.name), ['orders'], slug)
    }
    const [orders] = (await list(ana, 'storefront')).body.integrations
    assert.deepEqual({ ...orders, publishedAt: undefined, provider: { ...orders.provider, appId: undefined } }, {
      name: 'orders',
      title: 'Orders',
      description: "The shop's orders",
      provider: { appId: undefined, appSlug: 'shop' },
      capabilities: [
        { name: 'orders.read', description: 'orders.read access' },
        { name: 'orders.write', description: 'orders.write access' },
      ],
      operations: [{
        name: 'orders.list',
        capability: 'orders.read',
        description: 'Lists orders',
        input: { type: 'object', properties: { status: { type: 'string' } } },
        output: { type: 'array' },
      }],
      events: [{ type: 'order.created', capability: 'orders.read', description: 'An order was placed' }],
      credentials: [
        { name: 'SHOP_DOMAIN', label: 'Shop domain', secret: false, optional: false },
        { name: 'SHOP_API_KEY', label: 'API key', secret: true, optional: false },
      ],
      oauth: true,
      sync: false,
      webhook: false,
      publishedAt: undefined,
    })
    assert.match(orders.provider.appId, /^[0-9a-f-]{36}$/)
    assert.equal(orders.publishedAt, h.clock.now().toISOString())
  })

  test("the list never shows the provider's secret names or values, Function names, OAuth client or fakes", async () => {
    const set = await ownerApi(h, ana, 'PUT', '/v1/apps/shop/secrets/ORDERS_PROVIDER_KEY', { value: SECRET_VALUE })
    assert.equal(set.status, 201, set.text)
    const { status, text } = await list(bo, 'bo-app')
    assert.equal(status, 200)
    for (const hidden of [SECRET_VALUE, 'ORDERS_PROVIDER_KEY', 'ORDERS_TOKEN_SECRET_NAME', CLIENT_ID, 'listOrdersImpl', 'swapCodeImpl',
      'fake-order-secret-looking', 'fake-event-payload', 'authorizationUrl', 'shop.example.com']) {
      assert.equal(text.includes(hidden), false, `${hidden} appears in ${text}`)
    }
  })

  test("the list holds only the contracts the caller may use (the provider's Use audience)", async () => {
    const narrowed = await ownerApi(h, ana, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'people', usePeople: [] })
    assert.equal(narrowed.status, 200, narrowed.text)
    assert.deepEqual((await list(bo, 'bo-app')).body.integrations, [])
    assert.deepEqual((await list(ana, 'storefront')).body.integrations.map((i: Json) => i.name), ['orders'])
    const named = await ownerApi(h, ana, 'PUT', '/v1/apps/shop/integration-audience', { usePeople: ['bo@acme.test'] })
    assert.equal(named.status, 200, named.text)
    assert.deepEqual((await list(bo, 'bo-app')).body.integrations.map((i: Json) => i.name), ['orders'])
    await ownerApi(h, ana, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'organisation', usePeople: [] })
    assert.deepEqual((await list(bo, 'bo-app')).body.integrations.map((i: Json) => i.name), ['orders'])
  })

  test('listing through an app needs Edit on it', async () => {
    assert.equal((await ownerApi(h, ana, 'PUT', '/v1/apps/storefront/members/bo@acme.test', { role: 'use' })).status, 201)
    const use = await list(bo, 'storefront')
    assert.equal(use.status, 403)
    assert.equal(use.body.error.code, 'FORBIDDEN')
    assert.equal((await ownerApi(h, ana, 'PUT', '/v1/apps/storefront/members/bo@acme.test', { role: 'edit' })).status, 200)
    assert.deepEqual((await list(bo, 'storefront')).body.integrations.map((i: Json) => i.name), ['orders'])
    assert.equal((await ownerApi(h, ana, 'DELETE', '/v1/apps/storefront/members/bo@acme.test')).status, 204)
  })

  test('a consumer deploy warns when a requested capability is not offered, and not when all are', async () => {
    const missing = await deploy(ana, 'storefront', consumer(['orders.read', 'orders.refund']))
    assert.equal(missing.status, 201, JSON.stringify(missing.body))
    assert.deepEqual(missing.body.warnings.map((w: Json) => [w.code, w.path]), [['MANIFEST_CAPABILITY_NOT_OFFERED', 'integrations.shop.capabilities[1]']])
    const dryRun = await h.request('/v1/apps/storefront/deployments?dryRun=true', {
      token: ana, json: bundle({ 'service.yaml': manifest('storefront', consumer(['orders.refund'])) }),
    })
    assert.deepEqual(((await dryRun.json()) as Json).warnings.map((w: Json) => w.code), ['MANIFEST_CAPABILITY_NOT_OFFERED'])
    const offered = await deploy(ana, 'storefront', consumer(['orders.read', 'orders.write']))
    assert.equal(offered.status, 201)
    assert.deepEqual(offered.body.warnings, [])
  })

  test('a consumer deploy warns when no active app of the organisation publishes the integration', async () => {
    const { status, body } = await deploy(ana, 'storefront', consumer(['invoices.read'], 'invoices'))
    assert.equal(status, 201)
    assert.deepEqual(body.warnings.map((w: Json) => [w.code, w.path]), [['MANIFEST_INTEGRATION_NOT_PUBLISHED', 'integrations.shop.integration']])
    // Another organisation's contract does not count.
    const elsewhere = await deploy(cy, 'globex-shop', consumer(['orders.read']))
    assert.deepEqual(elsewhere.body.warnings.map((w: Json) => w.code), ['MANIFEST_INTEGRATION_NOT_PUBLISHED'])
  })

  test('another app of the organisation cannot publish a name that an active app publishes', async () => {
    const taken = await deploy(ana, 'shop-copy', provider())
    assert.equal(taken.status, 422)
    assert.equal(taken.body.error.code, 'MANIFEST_INVALID')
    assert.deepEqual(taken.body.error.details.errors.map((p: Json) => [p.code, p.path]), [['MANIFEST_INTEGRATION_NAME_TAKEN', 'provides.integration.name']])
    const otherOwner = await deploy(bo, 'bo-app', provider())
    assert.equal(otherOwner.status, 422)
    assert.equal(otherOwner.body.error.details.errors[0].code, 'MANIFEST_INTEGRATION_NAME_TAKEN')
    const { body } = await list(ana, 'storefront')
    assert.deepEqual(body.integrations.map((i: Json) => i.provider.appSlug), ['shop'])
  })

  test('the same name is free in another organisation, and each organisation lists only its own', async () => {
    const { status, body } = await deploy(cy, 'globex-shop', provider({ capabilities: ['orders.view'] }))
    assert.equal(status, 201, JSON.stringify(body))
    assert.deepEqual((await list(cy, 'globex-shop')).body.integrations.map((i: Json) => [i.provider.appSlug, i.capabilities[0].name]), [['globex-shop', 'orders.view']])
    assert.deepEqual((await list(ana, 'storefront')).body.integrations.map((i: Json) => [i.provider.appSlug, i.capabilities[0].name]), [['shop', 'orders.read']])
  })

  test('a redeploy replaces the contract, and a failed deploy publishes nothing', async () => {
    h.clock.advance(60_000)
    const replaced = await deploy(ana, 'shop', provider({ capabilities: ['orders.view'], oauth: false }))
    assert.equal(replaced.status, 201, JSON.stringify(replaced.body))
    const [orders] = (await list(ana, 'storefront')).body.integrations
    assert.deepEqual(orders.capabilities.map((c: Json) => c.name), ['orders.view'])
    assert.equal(orders.oauth, false)
    assert.equal(orders.publishedAt, h.clock.now().toISOString())

    const failed = await deploy(ana, 'shop', provider({ name: 'orders-v2' }), { 'database/migrations/0001_bad.sql': 'select * from no_such_table;' })
    assert.equal(failed.status, 422)
    assert.equal(failed.body.error.code, 'MIGRATION_FAILED')
    assert.deepEqual((await list(ana, 'storefront')).body.integrations.map((i: Json) => [i.name, i.capabilities[0].name]), [['orders', 'orders.view']])
  })

  test('a development deploy publishes nothing', async () => {
    const dev = await deploy(ana, 'shop', provider({ name: 'orders-dev' }), {}, 'dev/ana/deployments')
    assert.equal(dev.status, 201, JSON.stringify(dev.body))
    assert.deepEqual((await list(ana, 'storefront')).body.integrations.map((i: Json) => i.name), ['orders'])
  })

  test('a release without the block unpublishes, and the name becomes free', async () => {
    const removed = await deploy(ana, 'shop', '')
    assert.equal(removed.status, 201, JSON.stringify(removed.body))
    assert.deepEqual((await list(ana, 'storefront')).body.integrations, [])
    const warned = await deploy(ana, 'storefront', consumer(['orders.read']))
    assert.deepEqual(warned.body.warnings.map((w: Json) => w.code), ['MANIFEST_INTEGRATION_NOT_PUBLISHED'])
    const now = await deploy(ana, 'shop-copy', provider())
    assert.equal(now.status, 201, JSON.stringify(now.body))
    assert.deepEqual((await list(ana, 'storefront')).body.integrations.map((i: Json) => i.provider.appSlug), ['shop-copy'])
  })

  test('an app that is not active publishes nothing, and its name may be taken over', async () => {
    await h.t.db.query(`update platform.apps set status = 'paused' where slug = 'shop-copy'`)
    assert.deepEqual((await list(ana, 'storefront')).body.integrations, [])
    const warned = await deploy(ana, 'storefront', consumer(['orders.read']))
    assert.deepEqual(warned.body.warnings.map((w: Json) => w.code), ['MANIFEST_INTEGRATION_NOT_PUBLISHED'])

    // Active again: its contract is listed again.
    await h.t.db.query(`update platform.apps set status = 'active' where slug = 'shop-copy'`)
    assert.deepEqual((await list(ana, 'storefront')).body.integrations.map((i: Json) => i.provider.appSlug), ['shop-copy'])

    // Paused, another app takes the name; reactivated, the paused app no longer holds it.
    await h.t.db.query(`update platform.apps set status = 'paused' where slug = 'shop-copy'`)
    const takeover = await deploy(ana, 'shop', provider())
    assert.equal(takeover.status, 201, JSON.stringify(takeover.body))
    await h.t.db.query(`update platform.apps set status = 'active' where slug = 'shop-copy'`)
    assert.deepEqual((await list(ana, 'storefront')).body.integrations.map((i: Json) => i.provider.appSlug), ['shop'])
    const rows = await h.t.db.query<{ slug: string }>(
      `select a.slug from platform.integration_contracts c join platform.apps a on a.id = c.app_id where c.name = 'orders' order by a.slug`)
    assert.deepEqual(rows.map((r) => r.slug), ['globex-shop', 'shop'])
  })

  test('the list is paginated by name and refuses a bad limit or cursor', async () => {
    assert.equal((await deploy(ana, 'shop-copy', provider({ name: 'orders-archive' }))).status, 201)
    const first = await list(ana, 'storefront', '?limit=1')
    assert.deepEqual(first.body.integrations.map((i: Json) => i.name), ['orders'])
    assert.equal(typeof first.body.nextCursor, 'string')
    const second = await list(ana, 'storefront', `?limit=1&nextCursor=${first.body.nextCursor}`)
    assert.deepEqual(second.body.integrations.map((i: Json) => i.name), ['orders-archive'])
    assert.equal(second.body.nextCursor, null)
    for (const query of ['?limit=0', '?limit=101', '?limit=x', '?nextCursor=nonsense']) {
      const bad = await list(ana, 'storefront', query)
      assert.equal(bad.status, 400, query)
      assert.equal(bad.body.error.code, 'VALIDATION_FAILED', query)
    }
  })

  test('someone without a role on the app cannot list through it', async () => {
    const foreign = await list(bo, 'storefront')
    assert.equal(foreign.status, 404)
    assert.equal(foreign.body.error.code, 'APP_NOT_FOUND')
    assert.equal((await h.request('/v1/apps/storefront/custom-integrations')).status, 401)
  })

  test('of two transactions publishing one name at once, the second fails INTEGRATION_NAME_TAKEN', async () => {
    const [one, two] = await h.t.db.query<{ id: string; slug: string; organisation_id: string; active_release_id: string }>(
      `select id, slug, organisation_id, active_release_id from platform.apps where slug in ('shop', 'storefront') order by slug`)
    const contract = (name: string): IntegrationContract => ({
      name, title: 'Race', description: 'Race', credentials: [], capabilities: [{ name: 'race.run', description: 'Run' }], operations: [], events: [],
    })
    const publish = (app: typeof one, name: string) => (tx: Queryable) => publishContract(tx, {
      app: { id: app!.id, slug: app!.slug, organisationId: app!.organisation_id }, releaseId: app!.active_release_id, contract: contract(name), now: h.clock.now(),
    })
    if (backend !== 'postgres') {
      // PGlite runs one transaction at a time: the same rule, one after the other.
      await h.t.db.transaction(publish(one, 'race'))
      await assert.rejects(h.t.db.transaction(publish(two, 'race')), (e: unknown) => e instanceof ServiceError && e.code === 'INTEGRATION_NAME_TAKEN')
      return
    }
    // A second pool, as another platform process would have.
    const other = openPostgres({ url: h.t.url! })
    try {
      let published!: () => void
      let commit!: () => void
      const inserted = new Promise<void>((resolve) => { published = resolve })
      const held = new Promise<void>((resolve) => { commit = resolve })
      const first = h.t.db.transaction(async (tx) => {
        await publish(one, 'race')(tx)
        published()
        await held
      })
      await inserted
      // The second transaction's insert waits on the first's uncommitted row.
      const second = other.transaction(publish(two, 'race'))
      commit()
      await first
      await assert.rejects(second, (e: unknown) => e instanceof ServiceError && e.code === 'INTEGRATION_NAME_TAKEN')
    } finally {
      await other.close()
    }
    const rows = await h.t.db.query<{ app_id: string }>(`select app_id from platform.integration_contracts where name = 'race'`)
    assert.deepEqual(rows.map((r) => r.app_id), [one!.id])
  })

  test('two deploys publishing one name at once: exactly one succeeds', async () => {
    for (const slug of ['racer-a', 'racer-b']) await createApp(ana, slug)
    const results = await Promise.all(['racer-a', 'racer-b'].map((slug) => deploy(ana, slug, provider({ name: 'contested' }))))
    assert.equal(results.filter((r) => r.status === 201).length, 1, JSON.stringify(results))
    const loser = results.find((r) => r.status !== 201)!
    assert.ok(
      (loser.status === 409 && loser.body.error.code === 'INTEGRATION_NAME_TAKEN') ||
      (loser.status === 422 && loser.body.error.details.errors[0].code === 'MANIFEST_INTEGRATION_NAME_TAKEN'),
      JSON.stringify(loser.body),
    )
    const rows = await h.t.db.query(`select app_id from platform.integration_contracts where name = 'contested'`)
    assert.equal(rows.length, 1)
  })
})
