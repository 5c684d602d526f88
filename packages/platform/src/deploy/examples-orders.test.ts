/**
 * The orders examples end to end, as the README's tour walks them: deployed on first start
 * (with the provider's client secret generated and its authorization URL on the configured
 * base URL), the consumer's page says the slot is not bound, admin@localhost connects the
 * orders integration through the OAuth flow (the connect form, the provider app's own demo
 * authorize page in real Deno, the callback), binds the consumer's slot with an owner token
 * from the CLI login, and the consumer's Function gets the orders through the broker.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
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
})
