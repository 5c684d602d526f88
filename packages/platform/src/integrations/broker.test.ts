/**
 * Bindings and the broker end to end (spec 2.7, 3.5, 4.3, 5.5, 5.6, 7) with real Deno
 * Functions: a provider app publishing "orders" and a consumer app whose Functions call it
 * through `ctx.integrations.use(slot).call(operation, input)`. Every refusal code, typed
 * error passthrough, Reconnect required, suspension and revocation, `calling_user` slots,
 * the result limit, and a leak test: the credential value is nowhere outside the provider's
 * `ctx.secrets` (not in a platform table, the provider's or the consumer's database, a log
 * line, a response or an error).
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { capturedLog, type CapturedLog } from '../../test/captured-log.ts'
import { assertNoLeak, recordResponses, type RecordedResponses } from '../../test/leak-scan.ts'
import { CookieClient, field } from '../../test/cookie-client.ts'
import { AUTH, signedInBrowser } from '../../test/sign-in-flow.ts'
import { findUserById } from '../identity/index.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { insertConnection } from './connections/queries.ts'
import { findPublishedIntegration, replaceCredentials } from './connections/index.ts'
import { eventually } from '../../test/eventually.ts'
import { storeTokens } from './oauth/tokens.ts'
import { activeBinding, bindAfterConnect, unbindSlot } from './bindings/index.ts'
import { isRetryable } from '../jobs/dispatcher.ts'
import { signIn } from '../../test/data-fixture.ts'
import { consumerManifest, contactsContract, createTestConnection, deployApp, listOrders, ordersContract, READ_AND_WRITE } from '../../test/integration-fixture.ts'

const API_KEY = 'sk_live_broker_secret_7d1f0a9c3e'
const ORG_KEY = 'sk_live_broker_org_secret_52bb81'
const CAROL_KEY = 'sk_live_broker_carol_secret_e90c'
const ACCESS_TOKEN = 'oauth_access_token_broker_4c2e9b7d'
const SECRETS = [API_KEY, ORG_KEY, CAROL_KEY, ACCESS_TOKEN]

const OAUTH_PROVIDER = `secrets:
  CRM_CLIENT_SECRET: required
functions:
  - name: contactsImpl
    entrypoint: functions/contacts.ts
    access: system
  - name: swapCode
    entrypoint: functions/contacts.ts
    access: system
${contactsContract({ exchange: 'swapCode', operation: 'contactsImpl' })}`

const OAUTH_PROVIDER_CODE = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ mode: string() }),
  async handler({ secrets }) {
    const token = await secrets.get('OAUTH_ACCESS_TOKEN')
    return Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token ?? ''))))
      .map((b) => b.toString(16).padStart(2, '0')).join('')
  },
})
`

const OAUTH_CONSUMER = consumerManifest({ function: 'callShop', slots: { crm: { integration: 'contacts', capabilities: ['contacts.read'] } } })

const PROVIDER = `functions:
  - name: ordersImpl
    entrypoint: functions/orders.ts
    access: system
    timeoutSeconds: 60
  - name: slowImpl
    entrypoint: functions/slow.ts
    access: system
    timeoutSeconds: 1
${ordersContract({
  capabilities: READ_AND_WRITE,
  operations: [
    listOrders('ordersImpl'),
    { name: 'orders.slow', capability: 'orders.read', function: 'slowImpl', description: 'Never answers in time' },
    { name: 'orders.cancel', capability: 'orders.write', function: 'ordersImpl', description: 'Cancels an order' },
  ],
})}`

/** The provider's own table: each operation call, as a provider keeps a record of its work (never the key). */
const PROVIDER_MIGRATION = `
create table calls (
  id uuid primary key default gen_random_uuid(),
  operation text not null,
  mode text not null,
  connection_id uuid not null,
  consumer_app_id uuid not null
);
alter table calls enable row level security;
create policy calls_system on calls for all using (auth.is_system()) with check (auth.is_system());
`

