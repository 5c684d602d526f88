/**
 * The orders examples end to end, as the README's tour walks them: deployed on first start
 * (with the provider's client secret generated and its authorization URL on the configured
 * base URL), the consumer's page says the slot is not bound, admin@localhost connects the
 * orders integration through the OAuth flow (the connect form, the provider app's own demo
 * authorize page in real Deno, the callback), binds the consumer's slot with an owner token
 * from the CLI login, and the consumer's Function gets the orders through the broker. The
 * provider's webhook Function accepts only bodies signed with the connection's
 * WEBHOOK_SIGNING_SECRET (HMAC-SHA256, checked with crypto.subtle.verify) and emits them as
 * order.updated events.
 */
import assert from 'node:assert/strict'
import { createHmac, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { after, before, describe, test } from 'node:test'
import { ManualClock } from '../lib/clock.ts'
import { newSecret } from '../lib/crypto.ts'
import { silentLogger } from '../lib/logger.ts'
import { backend, createTestDb } from '../../test/test-db.ts'
import { BASE, type Harness } from '../../test/harness.ts'
import { field } from '../../test/cookie-client.ts'
import { AUTH, appUrl, signedInBrowser } from '../../test/sign-in-flow.ts'
import { startPlatform } from '../integrations/oauth/test-platform.ts'
import { deployExamples, withBaseUrl } from './examples.ts'

const EXAMPLES_DIR = fileURLToPath(new URL('../../../../examples', import.meta.url))
const SIGNING_SECRET = 'whsec_orders_demo_6c1f9e0b27'

function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}

