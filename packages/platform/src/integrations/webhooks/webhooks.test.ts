/**
 * Inbound webhooks end to end (spec 6.2) with real Deno Functions: a provider app whose
 * contract declares `webhook`, connections to it, and POSTs to their secret URLs through the
 * real HTTP application. Each mapping to the sender (2xx, 401, 403, other 4xx -> 400,
 * untyped failure, timeout and 503 -> 503), the 256 KiB limit (refused before any lookup),
 * header stripping, the exact body, the 404s that cannot be told apart (same status, same
 * body, the same statements run), an event emitted from a webhook reaching a subscribed
 * consumer once, OAuth access tokens, and the token in no log line.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb } from '../../../test/test-db.ts'
import { manifest, startHarness, type Harness } from '../../../test/harness.ts'
import { capturedLog, type CapturedLog } from '../../../test/captured-log.ts'
import { consumerManifest, contactsContract, createTestConnection, deployApp, listOrders, ORDER_CREATED, ordersContract } from '../../../test/integration-fixture.ts'
import type { Db } from '../../db/db.ts'
import { newSecret } from '../../lib/crypto.ts'
import { findAppBySlug } from '../../apps/apps.ts'
import { findConnection, markReconnectRequired, readWebhookToken } from '../connections/connections.ts'
import { insertConnection } from '../connections/queries.ts'
import { storeTokens } from '../oauth/tokens.ts'
import { MAX_WEBHOOK_BODY_BYTES } from './body.ts'

const API_KEY = 'sk_live_webhook_secret_5f0e2d7a91'

const HOOK_CODE = `import { array, defineFunction, errors, object, string } from '@service/server'
async function hex(text) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  return Array.from(new Uint8Array(digest)).map((b) => b.toString(16).padStart(2, '0')).join('')
}
export default defineFunction({
  input: object({ method: string(), headers: array(object({ name: string(), value: string() })), body: string(), receivedAt: string() }),
  async handler({ input, integration, secrets }) {
    const mode = input.headers.find((h) => h.name === 'x-mode')?.value ?? 'echo'
    const key = await secrets.get('SHOP_API_KEY')
    switch (mode) {
      case 'unauthorized': throw errors.unauthorized('SIGNATURE_INVALID', 'the signature does not match')
      case 'forbidden': throw errors.forbidden('SENDER_BLOCKED', 'this sender is blocked', { sender: 'acme' })
      case 'not-found': throw errors.notFound('ORDER_MISSING', 'no such order', { order: 7 })
      case 'conflict': throw errors.conflict('ORDER_LOCKED', 'the order is locked')
      case 'unavailable': throw errors.unavailable('SHOP_DOWN', 'try later')
      case 'throw': throw new Error('exploded with ' + key)
      case 'slow': return await new Promise(() => {})
      case 'length': return { bytes: new TextEncoder().encode(input.body).byteLength }
      case 'emit': {
        const change = JSON.parse(input.body)
        return { deliveries: await integration.emit({ type: 'order.created', id: change.id, data: { order: change.order } }) }
      }
      default: return { input, integration: { connectionId: integration.connectionId, trigger: integration.trigger }, keyDigest: key === null ? null : await hex(key) }
    }
  },
})
`

const OPERATION_CODE = `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), handler: () => ({ orders: [] }) })
`

/** A provider publishing `name`, with a webhook Function unless `webhook` is false. */
function provider(name: string, webhook: boolean): string {
  return `functions:
  - name: hook
    entrypoint: functions/hook.ts
    access: system
    timeoutSeconds: 5
  - name: listOrders
    entrypoint: functions/list.ts
    access: system
${ordersContract({ name, operations: [listOrders('listOrders')], events: [ORDER_CREATED], ...(webhook ? { webhook: 'hook' } : {}) })}`
}

const ACCESS_TOKEN = 'oauth_access_token_webhook_3b9d51'