const PROVIDER_CODE = `import { defineFunction, errors, object, string } from '@service/server'
export default defineFunction({
  input: object({ mode: string() }),
  async handler({ input, integration, secrets, log, data }) {
    await data.table('calls').create({
      operation: integration.operation, mode: input.mode, connection_id: integration.connectionId, consumer_app_id: integration.consumerAppId,
    })
    const key = await secrets.get('SHOP_API_KEY')
    const digest = key === null ? null : Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key))))
      .map((b) => b.toString(16).padStart(2, '0')).join('')
    log.info('the key is ' + key)
    switch (input.mode) {
      case 'typed': throw errors.notFound('ORDER_MISSING', 'no such order', { order: 7 })
      case 'unauthorized': throw errors.unauthorized('TOKEN_REJECTED', 'the shop rejected the key ' + key)
      // Rejects the key it was given after a while (the test replaces the credentials meanwhile).
      case 'late-unauthorized':
        await new Promise((resolve) => setTimeout(resolve, 3000))
        throw errors.unauthorized('TOKEN_REJECTED', 'the shop rejected the key ' + key)
      case 'unavailable': throw errors.unavailable('SHOP_DOWN', 'try later')
      case 'throw': throw new Error('exploded with ' + key)
      case 'big': return 'x'.repeat(1024 * 1024 + 10)
      default: return { integration: { connectionId: integration.connectionId, trigger: integration.trigger, operation: integration.operation, consumerAppId: integration.consumerAppId }, digest }
    }
  },
})
`

const CONSUMER = consumerManifest({
  function: 'callShop',
  slots: {
    shop: { integration: 'orders', capabilities: ['orders.read'] },
    my_shop: { integration: 'orders', account: 'calling_user', capabilities: ['orders.read'] },
  },
})

const CONSUMER_CODE = `import { boolean, defineFunction, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({ slot: string(), operation: string(), mode: string(), badInput: optional(boolean()) }),
  handler({ input, integrations }) {
    return integrations.use(input.slot).call(input.operation, input.badInput ? { mode: 5 } : { mode: input.mode })
  },
})
`

function digest(value: string): string {
  return createHash('sha256').update(value).digest('hex')
}

