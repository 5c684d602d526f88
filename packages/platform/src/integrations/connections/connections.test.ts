/**
 * Connections (spec 2.8, 3.2) end to end: people enter credentials on the pages of
 * `{auth_url}` (a cookie browser with CSRF), the owner API shows metadata only, values are
 * encrypted at rest and never come back in a response or a log line, Reconnect required is
 * cleared by replacing the credentials, and only the people who manage a connection see its
 * webhook URL, replace or remove it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { manifest, ownerApi, startHarness, type Harness } from '../../../test/harness.ts'
import { contactsContract, deployApp, listOrders, ordersContract } from '../../../test/integration-fixture.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH, signedInBrowser } from '../../../test/sign-in-flow.ts'
import { capturedLog, type CapturedLog } from '../../../test/captured-log.ts'
import { deriveKey } from '../../lib/master-key.ts'
import { randomBytes } from 'node:crypto'
import {
  findConnection, findConnectionByWebhookToken, markReconnectRequired, readConnectionCredentials, resealConnections, type ConnectionKeyring,
} from './index.ts'

const DOMAIN = 'acme-shop.example.com'
const API_KEY = 'sk_live_connection_key_5f9e21c7'
const ORG_API_KEY = 'sk_live_org_connection_key_a81b3d'
const NEW_API_KEY = 'sk_live_replaced_key_0c44e2'
const NOTE = 'optional-note-value-93kd'
const SECRETS = [API_KEY, ORG_API_KEY, NEW_API_KEY, NOTE]

const PROVIDER = `functions:
  - name: listOrdersImpl
    entrypoint: functions/list.ts
    access: system
${ordersContract({
  credentials: [
    { name: 'SHOP_DOMAIN', label: 'Shop domain', secret: false },
    { name: 'SHOP_API_KEY', label: 'API key' },
    { name: 'SHOP_NOTE', label: 'Note', optional: true },
  ],
  operations: [listOrders('listOrdersImpl')],
})}`

const OAUTH_PROVIDER = `secrets:
  CRM_CLIENT_SECRET: required
functions:
  - name: listContacts
    entrypoint: functions/list.ts
    access: system
  - name: swapCode
    entrypoint: functions/list.ts
    access: system
${contactsContract({ exchange: 'swapCode', operation: 'listContacts', credentials: [{ name: 'CRM_REGION', label: 'Region', secret: false }] })}`

/** A browser signed in at the auth host as an existing, confirmed person. */
describe(`connections (${backend})`, () => {
  let h: Harness
  let log: CapturedLog
  let alice: { token: string; userId: string } // organisation administrator of Acme, owns the provider app
  let bob: { token: string; userId: string } // member of Acme
  let eve: { token: string; userId: string } // administrator of another organisation
  let aliceBrowser: CookieClient
  let bobBrowser: CookieClient
  let eveBrowser: CookieClient
  /** Every response body a test read (searched for credential values at the end). */
  const seen: string[] = []

  async function read(res: Response): Promise<string> {
    const text = await res.text()
    seen.push(text, JSON.stringify([...res.headers]))
    return text
  }

  async function api(token: string, method: string, path: string) {
    const res = await ownerApi(h, token, method, path)
    seen.push(res.text)
    return res
  }

  before(async () => {
    log = capturedLog('debug')
    h = await startHarness(undefined, { logger: log.logger })
    alice = await h.createOwner('alice@acme.test', 'Acme')
    bob = await h.createOwner('bob@acme.test', 'Acme')
    eve = await h.createOwner('eve@globex.test', 'Globex')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'shop', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'shop', { 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/list.ts': 'export default 1' })
    aliceBrowser = await signedInBrowser(h, 'alice@acme.test')
    bobBrowser = await signedInBrowser(h, 'bob@acme.test')
    eveBrowser = await signedInBrowser(h, 'eve@globex.test')
  })
  after(() => h.close())

  async function connectPage(b: CookieClient, app = 'shop', integration = 'orders') {
    const res = await b.fetch(`${AUTH}/connections/new?app=${app}&integration=${integration}`)
    return { res, html: await read(res) }
  }

  /** Fills and submits the connect form as a person does. */
  async function connect(b: CookieClient, input: { label: string; kind?: string; values: Record<string, string> }) {
    const { res, html } = await connectPage(b)
    assert.equal(res.status, 200, html)
    const fields: Record<string, string> = {
      csrf: field(html, 'csrf'), app: field(html, 'app'), integration: field(html, 'integration'),
      label: input.label, kind: input.kind ?? 'personal',
    }
    for (const [name, value] of Object.entries(input.values)) fields[`value.${name}`] = value
    return b.post(`${AUTH}/connections/new`, fields)
  }

  async function connected(b: CookieClient, input: { label: string; kind?: string; values: Record<string, string> }): Promise<string> {
    const res = await connect(b, input)
    assert.equal(res.status, 303, await read(res))
    // The auth host's redirects are absolute and same-origin (issue 11, finding 3).
    const match = /^(.*)\/connections\/([0-9a-f-]{36})$/.exec(res.headers.get('location')!)
    assert.ok(match, res.headers.get('location')!)
    assert.equal(match[1], AUTH)
    return match[2]!
  }

  async function managePage(b: CookieClient, id: string) {
    const res = await b.fetch(`${AUTH}/connections/${id}`)
    return { res, html: await read(res) }
  }

  async function countConnections(): Promise<number> {
    const rows = await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.connections')
    return rows[0]!.n
  }

  test('a person creates a personal connection on the page; its page shows the non-secret value and the webhook URL, never the secret', async () => {
    const { html: form } = await connectPage(bobBrowser)
    assert.match(form, /<input id="f-SHOP_API_KEY" name="value.SHOP_API_KEY" type="password"/)
    assert.match(form, /<input id="f-SHOP_DOMAIN" name="value.SHOP_DOMAIN" type="text"/)
    assert.doesNotMatch(form, /name="kind" value="organisation"|<option value="organisation"/, 'a member is not offered an organisation connection')
    const id = await connected(bobBrowser, { label: 'My shop', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: API_KEY, SHOP_NOTE: NOTE } })
    const { res, html } = await managePage(bobBrowser, id)
    assert.equal(res.status, 200)
    assert.match(html, /<strong id="status">Active<\/strong>/)
    assert.ok(html.includes(DOMAIN), 'the non-secret field is shown back')
    assert.ok(!html.includes(API_KEY) && !html.includes(NOTE), 'secret fields are never shown')
    assert.match(html, /value="http:\/\/localhost:8787\/v1\/hooks\/svc_hook_[A-Za-z0-9_-]{43}"/)
    assert.match(res.headers.get('content-security-policy')!, /script-src 'nonce-/)

    const listed = await api(bob.token, 'GET', '/v1/connections')
    assert.equal(listed.status, 200)
    const mine = listed.body.connections.find((c: { id: string }) => c.id === id)
    assert.deepEqual(
      { integration: mine.integration, providerApp: mine.providerApp.slug, kind: mine.kind, label: mine.label, status: mine.status },
      { integration: 'orders', providerApp: 'shop', kind: 'personal', label: 'My shop', status: 'active' })
    assert.ok(!listed.text.includes(DOMAIN) && !listed.text.includes('svc_hook_'), 'the owner API shows no value and no webhook URL')
    const others = await api(alice.token, 'GET', '/v1/connections')
    assert.ok(!others.body.connections.some((c: { id: string }) => c.id === id), 'a personal connection is its owner\'s alone')
  })

  test('a required field left empty is refused with the field named, and nothing is stored', async () => {
    const before = await countConnections()
    const res = await connect(bobBrowser, { label: 'Broken', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: '' } })
    const html = await read(res)
    assert.equal(res.status, 400)
    assert.match(html, /&quot;API key&quot; is required/)
    assert.ok(html.includes(`value="${DOMAIN}"`), 'the non-secret value is kept in the form')
    assert.equal(await countConnections(), before)
  })

  test('forms need the CSRF token and the auth origin; an anonymous browser is sent to sign in first', async () => {
    const before = await countConnections()
    const { html } = await connectPage(bobBrowser)
    const fields = { app: 'shop', integration: 'orders', label: 'x', kind: 'personal', 'value.SHOP_DOMAIN': DOMAIN, 'value.SHOP_API_KEY': API_KEY }
    assert.equal((await bobBrowser.post(`${AUTH}/connections/new`, fields)).status, 403)
    assert.equal((await bobBrowser.post(`${AUTH}/connections/new`, { ...fields, csrf: field(html, 'csrf') }, 'http://shop.localhost:8787')).status, 403)
    assert.equal(await countConnections(), before)
    const anonymous = await new CookieClient(h).fetch(`${AUTH}/connections/new?app=shop&integration=orders`)
    assert.equal(anonymous.status, 302)
    assert.equal(anonymous.headers.get('location'), `${AUTH}/sign-in?continue=${encodeURIComponent('/connections/new?app=shop&integration=orders')}`)
  })

  test('an organisation administrator creates an organisation connection that the organisation lists and only administrators manage', async () => {
    const { html: form } = await connectPage(aliceBrowser)
    assert.match(form, /<option value="organisation"/)
    const id = await connected(aliceBrowser, { label: 'Acme shop', kind: 'organisation', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: ORG_API_KEY } })
    const listed = await api(bob.token, 'GET', '/v1/connections')
    const org = listed.body.connections.find((c: { id: string }) => c.id === id)
    assert.equal(org.kind, 'organisation')
    assert.equal((await api(bob.token, 'GET', `/v1/connections/${id}`)).body.connection.label, 'Acme shop')

    // A member sees it listed but neither its page (nor its webhook URL), nor replaces or removes it.
    const page = await managePage(bobBrowser, id)
    assert.equal(page.res.status, 403)
    assert.ok(!page.html.includes('svc_hook_'))
    const csrf = field((await connectPage(bobBrowser)).html, 'csrf')
    const replaced = await bobBrowser.post(`${AUTH}/connections/${id}/credentials`,
      { csrf, 'value.SHOP_DOMAIN': DOMAIN, 'value.SHOP_API_KEY': NEW_API_KEY })
    assert.equal(replaced.status, 403)
    assert.equal((await bobBrowser.post(`${AUTH}/connections/${id}/remove`, { csrf })).status, 403)
    const removed = await api(bob.token, 'DELETE', `/v1/connections/${id}`)
    assert.equal(removed.status, 403)
    assert.equal(removed.body.error.code, 'FORBIDDEN')
    const stored = await readConnectionCredentials(h.t.db, { keyring: h.platform.connectionKeyring, connectionId: id })
    assert.equal(stored.values.get('SHOP_API_KEY'), ORG_API_KEY, 'the member\'s replacement did not land')

    // The administrator sees the webhook URL and removes it.
    const own = await managePage(aliceBrowser, id)
    assert.equal(own.res.status, 200)
    assert.match(own.html, /\/v1\/hooks\/svc_hook_/)
    assert.equal((await api(alice.token, 'DELETE', `/v1/connections/${id}`)).status, 204)
    assert.equal((await api(alice.token, 'GET', `/v1/connections/${id}`)).body.error.code, 'CONNECTION_NOT_FOUND')
    const rows = await h.t.db.query('select 1 from platform.connection_credentials where connection_id = $1', [id])
    assert.equal(rows.length, 0, 'its credentials went with it')
  })

  test('a member cannot create an organisation connection', async () => {
    const before = await countConnections()
    const res = await connect(bobBrowser, { label: 'Sneaky', kind: 'organisation', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: API_KEY } })
    assert.equal(res.status, 403)
    assert.match(await read(res), /only organisation administrators create organisation connections/)
    assert.equal(await countConnections(), before)
  })

  test('a person of another organisation can neither connect to the integration nor see or manage its connections', async () => {
    const before = await countConnections()
    const { res, html } = await connectPage(eveBrowser)
    assert.equal(res.status, 404)
    assert.doesNotMatch(html, /<form/)
    const csrf = eveBrowser.cookie('auth.localhost:8787', 'svc_csrf')!
    assert.ok(csrf, 'the browser holds a CSRF token from signing in')
    const posted = await eveBrowser.post(`${AUTH}/connections/new`,
      { csrf, app: 'shop', integration: 'orders', label: 'Mine', kind: 'organisation', 'value.SHOP_DOMAIN': DOMAIN, 'value.SHOP_API_KEY': API_KEY })
    assert.equal(posted.status, 404)
    assert.equal(await countConnections(), before)

    const id = await connected(aliceBrowser, { label: 'Acme shop 2', kind: 'organisation', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: ORG_API_KEY } })
    assert.ok(!(await api(eve.token, 'GET', '/v1/connections')).body.connections.some((c: { id: string }) => c.id === id))
    assert.equal((await api(eve.token, 'GET', `/v1/connections/${id}`)).status, 404)
    assert.equal((await api(eve.token, 'DELETE', `/v1/connections/${id}`)).body.error.code, 'CONNECTION_NOT_FOUND')
    const page = await managePage(eveBrowser, id)
    assert.equal(page.res.status, 404)
    assert.ok(!page.html.includes('svc_hook_'))
  })

  test('a person outside the provider\'s Use audience cannot connect; an organisation administrator still makes organisation connections', async () => {
    const put = await ownerApi(h, alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'people', usePeople: [] })
    assert.equal(put.status, 200, put.text)
    try {
      const before = await countConnections()
      const page = await connectPage(bobBrowser)
      assert.equal(page.res.status, 403)
      assert.match(page.html, /not in the Use audience/)
      const csrf = bobBrowser.cookie('auth.localhost:8787', 'svc_csrf')!
      const posted = await bobBrowser.post(`${AUTH}/connections/new`,
        { csrf, app: 'shop', integration: 'orders', label: 'Mine', kind: 'personal', 'value.SHOP_DOMAIN': DOMAIN, 'value.SHOP_API_KEY': API_KEY })
      assert.equal(posted.status, 403)
      assert.equal(await countConnections(), before)
      // alice owns the app (always in its audience) and administers the organisation: both kinds.
      assert.match((await connectPage(aliceBrowser)).html, /<option value="organisation"/)
    } finally {
      assert.equal((await ownerApi(h, alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'organisation' })).status, 200)
    }
    assert.equal((await connectPage(bobBrowser)).res.status, 200)
  })

  test('the owner API pages through connections with a cursor and refuses a bad limit or cursor', async () => {
    const all = (await api(bob.token, 'GET', '/v1/connections?limit=100')).body.connections as { id: string }[]
    assert.ok(all.length >= 2)
    const ids: string[] = []
    let cursor: string | null = null
    do {
      const res = await api(bob.token, 'GET', `/v1/connections?limit=1${cursor ? `&nextCursor=${cursor}` : ''}`)
      assert.equal(res.status, 200)
      assert.equal(res.body.connections.length, 1)
      ids.push(res.body.connections[0].id)
      cursor = res.body.nextCursor
    } while (cursor)
    assert.deepEqual(ids, all.map((c) => c.id))
    assert.equal((await api(bob.token, 'GET', '/v1/connections?limit=0')).body.error.details.field, 'limit')
    assert.equal((await api(bob.token, 'GET', '/v1/connections?nextCursor=nope')).body.error.details.field, 'nextCursor')
    assert.equal((await api('svc_owner_unknown', 'GET', '/v1/connections')).status, 401)
  })

  test('an integration that declares OAuth 2.0 is connected by signing in at the provider: no connection exists before its callback (integrations/oauth)', async () => {
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'crm', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'crm', { 'service.yaml': manifest('crm', OAUTH_PROVIDER, 'private'), 'functions/list.ts': 'export default 1' })
    const page = await connectPage(aliceBrowser, 'crm', 'contacts')
    assert.equal(page.res.status, 200)
    assert.match(page.html, /Continue to sign in at the provider/)
    const before = await countConnections()
    const res = await aliceBrowser.post(`${AUTH}/connections/new`,
      { csrf: field(page.html, 'csrf'), app: 'crm', integration: 'contacts', label: 'CRM', kind: 'personal', 'value.CRM_REGION': 'eu' })
    assert.equal(res.status, 303)
    assert.match(res.headers.get('location')!, /^https:\/\/crm\.example\.com\/authorize\?response_type=code&/)
    assert.equal(await countConnections(), before)
  })

  test('an app that does not publish the integration, or an unknown app, offers nothing to connect to', async () => {
    assert.equal((await connectPage(bobBrowser, 'shop', 'invoices')).res.status, 404)
    assert.equal((await connectPage(bobBrowser, 'no-such-app', 'orders')).res.status, 404)
  })

  test('values are encrypted at rest under a key id, bound to their connection and field', async () => {
    const id = await connected(bobBrowser, { label: 'At rest', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: API_KEY } })
    const dump = JSON.stringify([
      await h.t.db.query('select * from platform.connections'),
      await h.t.db.query('select * from platform.connection_credentials'),
    ])
    for (const value of [DOMAIN, API_KEY, 'svc_hook_']) assert.ok(!dump.includes(value), `no plaintext ${value} in the tables`)
    const rows = await h.t.db.query<{ name: string; key_id: string; value_encrypted: string }>(
      'select name, key_id, value_encrypted from platform.connection_credentials where connection_id = $1 order by name', [id])
    assert.deepEqual(rows.map((row) => [row.name, row.key_id]), [['SHOP_API_KEY', 'k1'], ['SHOP_DOMAIN', 'k1']])
    const read = await readConnectionCredentials(h.t.db, { keyring: h.platform.connectionKeyring, connectionId: id })
    assert.deepEqual([...read.values].sort(), [['SHOP_API_KEY', API_KEY], ['SHOP_DOMAIN', DOMAIN]])

    // A ciphertext moved to another field no longer opens.
    await h.t.db.query(`update platform.connection_credentials set value_encrypted = $2 where connection_id = $1 and name = 'SHOP_DOMAIN'`,
      [id, rows[0]!.value_encrypted])
    await assert.rejects(readConnectionCredentials(h.t.db, { keyring: h.platform.connectionKeyring, connectionId: id }))
    await h.t.db.query('delete from platform.connections where id = $1', [id])
  })

  test('Reconnect required is shown to the owner and cleared by replacing the credentials', async () => {
    const id = await connected(bobBrowser, { label: 'Flaky', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: API_KEY, SHOP_NOTE: NOTE } })
    assert.equal(await markReconnectRequired(h.t.db, { connection: (await findConnection(h.t.db, id))!, reason: 'the provider rejected the credentials', at: h.clock.now() }), true)
    assert.equal(await markReconnectRequired(h.t.db, { connection: (await findConnection(h.t.db, id))!, reason: 'again', at: h.clock.now() }), false)
    const listed = (await api(bob.token, 'GET', `/v1/connections/${id}`)).body.connection
    assert.deepEqual([listed.status, listed.statusText], ['reconnect_required', 'Reconnect required'])
    const { html } = await managePage(bobBrowser, id)
    assert.match(html, /<strong id="status">Reconnect required<\/strong>/)

    const res = await bobBrowser.post(`${AUTH}/connections/${id}/credentials`,
      { csrf: field(html, 'csrf'), 'value.SHOP_DOMAIN': DOMAIN, 'value.SHOP_API_KEY': NEW_API_KEY })
    const after = await read(res)
    assert.equal(res.status, 200)
    assert.match(after, /<strong id="status">Active<\/strong>/)
    assert.equal((await api(bob.token, 'GET', `/v1/connections/${id}`)).body.connection.status, 'active')
    const stored = await readConnectionCredentials(h.t.db, { keyring: h.platform.connectionKeyring, connectionId: id })
    assert.deepEqual([...stored.values].sort(), [['SHOP_API_KEY', NEW_API_KEY], ['SHOP_DOMAIN', DOMAIN]], 'the optional note left empty is dropped')
  })

  test('an organisation administrator replaces an organisation connection\'s credentials', async () => {
    const id = await connected(aliceBrowser, { label: 'Org flaky', kind: 'organisation', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: ORG_API_KEY } })
    await markReconnectRequired(h.t.db, { connection: (await findConnection(h.t.db, id))!, reason: 'rejected', at: h.clock.now() })
    const { html } = await managePage(aliceBrowser, id)
    const res = await aliceBrowser.post(`${AUTH}/connections/${id}/credentials`,
      { csrf: field(html, 'csrf'), 'value.SHOP_DOMAIN': DOMAIN, 'value.SHOP_API_KEY': NEW_API_KEY })
    assert.equal(res.status, 200, await read(res))
    assert.equal((await api(bob.token, 'GET', `/v1/connections/${id}`)).body.connection.status, 'active')
  })

  test('the webhook token finds its connection and is stored only hashed and encrypted', async () => {
    const id = await connected(bobBrowser, { label: 'Hooks', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: API_KEY } })
    const { html } = await managePage(bobBrowser, id)
    const token = /\/v1\/hooks\/(svc_hook_[A-Za-z0-9_-]{43})/.exec(html)![1]!
    assert.equal((await findConnectionByWebhookToken(h.t.db, token))?.id, id)
    assert.equal(await findConnectionByWebhookToken(h.t.db, token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')), null)
    const stored = JSON.stringify(await h.t.db.query('select * from platform.connections where id = $1', [id]))
    assert.ok(!stored.includes(token))
    // This contract declares no webhook: its URL answers like an unknown one (integrations/webhooks).
    assert.equal((await h.request(`/v1/hooks/${token}`, { method: 'POST', body: '{}' })).status, 404)
  })

  test('rotating the key re-encrypts every value and webhook token under the new key id', async () => {
    const id = await connected(bobBrowser, { label: 'Rotate', values: { SHOP_DOMAIN: DOMAIN, SHOP_API_KEY: API_KEY } })
    const old = h.platform.connectionKeyring
    const k2 = deriveKey(new Uint8Array(randomBytes(32)), 'connection-credentials:k2')
    const rotating: ConnectionKeyring = { current: 'k2', keys: new Map([...old.keys, ['k2', k2]]) }
    assert.ok((await resealConnections(h.t.db, rotating)) > 0)
    assert.equal(await resealConnections(h.t.db, rotating), 0)
    const ids = await h.t.db.query<{ key_id: string }>('select distinct key_id from platform.connection_credentials')
    assert.deepEqual(ids.map((row) => row.key_id), ['k2'])
    const rotated: ConnectionKeyring = { current: 'k2', keys: new Map([['k2', k2]]) }
    const read = await readConnectionCredentials(h.t.db, { keyring: rotated, connectionId: id })
    assert.equal(read.values.get('SHOP_API_KEY'), API_KEY)
    // Back under the platform's own key, its pages open the webhook token again.
    await resealConnections(h.t.db, { current: old.current, keys: new Map([...old.keys, ['k2', k2]]) })
    const { html } = await managePage(bobBrowser, id)
    assert.match(html, /\/v1\/hooks\/svc_hook_/)
  })

  test('no secret credential value ever appears in a response or a log line', () => {
    assert.ok(seen.length > 20)
    const responses = seen.join('\n')
    const logs = log.text()
    assert.ok(log.withMessage('connection created').length > 0, 'the flows were logged')
    for (const value of SECRETS) {
      assert.ok(!responses.includes(value), `${value} appeared in a response`)
      assert.ok(!logs.includes(value), `${value} appeared in the log`)
    }
    for (const line of log.lines) {
      const text = JSON.stringify(line)
      assert.ok(!text.includes(DOMAIN) && !text.includes('svc_hook_'), `nor the non-secret value or the webhook token in the log: ${text}`)
    }
  })
})