describe(`the orders examples (${backend})`, () => {
  let h: Harness
  const masterKey = new Uint8Array(randomBytes(32))

  before(async () => {
    h = await startPlatform(await createTestDb(), {
      masterKey, clock: new ManualClock('2026-11-21T12:00:00Z'), operatorKey: newSecret('svc_operator_'), logger: silentLogger,
    })
  })
  after(() => h.close())

  async function ordersDesk(): Promise<{ orders: { id: string }[] | null; problem: { code: string } | null }> {
    const res = await h.request('/api/orders', { host: 'orders-desk' })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    return JSON.parse(text) as { orders: { id: string }[] | null; problem: { code: string } | null }
  }

  /** An owner token for admin@localhost, as `service login` gets one. */
  async function adminToken(): Promise<string> {
    const started = await h.request('/v1/cli/logins', { json: {} })
    assert.equal(started.status, 201)
    const login = (await started.json()) as { id: string; approveUrl: string; pollToken: string }
    const b = await signedInBrowser(h, 'admin@localhost')
    const review = await b.fetch(login.approveUrl)
    assert.equal((await b.post(login.approveUrl, { csrf: field(await review.text(), 'csrf') })).status, 200)
    const polled = await h.request(`/v1/cli/logins/${login.id}/poll`, { json: { pollToken: login.pollToken } })
    return ((await polled.json()) as { token: string }).token
  }

  test('origins written for the default base URL follow the configured one', () => {
    const text = 'authorizationUrl: http://orders.localhost:8787/oauth/authorize\nbase: http://localhost:8787/v1\nother: http://localhost:87870'
    assert.equal(
      withBaseUrl(text, new URL('https://platform.example.com')),
      'authorizationUrl: https://orders.platform.example.com/oauth/authorize\nbase: https://platform.example.com/v1\nother: http://localhost:87870',
    )
  })

  test('the first start deploys the provider, the consumer and tasks, the provider with its client secret set', async () => {
    const statuses = await deployExamples({ db: h.t.db, clock: h.clock, logger: silentLogger, dir: EXAMPLES_DIR, baseUrl: new URL(BASE), masterKey })
    assert.deepEqual(statuses.map((s) => [s.slug, s.visibility, s.deployedNow]), [
      ['orders', 'public', true], ['orders-desk', 'public', true], ['tasks', 'private', true],
    ])
    const token = await adminToken()
    const secrets = await h.request('/v1/apps/orders/secrets', { token })
    const body = (await secrets.json()) as { secrets: { name: string; required: boolean; set: boolean }[] }
    assert.deepEqual(body.secrets.map((s) => [s.name, s.required, s.set]), [['ORDERS_CLIENT_SECRET', true, true]])
    const oauth = await h.request('/v1/apps/orders/integration-oauth', { token })
    assert.equal(((await oauth.json()) as { authorizationUrl: string }).authorizationUrl, `${appUrl('orders')}/oauth/authorize`)
  })

  test('unbound, the consumer page says so; connected through the demo OAuth page and bound, it lists the orders', async () => {
    assert.deepEqual((await ordersDesk()).problem?.code, 'INTEGRATION_NOT_BOUND')

    const b = await signedInBrowser(h, 'admin@localhost')
    const form = await b.fetch(`${AUTH}/connections/new?app=orders&integration=orders`)
    const formHtml = await form.text()
    assert.equal(form.status, 200, formHtml)
    const started = await b.post(`${AUTH}/connections/new`, {
      csrf: field(formHtml, 'csrf'), app: 'orders', integration: 'orders', label: 'Demo shop', kind: 'personal',
    })
    assert.equal(started.status, 303, await started.text())
    const authorizeUrl = started.headers.get('location')!
    assert.ok(authorizeUrl.startsWith(`${appUrl('orders')}/oauth/authorize?`), authorizeUrl)

    const page = await b.fetch(authorizeUrl)
    const pageHtml = await page.text()
    assert.equal(page.status, 200, pageHtml)
    const approve = /id="approve" href="([^"]+)"/.exec(pageHtml)![1]!.replaceAll('&amp;', '&')
    assert.ok(approve.startsWith(`${BASE}/v1/custom-integrations/oauth/callback?`), approve)
    const { response } = await b.visit(approve)
    const finished = await response.text()
    assert.equal(response.status, 200, finished)
    const connectionId = /href="\/connections\/([0-9a-f-]{36})"/.exec(finished)![1]!

    const token = await adminToken()
    const bound = await h.request('/v1/apps/orders-desk/integrations/orders/binding', { token, method: 'PUT', json: { connectionId } })
    assert.equal(bound.status, 200, await bound.text())

    const desk = await ordersDesk()
    assert.equal(desk.problem, null)
    assert.deepEqual(desk.orders?.map((o) => o.id), ['ord_1003', 'ord_1002', 'ord_1001'])
  })

  test('a forged code is refused by the provider\'s exchange and nothing is connected', async () => {
    const b = await signedInBrowser(h, 'admin@localhost')
    const form = await (await b.fetch(`${AUTH}/connections/new?app=orders&integration=orders`)).text()
    const started = await b.post(`${AUTH}/connections/new`, {
      csrf: field(form, 'csrf'), app: 'orders', integration: 'orders', label: 'Forged', kind: 'personal',
    })
    const state = new URL(started.headers.get('location')!).searchParams.get('state')!
    const forged = new URLSearchParams({ code: 'code.eyJyIjoieCJ9.AAAA', state })
    const { response } = await b.visit(`${BASE}/v1/custom-integrations/oauth/callback?${forged}`)
    const html = await response.text()
    assert.equal(response.status, 502, html)
    const token = await adminToken()
    const list = (await (await h.request('/v1/connections', { token })).json()) as { connections: { label: string }[] }
    assert.deepEqual(list.connections.map((c) => c.label), ['Demo shop'])
  })

  /** Connects the orders integration through the demo OAuth page with these credential values; the connection's id. */
  async function connectOrders(label: string, values: Record<string, string>): Promise<string> {
    const b = await signedInBrowser(h, 'admin@localhost')
    const form = await (await b.fetch(`${AUTH}/connections/new?app=orders&integration=orders`)).text()
    const started = await b.post(`${AUTH}/connections/new`, {
      csrf: field(form, 'csrf'), app: 'orders', integration: 'orders', label, kind: 'personal', ...values,
    })
    assert.equal(started.status, 303, await started.text())
    const page = await (await b.fetch(started.headers.get('location')!)).text()
    const approve = /id="approve" href="([^"]+)"/.exec(page)![1]!.replaceAll('&amp;', '&')
    const { response } = await b.visit(approve)
    const finished = await response.text()
    assert.equal(response.status, 200, finished)
    return /href="\/connections\/([0-9a-f-]{36})"/.exec(finished)![1]!
  }

  /** The connection's webhook path, from its managers' page. */
  async function webhookPath(connectionId: string): Promise<string> {
    const b = await signedInBrowser(h, 'admin@localhost')
    const html = await (await b.fetch(`${AUTH}/connections/${connectionId}`)).text()
    return /\/v1\/hooks\/svc_hook_[A-Za-z0-9_-]{43}/.exec(html)![0]!
  }

  async function deliver(path: string, body: string, header?: string): Promise<{ status: number; body: any }> {
    const res = await h.request(path, {
      method: 'POST', body, headers: { 'content-type': 'application/json', ...(header === undefined ? {} : { 'x-orders-signature': header }) },
    })
    return { status: res.status, body: await res.json() }
  }

  test('the provider\'s webhook Function takes a change signed with the connection\'s WEBHOOK_SIGNING_SECRET and refuses any other', async () => {
    const id = await connectOrders('Signed shop', { 'value.WEBHOOK_SIGNING_SECRET': SIGNING_SECRET })
    const path = await webhookPath(id)
    const change = '{"id":"chg_1","type":"order.updated","order":{"id":"ord_1002","status":"shipped"}}'

    // No slot subscribes to order.updated: the event is emitted (its type declared), with no delivery.
    assert.deepEqual(await deliver(path, change, signature(SIGNING_SECRET, change)), { status: 200, body: { received: true, id: 'chg_1', deliveries: 0 } })

    const refused = { status: 401, body: { error: { code: 'SIGNATURE_INVALID', message: 'The x-orders-signature header does not sign this body' } } }
    assert.deepEqual(await deliver(path, change, signature('whsec_someone_else', change)), refused, 'signed with another secret')
    assert.deepEqual(await deliver(path, change.replace('ord_1002', 'ord_1003'), signature(SIGNING_SECRET, change)), refused, 'a tampered body')
    assert.deepEqual(await deliver(path, change, signature(SIGNING_SECRET, change).slice(0, -2)), refused, 'a truncated signature')
    assert.deepEqual(await deliver(path, change, 'sha256=not-hex'), refused, 'not hexadecimal')
    assert.deepEqual(await deliver(path, change), refused, 'no signature header')
    const notChange = '{"id":"chg_2","type":"order.deleted","order":{}}'
    assert.equal((await deliver(path, notChange, signature(SIGNING_SECRET, notChange))).body.error.code, 'CHANGE_INVALID')

    // The sender was refused, not the connection's credentials: it stays active.
    const token = await adminToken()
    const list = (await (await h.request('/v1/connections', { token })).json()) as { connections: { id: string; status: string }[] }
    assert.equal(list.connections.find((c) => c.id === id)?.status, 'active')
  })

  test('a connection without a signing secret refuses webhooks 403 WEBHOOK_NOT_CONFIGURED', async () => {
    const id = await connectOrders('Unsigned shop', {})
    const change = '{"id":"chg_3","type":"order.updated","order":{}}'
    const answer = await deliver(await webhookPath(id), change, signature(SIGNING_SECRET, change))
    assert.equal(answer.status, 403)
    assert.equal(answer.body.error.code, 'WEBHOOK_NOT_CONFIGURED')
  })

  test('the signature is compared in constant time by construction: crypto.subtle.verify, never a string comparison', () => {
    const source = readFileSync(`${EXAMPLES_DIR}/orders/functions/receive-webhook.ts`, 'utf8')
    assert.match(source, /crypto\.subtle\.verify\('HMAC', key, signature, encoder\.encode\(input\.body\)\)/)
    assert.doesNotMatch(source, /crypto\.subtle\.sign\(/, 'no MAC is computed to be compared by hand')
    const compared = source.replaceAll('signature === null', '')
    assert.doesNotMatch(compared, /signature\s*[!=]==|[!=]==\s*signature|timingSafeEqual|\bBuffer\b/, 'no comparison of the signature as values, no Buffer in Deno')
  })
})