describe(`bindings and the broker (${backend})`, () => {
  let h: Harness
  let log: CapturedLog
  let alice: { token: string; userId: string } // organisation administrator of Acme, owns the provider app
  let bob: { token: string; userId: string } // member of Acme, owns the consumer app
  let carol: { token: string; userId: string } // member of Acme, Edit on the consumer app later
  let eve: { token: string; userId: string } // another organisation
  let deskId: string
  /** Function results and pages this file read (searched for the credentials at the end). */
  const seen: string[] = []
  /** Every response the platform answered (searched too). */
  let responses: RecordedResponses

  async function api(token: string, method: string, path: string, json?: unknown) {
    const res = await ownerApi(h, token, method, path, json)
    seen.push(res.text)
    return res
  }

  async function connection(userId: string, input: { kind: 'personal' | 'organisation'; key: string }): Promise<string> {
    return createTestConnection(h, { userId, kind: input.kind, values: { SHOP_API_KEY: input.key } })
  }

  /** Runs the consumer's Function as `userId` (null: anonymous) and gives its value or its error. */
  async function call(input: { slot: string; operation?: string; mode?: string; badInput?: boolean; userId?: string | null; app?: string }) {
    const app = (await findAppBySlug(h.t.db, input.app ?? 'desk'))!
    const fn = (await h.platform.functions.resolve(app, 'callShop'))!
    const result = await h.platform.functions.run(fn, {
      input: { slot: input.slot, operation: input.operation ?? 'orders.list', mode: input.mode ?? 'ok', ...(input.badInput ? { badInput: true } : {}) },
      user: input.userId ? { id: input.userId } : null,
    })
    seen.push(JSON.stringify(result))
    if (result.ok) return { ok: true as const, value: result.value as any }
    const error = result.error as { kind: string; code?: string; status?: number; message: string; details?: any }
    return { ok: false as const, error }
  }

  function assertCode(result: Awaited<ReturnType<typeof call>>, code: string, status?: number) {
    assert.equal(result.ok, false, JSON.stringify(result))
    if (result.ok) return
    assert.equal(result.error.code, code, JSON.stringify(result.error))
    if (status !== undefined) assert.equal(result.error.status, status)
  }


  before(async () => {
    log = capturedLog('debug')
    h = await startHarness(undefined, { logger: log.logger })
    responses = recordResponses(h.platform)
    alice = await h.createOwner('alice@acme.test', 'Acme')
    bob = await h.createOwner('bob@acme.test', 'Acme')
    carol = await h.createOwner('carol@acme.test', 'Acme')
    eve = await h.createOwner('eve@globex.test', 'Globex')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'shop', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'shop', {
      'service.yaml': manifest('shop', PROVIDER, 'private'),
      'functions/orders.ts': PROVIDER_CODE,
      'database/migrations/0001_calls.sql': PROVIDER_MIGRATION,
      'functions/slow.ts': `import { defineFunction, object, string } from '@service/server'
export default defineFunction({ input: object({ mode: string() }), handler: () => new Promise(() => {}) })
`,
    })
    assert.equal((await h.request('/v1/apps', { token: bob.token, json: { slug: 'desk', visibility: 'private' } })).status, 201)
    await deployApp(h, bob.token, 'desk', { 'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/call.ts': CONSUMER_CODE })
    deskId = (await findAppBySlug(h.t.db, 'desk'))!.id
  })
  after(() => h.close())

  test('an unbound app slot fails INTEGRATION_NOT_BOUND; the listing shows the slots unbound', async () => {
    assertCode(await call({ slot: 'shop' }), 'INTEGRATION_NOT_BOUND', 409)
    const listed = await api(bob.token, 'GET', '/v1/apps/desk/integrations')
    assert.equal(listed.status, 200, listed.text)
    assert.deepEqual(listed.body.slots.map((s: any) => [s.slot, s.account, s.binding]), [['my_shop', 'calling_user', null], ['shop', 'app', null]])
  })

  test('the owner agent binds its personal connection; a call runs the provider with ctx.integration and the credential only in ctx.secrets', async () => {
    const id = await connection(bob.userId, { kind: 'personal', key: API_KEY })
    const bound = await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: id })
    assert.equal(bound.status, 200, bound.text)
    assert.deepEqual(bound.body.binding.capabilities, ['orders.read'])
    const result = await call({ slot: 'shop' })
    assert.ok(result.ok, JSON.stringify(result))
    assert.deepEqual(result.value.integration, { connectionId: id, trigger: 'operation', operation: 'orders.list', consumerAppId: deskId })
    assert.equal(result.value.digest, digest(API_KEY), 'the provider read the connection\'s value through ctx.secrets')
    const listed = await api(bob.token, 'GET', '/v1/apps/desk/integrations')
    assert.equal(listed.body.slots.find((s: any) => s.slot === 'shop').binding.state, 'active')
  })

  test('refusals: unknown slot, unknown operation, capability not requested by the slot', async () => {
    assertCode(await call({ slot: 'nope' }), 'SLOT_NOT_FOUND', 404)
    assertCode(await call({ slot: 'shop', operation: 'orders.burn' }), 'INTEGRATION_OPERATION_NOT_FOUND', 404)
    assertCode(await call({ slot: 'shop', operation: 'orders.cancel' }), 'INTEGRATION_CAPABILITY_NOT_GRANTED', 403)
  })

  test('binding refusals: calling_user slots through the API, others\' personal connections, people without Edit, unknown slots', async () => {
    const bobs = await connection(bob.userId, { kind: 'personal', key: API_KEY })
    const person = await api(bob.token, 'PUT', '/v1/apps/desk/integrations/my_shop/binding', { connectionId: bobs })
    assert.equal(person.status, 403)
    assert.equal(person.body.error.code, 'BINDING_NEEDS_PERSON')
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/integrations/ghost/binding', { connectionId: bobs })).body.error.code, 'SLOT_NOT_FOUND')
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', {})).body.error.code, 'VALIDATION_FAILED')
    // Carol holds Use only: she may not bind into the app.
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/members/carol@acme.test', { role: 'use' })).status, 201)
    const carols = await connection(carol.userId, { kind: 'personal', key: CAROL_KEY })
    const useOnly = await api(carol.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: carols })
    assert.equal(useOnly.status, 403)
    assert.equal(useOnly.body.error.code, 'FORBIDDEN')
    // Bob may not bind Carol's personal connection (he cannot even see it).
    const others = await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: carols })
    assert.equal(others.status, 404)
    assert.equal(others.body.error.code, 'CONNECTION_NOT_FOUND')
    // Eve, of another organisation, sees no such app.
    assert.equal((await api(eve.token, 'GET', '/v1/apps/desk/integrations')).body.error.code, 'APP_NOT_FOUND')
  })

  test('a connection an OAuth flow made is bound at its end only into a calling_user slot of the person\'s organisation (checked again then)', async () => {
    const bobs = await connection(bob.userId, { kind: 'personal', key: API_KEY })
    const actor = (await findUserById(h.t.db, bob.userId))!
    const deps = { db: h.t.db, clock: h.clock }
    // An app's slot needs Edit and the API: a flow row naming one binds nothing.
    const appSlot = await activeBinding(h.t.db, { appId: deskId, slot: 'shop', userId: null })
    await assert.rejects(bindAfterConnect(deps, { actor, connectionId: bobs, bind: { appId: deskId, slot: 'shop' } }), { code: 'SLOT_NOT_FOUND' })
    assert.deepEqual(await activeBinding(h.t.db, { appId: deskId, slot: 'shop', userId: null }), appSlot)
    const eveUser = (await findUserById(h.t.db, eve.userId))!
    await assert.rejects(bindAfterConnect(deps, { actor: eveUser, connectionId: bobs, bind: { appId: deskId, slot: 'my_shop' } }), { code: 'APP_NOT_FOUND' })
    assert.deepEqual(await bindAfterConnect(deps, { actor, connectionId: bobs, bind: { appId: deskId, slot: 'my_shop' } }), { appSlug: 'desk' })
    assert.equal((await activeBinding(h.t.db, { appId: deskId, slot: 'my_shop', userId: bob.userId }))?.connectionId, bobs)
    await unbindSlot(h.t.db, { actor, app: (await findAppBySlug(h.t.db, 'desk'))!, slot: 'my_shop' })
  })

  test('an organisation connection is bound by anyone who may use the integration, into an app they may Edit', async () => {
    const org = await connection(alice.userId, { kind: 'organisation', key: ORG_KEY })
    const bound = await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: org })
    assert.equal(bound.status, 200, bound.text)
    const result = await call({ slot: 'shop' })
    assert.ok(result.ok, JSON.stringify(result))
    assert.equal(result.value.digest, digest(ORG_KEY))
    assert.equal((await api(bob.token, 'DELETE', '/v1/apps/desk/integrations/shop/binding')).status, 204)
    assertCode(await call({ slot: 'shop' }), 'INTEGRATION_NOT_BOUND')
    assert.equal((await api(bob.token, 'DELETE', '/v1/apps/desk/integrations/shop/binding')).body.error.code, 'BINDING_NOT_FOUND')
  })

  test('a person outside the provider\'s Use audience may not bind an organisation connection, even into an app they own', async () => {
    const org = await connection(alice.userId, { kind: 'organisation', key: ORG_KEY })
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'people', usePeople: ['carol@acme.test'] })).status, 200)
    try {
      const refused = await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: org })
      assert.equal(refused.status, 403, refused.text)
      assert.equal(refused.body.error.code, 'FORBIDDEN')
      assert.match(refused.body.error.message, /Use audience/)
      assertCode(await call({ slot: 'shop' }), 'INTEGRATION_NOT_BOUND')
    } finally {
      assert.equal((await api(alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'organisation' })).status, 200)
    }
    // Back in the audience, the same request binds.
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: org })).status, 200)
    assert.equal((await api(bob.token, 'DELETE', '/v1/apps/desk/integrations/shop/binding')).status, 204)
  })

  test('typed 4xx errors reach the consumer unchanged; the provider\'s input schema stays authoritative', async () => {
    const id = await connection(bob.userId, { kind: 'personal', key: API_KEY })
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: id })).status, 200)
    const typed = await call({ slot: 'shop', mode: 'typed' })
    assertCode(typed, 'ORDER_MISSING', 404)
    assert.ok(!typed.ok && typed.error.message === 'no such order')
    assert.deepEqual(!typed.ok && typed.error.details, { order: 7 })
    const invalid = await call({ slot: 'shop', badInput: true })
    assert.equal(!invalid.ok && invalid.error.status, 400, JSON.stringify(invalid))
  })

  test('untyped failures are INTEGRATION_PROVIDER_FAILED, errors.unavailable and timeouts INTEGRATION_PROVIDER_UNAVAILABLE (503, retryable), a result over 1 MiB INTEGRATION_RESULT_TOO_LARGE', async () => {
    const failed = await call({ slot: 'shop', mode: 'throw' })
    assertCode(failed, 'INTEGRATION_PROVIDER_FAILED', 502)
    const unavailable = await call({ slot: 'shop', mode: 'unavailable' })
    assertCode(unavailable, 'INTEGRATION_PROVIDER_UNAVAILABLE', 503)
    assert.equal(!unavailable.ok && isRetryable(unavailable.error as never), true, 'a queue consumer that lets it through is retried')
    assert.equal(!failed.ok && isRetryable(failed.error as never), false, 'an untyped provider failure is terminal')
    assertCode(await call({ slot: 'shop', mode: 'big' }), 'INTEGRATION_RESULT_TOO_LARGE', 502)
    // The provider's Function declares a 1-second timeout (shorter than the broker's 25 seconds) and never answers.
    assertCode(await call({ slot: 'shop', operation: 'orders.slow' }), 'INTEGRATION_PROVIDER_UNAVAILABLE', 503)
  })

  test('errors.unauthorized marks the connection Reconnect required; later calls fail the same without invoking the provider', async () => {
    const id = await connection(bob.userId, { kind: 'personal', key: API_KEY })
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: id })).status, 200)
    const rejected = await call({ slot: 'shop', mode: 'unauthorized' })
    assertCode(rejected, 'INTEGRATION_RECONNECT_REQUIRED', 409)
    const rows = await h.t.db.query<{ status: string }>('select status from platform.connections where id = $1', [id])
    assert.equal(rows[0]!.status, 'reconnect_required')
    // 'ok' would succeed if the provider ran.
    const later = await call({ slot: 'shop', mode: 'ok' })
    assertCode(later, 'INTEGRATION_RECONNECT_REQUIRED', 409)
    for (const result of [rejected, later]) {
      assert.equal(!result.ok && result.error.details.connectUrl, `${AUTH}/connections/${id}`, 'connectUrl is the connection\'s page, where it is reconnected')
    }
    const listed = await api(bob.token, 'GET', '/v1/apps/desk/integrations')
    assert.equal(listed.body.slots.find((s: any) => s.slot === 'shop').binding.state, 'reconnect_required')
  })

  test('a rejection of credentials replaced while the call ran marks nothing: the reconnect stands and the call is retryable', async () => {
    const id = await connection(bob.userId, { kind: 'personal', key: API_KEY })
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: id })).status, 200)
    const started = await providerCalls()
    const pending = call({ slot: 'shop', mode: 'late-unauthorized' })
    // The provider records the call once it runs, with the old key already read.
    await eventually(async () => (await providerCalls()) > started, 'the provider started')
    h.clock.advance(1000)
    const bobUser = (await findUserById(h.t.db, bob.userId))!
    const integration = await findPublishedIntegration(h.t.db, { app: 'shop', integration: 'orders', actor: bobUser })
    await replaceCredentials({ db: h.t.db, clock: h.clock, keyring: h.platform.connectionKeyring },
      { actor: bobUser, id, integration, values: { SHOP_API_KEY: `${API_KEY}-replaced` } })
    assertCode(await pending, 'INTEGRATION_PROVIDER_UNAVAILABLE', 503)
    const rows = await h.t.db.query<{ status: string }>('select status from platform.connections where id = $1', [id])
    assert.equal(rows[0]!.status, 'active', 'the stale rejection did not undo the reconnect')
    assert.equal((await call({ slot: 'shop', mode: 'ok' })).ok, true, 'the next call runs with the new credentials')
    // A rejection of the credentials the call did run with still marks the connection.
    assertCode(await call({ slot: 'shop', mode: 'unauthorized' }), 'INTEGRATION_RECONNECT_REQUIRED', 409)
  })

  test('narrowing the provider\'s Use audience suspends the binding; widening it restores the binding', async () => {
    const id = await connection(bob.userId, { kind: 'personal', key: API_KEY })
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: id })).status, 200)
    assert.ok((await call({ slot: 'shop' })).ok)
    const narrowed = await api(alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'people', usePeople: ['carol@acme.test'] })
    assert.equal(narrowed.status, 200, narrowed.text)
    assertCode(await call({ slot: 'shop' }), 'INTEGRATION_BINDING_SUSPENDED', 403)
    const listed = await api(bob.token, 'GET', '/v1/apps/desk/integrations')
    assert.equal(listed.body.slots.find((s: any) => s.slot === 'shop').binding.state, 'suspended')
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'organisation' })).status, 200)
    const restored = await call({ slot: 'shop' })
    assert.ok(restored.ok, JSON.stringify(restored))
  })

  test('a personal connection\'s owner who loses Edit on the consumer app revokes the binding for good', async () => {
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/members/carol@acme.test', { role: 'edit' })).status, 200)
    const carols = await connection(carol.userId, { kind: 'personal', key: CAROL_KEY })
    const bound = await api(carol.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: carols })
    assert.equal(bound.status, 200, bound.text)
    const ok = await call({ slot: 'shop' })
    assert.ok(ok.ok && ok.value.digest === digest(CAROL_KEY), JSON.stringify(ok))
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/members/carol@acme.test', { role: 'use' })).status, 200)
    assertCode(await call({ slot: 'shop' }), 'INTEGRATION_BINDING_REVOKED', 403)
    const rows = await h.t.db.query<{ status: string; revoked_reason: string }>(
      'select status, revoked_reason from platform.integration_bindings where id = $1', [bound.body.binding.id])
    assert.equal(rows[0]!.status, 'revoked')
    // Edit given back: the binding stays revoked; the slot must be bound again.
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/members/carol@acme.test', { role: 'edit' })).status, 200)
    assertCode(await call({ slot: 'shop' }), 'INTEGRATION_NOT_BOUND')
  })

  test('a personal connection\'s owner who leaves the organisation revokes the binding', async () => {
    const carols = await connection(carol.userId, { kind: 'personal', key: CAROL_KEY })
    const bound = await api(carol.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: carols })
    assert.equal(bound.status, 200, bound.text)
    assert.ok((await call({ slot: 'shop' })).ok)
    const globex = (await h.t.db.query<{ organisation_id: string }>('select organisation_id from platform.users where id = $1', [eve.userId]))[0]!.organisation_id
    const acme = (await h.t.db.query<{ organisation_id: string }>('select organisation_id from platform.users where id = $1', [carol.userId]))[0]!.organisation_id
    await h.t.db.query('update platform.users set organisation_id = $1 where id = $2', [globex, carol.userId])
    try {
      assertCode(await call({ slot: 'shop' }), 'INTEGRATION_BINDING_REVOKED', 403)
    } finally {
      await h.t.db.query('update platform.users set organisation_id = $1 where id = $2', [acme, carol.userId])
    }
    // Back in the organisation: still revoked for good.
    assertCode(await call({ slot: 'shop' }), 'INTEGRATION_NOT_BOUND')
    const rows = await h.t.db.query<{ status: string }>('select status from platform.integration_bindings where id = $1', [bound.body.binding.id])
    assert.equal(rows[0]!.status, 'revoked')
  })

  /** How many operation calls the provider's Function has recorded in its own table. */
  async function providerCalls(): Promise<number> {
    return (await h.t.db.query<{ n: number }>('select count(*)::int as n from app_shop.calls'))[0]!.n
  }

  async function organisationOf(userId: string): Promise<string> {
    return (await h.t.db.query<{ organisation_id: string }>('select organisation_id from platform.users where id = $1', [userId]))[0]!.organisation_id
  }

  test('a call fails INTEGRATION_NOT_FOUND without running the provider while the provider app is paused, suspended or archived', async () => {
    const org = await connection(alice.userId, { kind: 'organisation', key: ORG_KEY })
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: org })).status, 200)
    assert.ok((await call({ slot: 'shop' })).ok)
    const before = await providerCalls()
    for (const status of ['paused', 'suspended', 'archived']) {
      await h.t.db.query('update platform.apps set status = $1 where slug = $2', [status, 'shop'])
      try {
        assertCode(await call({ slot: 'shop' }), 'INTEGRATION_NOT_FOUND', 404)
      } finally {
        await h.t.db.query('update platform.apps set status = $1 where slug = $2', ['active', 'shop'])
      }
    }
    assert.equal(await providerCalls(), before, 'the provider\'s Function never ran')
    const again = await call({ slot: 'shop' })
    assert.ok(again.ok && again.value.digest === digest(ORG_KEY), JSON.stringify(again))
  })

  test('a call fails without running the provider when consumer, provider and connection are not in one organisation', async () => {
    // Bound by the provider's owner, who may always use its integration: only the organisation
    // check stands between the call and the provider when the provider app is elsewhere.
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/desk/members/alice@acme.test', { role: 'edit' })).status, 201)
    const org = await connection(alice.userId, { kind: 'organisation', key: ORG_KEY })
    assert.equal((await api(alice.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId: org })).status, 200)
    assert.ok((await call({ slot: 'shop' })).ok)
    const acme = await organisationOf(alice.userId)
    const globex = await organisationOf(eve.userId)
    const before = await providerCalls()
    const moved = async (table: 'apps' | 'connections', key: string, expect: (result: Awaited<ReturnType<typeof call>>) => void) => {
      const column = table === 'apps' ? 'slug' : 'id'
      await h.t.db.query(`update platform.${table} set organisation_id = $1 where ${column} = $2`, [globex, key])
      try {
        expect(await call({ slot: 'shop' }))
      } finally {
        await h.t.db.query(`update platform.${table} set organisation_id = $1 where ${column} = $2`, [acme, key])
      }
    }
    try {
      // The consumer in another organisation: the integration is not published there.
      await moved('apps', 'desk', (result) => assertCode(result, 'INTEGRATION_NOT_FOUND', 404))
      // The provider in another organisation: its contract, published in Acme, no longer serves Acme's apps.
      await moved('apps', 'shop', (result) => assertCode(result, 'INTEGRATION_NOT_FOUND', 404))
      // The connection in another organisation: the binding is suspended while it is.
      await moved('connections', org, (result) => assertCode(result, 'INTEGRATION_BINDING_SUSPENDED', 403))
      assert.equal(await providerCalls(), before, 'the provider\'s Function never ran')
      const again = await call({ slot: 'shop' })
      assert.ok(again.ok && again.value.digest === digest(ORG_KEY), JSON.stringify(again))
    } finally {
      assert.equal((await api(bob.token, 'DELETE', '/v1/apps/desk/members/alice@acme.test')).status, 204)
    }
  })

  test('a calling_user slot needs a signed-in person and that person\'s own binding (connectUrl to connect and bind)', async () => {
    assertCode(await call({ slot: 'my_shop', userId: null }), 'INTEGRATION_USER_REQUIRED', 401)
    const missing = await call({ slot: 'my_shop', userId: bob.userId })
    assertCode(missing, 'INTEGRATION_CONNECTION_REQUIRED', 409)
    assert.equal(!missing.ok && missing.error.details.connectUrl, 'http://auth.localhost:8787/integrations/connect?app=desk&slot=my_shop')
  })

  test('the connectUrl page connects and binds the person\'s own account in one step; each person binds their own', async () => {
    const b = await signedInBrowser(h, 'bob@acme.test')
    const url = `${AUTH}/integrations/connect?app=desk&slot=my_shop`
    const res = await b.fetch(url)
    const html = await res.text()
    assert.equal(res.status, 200, html)
    assert.match(html, /name="value.SHOP_API_KEY" type="password"/)
    const fields = { csrf: field(html, 'csrf'), app: 'desk', slot: 'my_shop', label: 'My shop', 'value.SHOP_API_KEY': API_KEY }
    const { csrf: _csrf, ...withoutCsrf } = fields
    assert.equal((await b.post(`${AUTH}/integrations/connect`, withoutCsrf)).status, 403, 'a form without the CSRF token is refused')
    assert.equal((await b.post(`${AUTH}/integrations/connect`, fields, 'http://desk.localhost:8787')).status, 403, 'a form from another origin is refused')
    const bound = await b.post(`${AUTH}/integrations/connect`, fields)
    const boundHtml = await bound.text()
    seen.push(boundHtml)
    assert.equal(bound.status, 200, boundHtml)
    assert.match(boundHtml, /id="bound"/)
    const result = await call({ slot: 'my_shop', userId: bob.userId })
    assert.ok(result.ok, JSON.stringify(result))
    assert.equal(result.value.digest, digest(API_KEY))
    // Carol has no binding of her own for this slot.
    assertCode(await call({ slot: 'my_shop', userId: carol.userId }), 'INTEGRATION_CONNECTION_REQUIRED')
    // An anonymous browser is sent to sign in first.
    const anonymous = await new CookieClient(h).fetch(url)
    assert.equal(anonymous.status, 302)
    // Uncaught by the consumer, the error reaches the person's browser with connectUrl.
    const signedIn = await signIn(h, 'desk', 'carol@acme.test')
    const res2 = await h.request('/_service/functions/callShop', {
      host: 'desk', method: 'POST', headers: { authorization: `Bearer ${signedIn.accessToken}` },
      body: JSON.stringify({ slot: 'my_shop', operation: 'orders.list', mode: 'ok' }),
    })
    const body = await res2.text()
    seen.push(body)
    assert.equal(res2.status, 409, body)
    assert.equal(JSON.parse(body).error.code, 'INTEGRATION_CONNECTION_REQUIRED')
    assert.equal(JSON.parse(body).error.details.connectUrl, 'http://auth.localhost:8787/integrations/connect?app=desk&slot=my_shop')
  })

  test('a development namespace never reaches real connections unless told: in fake mode an operation without a fake fails INTEGRATION_FAKE_NOT_DECLARED', async () => {
    const res = await h.request('/v1/apps/desk/dev/d1/deployments', {
      token: bob.token, json: bundle({ 'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/call.ts': CONSUMER_CODE }),
    })
    assert.equal(res.status, 201, await res.text())
    const app = (await findAppBySlug(h.t.db, 'desk'))!
    const fn = (await h.platform.functions.resolveDev(app, 'd1', 'callShop'))!
    const result = await h.platform.functions.run(fn, { input: { slot: 'shop', operation: 'orders.list', mode: 'ok' }, user: null })
    seen.push(JSON.stringify(result))
    assert.equal(!result.ok && result.error.kind === 'service' && result.error.code, 'INTEGRATION_FAKE_NOT_DECLARED', JSON.stringify(result))
  })

  test('a consumer pinning a runtime SDK below 2.2.0 is refused INTEGRATION_SDK_TOO_OLD', async () => {
    assert.equal((await h.request('/v1/apps', { token: bob.token, json: { slug: 'old-desk', visibility: 'private' } })).status, 201)
    const old = manifest('old-desk', `functions:
  - name: callShop
    entrypoint: functions/call.ts
    access: public
`, 'private').replace('version: 2.6.0', 'version: 2.1.0')
    await deployApp(h, bob.token, 'old-desk', { 'service.yaml': old, 'functions/call.ts': CONSUMER_CODE })
    assertCode(await call({ slot: 'shop', app: 'old-desk' }), 'INTEGRATION_SDK_TOO_OLD', 400)
  })

  test('an OAuth 2.0 connection\'s access token reaches the operation as ctx.secrets OAUTH_ACCESS_TOKEN', async () => {
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'crm', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'crm', { 'service.yaml': manifest('crm', OAUTH_PROVIDER, 'private'), 'functions/contacts.ts': OAUTH_PROVIDER_CODE })
    assert.equal((await h.request('/v1/apps', { token: bob.token, json: { slug: 'crm-desk', visibility: 'private' } })).status, 201)
    await deployApp(h, bob.token, 'crm-desk', { 'service.yaml': manifest('crm-desk', OAUTH_CONSUMER, 'private'), 'functions/call.ts': CONSUMER_CODE })
    // A connection as the OAuth flow leaves it (the flow itself is tested in oauth/): its tokens sealed, not expiring soon.
    const crm = (await findAppBySlug(h.t.db, 'crm'))!
    const id = crypto.randomUUID()
    await insertConnection(h.t.db, {
      id, organisationId: crm.organisationId!, providerAppId: crm.id, integrationName: 'contacts', kind: 'personal', ownerId: bob.userId,
      createdBy: bob.userId, label: 'My CRM', webhookTokenHash: digest(id), webhookTokenEncrypted: 'unused', webhookKeyId: 'k1', at: h.clock.now(),
    })
    await storeTokens(h.t.db, {
      keyring: h.platform.connectionKeyring, clock: h.clock, connectionId: id, tokens: { accessToken: ACCESS_TOKEN, refreshToken: null, expiresIn: 3600 },
    })
    assert.equal((await api(bob.token, 'PUT', '/v1/apps/crm-desk/integrations/crm/binding', { connectionId: id })).status, 200)
    const result = await call({ slot: 'crm', operation: 'contacts.list', app: 'crm-desk' })
    assert.ok(result.ok, JSON.stringify(result))
    assert.equal(result.value, digest(ACCESS_TOKEN))
  })

  test('leak test: the credential values are in no platform table, app database, log line, response or error body', async () => {
    // The provider's log lines are stored after its invocations end: wait until they are.
    for (let i = 0; i < 100; i++) {
      const rows = await h.t.db.query<{ n: number }>(`select count(*)::int as n from platform.function_logs where message like '%the key is%'`)
      if (rows[0]!.n >= 10) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const logged = await h.t.db.query<{ n: number }>(`select count(*)::int as n from platform.function_logs where message like '%the key is%'`)
    assert.ok(logged[0]!.n > 0, 'the provider\'s log lines were stored (redacted)')
    const recorded = await responses.texts()
    assert.ok(recorded.length > 50, 'the responses were recorded')
    const scan = await assertNoLeak(h.t.db, {
      secrets: SECRETS,
      texts: { 'the log': log.text(), 'a response': recorded.join('\n'), 'a Function result or error': seen.join('\n') },
      schemas: ['app_shop'],
    })
    const calls = scan.tables.find((t) => t.name === 'app_shop.calls')
    assert.ok(calls && calls.rows >= 10, 'the provider\'s own table, written at every operation call, was read')
  })
})