/** A provider behind OAuth 2.0 whose operation and webhook Functions read the token as CRM_TOKEN. */
const OAUTH_PROVIDER = `functions:
  - name: hook
    entrypoint: functions/hook.ts
    access: system
  - name: swapCode
    entrypoint: functions/hook.ts
    access: system
${contactsContract({ exchange: 'swapCode', operation: 'hook', accessToken: 'CRM_TOKEN', webhook: 'hook' })}`

const OAUTH_HOOK_CODE = `import { array, defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ method: string(), headers: array(object({ name: string(), value: string() })), body: string(), receivedAt: string() }),
  async handler({ secrets }) {
    const token = await secrets.get('CRM_TOKEN')
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token ?? ''))
    return { tokenDigest: Array.from(new Uint8Array(digest)).map((b) => b.toString(16).padStart(2, '0')).join('') }
  },
})
`

/** A consumer whose `shop` slot subscribes to the orders integration's events. */
const CONSUMER = `functions:
  - name: onEvent
    entrypoint: functions/on-event.ts
    access: system
${consumerManifest({ slots: { shop: { integration: 'orders', capabilities: ['orders.read'], events: 'onEvent' } } })}`

const ON_EVENT_CODE = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({
    id: string(), type: string(), occurredAt: string(), integration: string(), provider: string(), bindingId: string(),
    data: object({ order: string() }),
  }),
  handler: () => null,
})
`

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex')
}

/** The database, recording the SQL text of every statement while `recording` is on. */
function recordingDb(db: Db): { db: Db; record<T>(work: () => Promise<T>): Promise<{ value: T; statements: string[] }> } {
  let statements: string[] | null = null
  const wrapped = new Proxy(db, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown
      if (typeof value !== 'function') return value
      if (property === 'query' || property === 'read') {
        return (text: string, ...rest: unknown[]) => {
          statements?.push(text)
          return (value as (...args: unknown[]) => unknown).call(target, text, ...rest)
        }
      }
      return (value as (...args: unknown[]) => unknown).bind(target)
    },
  })
  return {
    db: wrapped,
    async record(work) {
      statements = []
      try {
        const value = await work()
        return { value, statements }
      } finally {
        statements = null
      }
    },
  }
}

describe(`inbound webhooks (${backend})`, () => {
  let h: Harness
  let log: CapturedLog
  let recorder: ReturnType<typeof recordingDb>
  let alice: { token: string; userId: string }
  const tokens: string[] = []
  let shopToken: string
  let shopConnectionId: string

  async function connect(slug: string, integration: string, key = API_KEY): Promise<{ id: string; token: string }> {
    const id = await createTestConnection(h, { userId: alice.userId, kind: 'organisation', provider: slug, integration, label: `${slug} hooks`, values: { SHOP_API_KEY: key } })
    const token = await readWebhookToken(h.t.db, { keyring: h.platform.connectionKeyring, connectionId: id })
    tokens.push(token)
    return { id, token }
  }

  function post(token: string, init: { body?: BodyInit; headers?: Record<string, string>; method?: string; path?: string } = {}): Promise<Response> {
    return h.request(init.path ?? `/v1/hooks/${token}`, {
      method: init.method ?? 'POST',
      headers: { 'content-type': 'application/json', ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
    })
  }

  async function hook(mode: string, body = '{"id":"evt_1"}'): Promise<{ status: number; body: any; text: string }> {
    const res = await post(shopToken, { body, headers: { 'x-mode': mode } })
    const text = await res.text()
    return { status: res.status, text, body: JSON.parse(text) }
  }

  before(async () => {
    log = capturedLog('debug')
    const t = await createTestDb()
    recorder = recordingDb(t.db)
    h = await startHarness({ ...t, db: recorder.db }, { logger: log.logger })
    alice = await h.createOwner('alice@acme.test', 'Acme')
    for (const [slug, name, webhook] of [['shop', 'orders', true], ['quiet', 'notes', false], ['closed', 'ledger', true]] as const) {
      assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug, visibility: 'private' } })).status, 201)
      await deployApp(h, alice.token, slug, {
        'service.yaml': manifest(slug, provider(name, webhook), 'private'),
        'functions/hook.ts': HOOK_CODE,
        'functions/list.ts': OPERATION_CODE,
      })
    }
    ;({ id: shopConnectionId, token: shopToken } = await connect('shop', 'orders'))
  })
  after(() => h.close())

  test('a POST runs the webhook Function with ctx.integration, the connection\'s credential and the exact body; its value answers 200', async () => {
    const res = await post(shopToken, { body: '{"id":"evt_1","type":"order.created"}' })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    assert.equal(res.headers.get('content-type'), 'application/json')
    assert.equal(res.headers.get('cache-control'), 'no-store')
    const value = JSON.parse(text)
    assert.equal(value.input.method, 'POST')
    assert.equal(value.input.body, '{"id":"evt_1","type":"order.created"}')
    assert.equal(value.input.receivedAt, h.clock.now().toISOString())
    assert.deepEqual(value.integration, { connectionId: shopConnectionId, trigger: 'webhook' })
    assert.equal(value.keyDigest, sha256(API_KEY), 'the Function read the connection\'s credential through ctx.secrets')
  })

  test('the body is the exact request text: unusual whitespace and unicode, a byte-order mark, non-JSON content types, empty', async () => {
    const unusual = '\uFEFF  {"note":\t"caf\u00e9 \u20ac \u{1F600} \u2028\u00a0",\r\n "nul":"\u0000"}\r\n\r\n\t '
    const cases: [string, string][] = [
      [unusual, 'text/plain; charset=utf-8'],
      ['a=1&b=%C3%A9+x&a=2', 'application/x-www-form-urlencoded'],
      ['<?xml version="1.0"?><order id="7"/>\n', 'application/xml'],
      ['', 'application/octet-stream'],
    ]
    for (const [body, type] of cases) {
      const res = await post(shopToken, { body: new TextEncoder().encode(body), headers: { 'content-type': type } })
      const value = await res.json() as any
      assert.equal(res.status, 200, JSON.stringify(value))
      assert.equal(value.input.body, body, `the exact text of a ${type} body`)
      assert.ok(value.input.headers.some((header: any) => header.name === 'content-type' && header.value === type))
    }
  })

  test('a body that is not UTF-8 is refused 400 WEBHOOK_BODY_NOT_UTF8 and runs nothing', async () => {
    const { value: res, statements } = await recorder.record(() => post(shopToken, { body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]) }))
    assert.equal(res.status, 400)
    assert.equal(((await res.json()) as any).error.code, 'WEBHOOK_BODY_NOT_UTF8')
    assert.equal(statements.length, 1, `only the lookup ran, no invocation: ${statements.join('\n')}`)
  })

  test('cookies, forwarding headers and x-service-* headers are removed; the rest arrive lower-cased', async () => {
    // Mixed-case names, as senders write them (Content-Type is post()'s).
    const res = await post(shopToken, {
      body: '{}',
      headers: {
        'X-Orders-Signature': 'sha256=abc',
        'User-Agent': 'Shop-Hookshot/1.0',
        Authorization: 'Bearer sender-token',
        Cookie: 'svc_session=stolen; other=1',
        Forwarded: 'for=192.0.2.60;proto=http',
        'X-Forwarded-For': '203.0.113.7',
        'X-Forwarded-Host': 'evil.example',
        'X-Forwarded-Proto': 'http',
        'X-Real-IP': '203.0.113.8',
        Via: '1.1 proxy.example',
        'True-Client-IP': '203.0.113.9',
        'CF-Connecting-IP': '203.0.113.10',
        'X-Service-Sdk': '1',
        'X-Service-Anything': 'platform only',
        'Proxy-Authorization': 'Basic cHJveHk6cHJveHk=',
      },
    })
    const value = await res.json() as any
    assert.equal(res.status, 200, JSON.stringify(value))
    assert.deepEqual(value.input.headers, [
      { name: 'authorization', value: 'Bearer sender-token' },
      { name: 'content-type', value: 'application/json' },
      { name: 'user-agent', value: 'Shop-Hookshot/1.0' },
      { name: 'x-orders-signature', value: 'sha256=abc' },
    ])
  })

  test('status mapping: typed 401 and 403 pass through, other typed 4xx become 400, with the provider\'s code, message and details', async () => {
    assert.deepEqual(await hook('unauthorized').then((r) => [r.status, r.body]),
      [401, { error: { code: 'SIGNATURE_INVALID', message: 'the signature does not match' } }])
    assert.deepEqual(await hook('forbidden').then((r) => [r.status, r.body]),
      [403, { error: { code: 'SENDER_BLOCKED', message: 'this sender is blocked', details: { sender: 'acme' } } }])
    assert.deepEqual(await hook('not-found').then((r) => [r.status, r.body]),
      [400, { error: { code: 'ORDER_MISSING', message: 'no such order', details: { order: 7 } } }])
    assert.deepEqual(await hook('conflict').then((r) => [r.status, r.body]),
      [400, { error: { code: 'ORDER_LOCKED', message: 'the order is locked' } }])
  })

  test('errors.unauthorized refuses the sender only: the connection stays active', async () => {
    assert.equal((await hook('unauthorized')).status, 401)
    assert.equal((await findConnection(h.t.db, shopConnectionId))?.status, 'active')
    assert.equal((await hook('echo')).status, 200)
  })

  test('status mapping: errors.unavailable, an untyped failure and a timeout answer 503 so the sender retries, saying nothing of why', async () => {
    const generic = { error: { code: 'INTEGRATION_PROVIDER_UNAVAILABLE', message: 'the receiver is unavailable; try again later' } }
    for (const mode of ['unavailable', 'throw', 'slow']) {
      const res = await hook(mode)
      assert.deepEqual([res.status, res.body], [503, generic], mode)
      assert.ok(!res.text.includes(API_KEY) && !res.text.includes('exploded'), res.text)
    }
    const lines = log.withMessage('webhook: the provider did not take it')
    assert.deepEqual(lines.slice(-3).map((l) => l.outcome), ['typed 503 SHOP_DOWN', 'failed', 'timeout'])
    assert.ok(lines.every((l) => l.connectionId === shopConnectionId))
  })

  test('exactly 256 KiB is accepted; one byte more is refused 413 BODY_TOO_LARGE before any lookup or invocation', async () => {
    const exact = 'x'.repeat(MAX_WEBHOOK_BODY_BYTES - 3) + '\u00e9' + 'y' // 2 bytes for é: 256 KiB in all
    assert.equal(new TextEncoder().encode(exact).byteLength, MAX_WEBHOOK_BODY_BYTES)
    const accepted = await post(shopToken, { body: exact, headers: { 'x-mode': 'length' } })
    assert.equal(accepted.status, 200)
    assert.deepEqual(await accepted.json(), { bytes: MAX_WEBHOOK_BODY_BYTES })

    const { value: refused, statements } = await recorder.record(() => post(shopToken, { body: exact + 'z', headers: { 'x-mode': 'length' } }))
    assert.equal(refused.status, 413)
    assert.deepEqual(await refused.json(), {
      error: { code: 'BODY_TOO_LARGE', message: `a webhook body may be at most ${MAX_WEBHOOK_BODY_BYTES} bytes`, details: { maxBytes: MAX_WEBHOOK_BODY_BYTES } },
    })
    assert.deepEqual(statements, [], 'no statement ran: no lookup, no invocation')
  })

  test('a declared Content-Length over the limit is refused without reading the body', async () => {
    // A body that never ends: reading it would never finish.
    const endless = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) })
    const res = await h.platform.fetch(new Request(`http://localhost:8787/v1/hooks/${shopToken}`, {
      method: 'POST', body: endless, duplex: 'half', headers: { 'content-length': String(MAX_WEBHOOK_BODY_BYTES + 1) },
    } as RequestInit))
    assert.equal(res.status, 413)
  })

  test('a streamed body longer than the limit is refused once its bytes pass it', async () => {
    let sent = 0
    const chunk = new Uint8Array(64 * 1024).fill(0x61)
    const growing = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += chunk.byteLength
        controller.enqueue(chunk)
        if (sent > 10 * MAX_WEBHOOK_BODY_BYTES) controller.close()
      },
    })
    const res = await h.platform.fetch(new Request(`http://localhost:8787/v1/hooks/${shopToken}`, { method: 'POST', body: growing, duplex: 'half' } as RequestInit))
    assert.equal(res.status, 413)
    assert.ok(sent <= MAX_WEBHOOK_BODY_BYTES + 3 * chunk.byteLength, `read ${sent} bytes`)
  })

  test('wrong URLs answer one identical 404 whatever was wrong, after the same statements', async () => {
    const removed = await connect('shop', 'orders')
    await h.t.db.query('delete from platform.connections where id = $1', [removed.id])
    const noWebhook = await connect('quiet', 'notes')
    const paused = await connect('closed', 'ledger')
    await h.t.db.query(`update platform.apps set status = 'paused' where slug = 'closed'`)
    const cases: Record<string, string> = {
      'malformed': 'not-a-token',
      'empty': '',
      'overlong': `svc_hook_${'A'.repeat(400)}`,
      'extra segment': `${shopToken}/extra`,
      'unknown': newSecret('svc_hook_'),
      'one character off': shopToken.slice(0, -1) + (shopToken.endsWith('A') ? 'B' : 'A'),
      'connection removed': removed.token,
      'contract without webhook': noWebhook.token,
      'provider app not active': paused.token,
    }
    const seen: { name: string; status: number; headers: string; body: string; statements: string[] }[] = []
    for (const [name, token] of Object.entries(cases)) {
      const { value: res, statements } = await recorder.record(() => post(token, { body: '{"id":"evt_1"}' }))
      const headers = [...res.headers].filter(([key]) => key !== 'x-request-id').map(([key, value]) => `${key}: ${value}`).join('\n')
      seen.push({ name, status: res.status, headers, body: await res.text(), statements })
    }
    const first = seen[0]!
    assert.equal(first.status, 404)
    assert.deepEqual(JSON.parse(first.body), { error: { code: 'NOT_FOUND', message: 'there is no webhook at this address' } })
    assert.equal(first.statements.length, 1, first.statements.join('\n'))
    for (const each of seen) {
      assert.deepEqual({ status: each.status, headers: each.headers, body: each.body, statements: each.statements },
        { status: first.status, headers: first.headers, body: first.body, statements: first.statements }, `${each.name} differs from ${first.name}`)
    }
  })

  test('other methods answer 405 with Allow: POST, for any URL, without a lookup', async () => {
    for (const [method, token] of [['GET', shopToken], ['PUT', shopToken], ['DELETE', 'unknown'], ['HEAD', shopToken]] as const) {
      const { value: res, statements } = await recorder.record(() => post(token, { method }))
      assert.equal(res.status, 405, method)
      assert.equal(res.headers.get('allow'), 'POST')
      if (method !== 'HEAD') assert.equal(((await res.json()) as any).error.code, 'METHOD_NOT_ALLOWED')
      assert.deepEqual(statements, [])
    }
  })

  test('a connection that is Reconnect required answers 503 INTEGRATION_RECONNECT_REQUIRED and runs nothing', async () => {
    const { id, token } = await connect('shop', 'orders')
    assert.equal(await markReconnectRequired(h.t.db, { connection: (await findConnection(h.t.db, id))!, reason: 'test', at: h.clock.now() }), true)
    const { value: res, statements } = await recorder.record(() => post(token, { body: '{}' }))
    assert.equal(res.status, 503)
    assert.deepEqual(await res.json(), {
      error: { code: 'INTEGRATION_RECONNECT_REQUIRED', message: 'this connection must be reconnected before it receives webhooks; try again later' },
    })
    assert.equal(statements.length, 1, `only the lookup ran: ${statements.join('\n')}`)
  })

  test('the webhook Function may emit: a subscribed consumer\'s handler receives the change once, however often the sender retries it', async () => {
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'desk', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'desk', { 'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/on-event.ts': ON_EVENT_CODE })
    const bound = await h.request('/v1/apps/desk/integrations/shop/binding', { token: alice.token, method: 'PUT', json: { connectionId: shopConnectionId } })
    assert.equal(bound.status, 200, await bound.text())
    for (const expected of [1, 0]) {
      const answer = await hook('emit', '{"id":"evt_hook_1","order":"A-7"}')
      assert.deepEqual([answer.status, answer.body], [200, { deliveries: expected }], 'a retried delivery creates no new one')
    }
    h.clock.advance(5000)
    assert.equal(await h.platform.events.runDue(), 1)
    const rows = await h.t.db.query<{ state: string; attempts: number }>(
      `select state, attempts from platform.integration_event_deliveries where event_id = 'evt_hook_1'`)
    assert.deepEqual(rows.map((r) => [r.state, r.attempts]), [['delivered', 1]])
  })

  test('for an OAuth 2.0 contract the webhook Function reads the connection\'s access token under the declared name; a token that cannot be had answers 503', async () => {
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'crm', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'crm', { 'service.yaml': manifest('crm', OAUTH_PROVIDER, 'private'), 'functions/hook.ts': OAUTH_HOOK_CODE })
    const crm = (await findAppBySlug(h.t.db, 'crm'))!
    // Connections as the OAuth flow leaves them (the flow is tested in oauth/): one token valid, one expired without a refresh token.
    const made: string[] = []
    for (const expiresIn of [3600, 0]) {
      const id = crypto.randomUUID()
      const token = newSecret('svc_hook_')
      tokens.push(token)
      made.push(token)
      await insertConnection(h.t.db, {
        id, organisationId: crm.organisationId!, providerAppId: crm.id, integrationName: 'contacts', kind: 'organisation', ownerId: null,
        createdBy: alice.userId, label: `CRM ${expiresIn}`, webhookTokenHash: sha256(token), webhookTokenEncrypted: 'unused', webhookKeyId: 'k1', at: h.clock.now(),
      })
      await storeTokens(h.t.db, {
        keyring: h.platform.connectionKeyring, clock: h.clock, connectionId: id, tokens: { accessToken: ACCESS_TOKEN, refreshToken: null, expiresIn },
      })
    }
    const fresh = await post(made[0]!, { body: '{}' })
    assert.equal(fresh.status, 200)
    assert.deepEqual(await fresh.json(), { tokenDigest: sha256(ACCESS_TOKEN) })
    const expired = await post(made[1]!, { body: '{}' })
    assert.equal(expired.status, 503)
    assert.equal(((await expired.json()) as any).error.code, 'INTEGRATION_RECONNECT_REQUIRED')
  })

  test('the token is in no log line: request lines redact every path under /v1/hooks/, double slashes too', async () => {
    assert.equal((await post('', { path: `/v1/hooks//${shopToken}`, body: '{}' })).status, 404)
    assert.equal((await post('', { path: `/v1/hooks/${shopToken}/x/y`, body: '{}' })).status, 404)
    const requestLines = log.withMessage('request').filter((line) => String(line.path).startsWith('/v1/hooks'))
    assert.ok(requestLines.length > 20)
    assert.ok(requestLines.every((line) => line.path === '/v1/hooks/[secret]'), JSON.stringify(requestLines.map((l) => l.path)))
    const text = log.text()
    for (const token of tokens) assert.ok(!text.includes(token) && !text.includes(token.slice('svc_hook_'.length)), 'a webhook token was logged')
    assert.ok(!text.includes(API_KEY) && !text.includes(ACCESS_TOKEN), 'a credential was logged')
    const stored = JSON.stringify(await h.t.db.query('select message, fields from platform.function_logs'))
    for (const token of tokens) assert.ok(!stored.includes(token))
  })
})
