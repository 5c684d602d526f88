/**
 * The provider app's integration page on `{auth_url}` (spec 2.6, 4.1, 5.6), driven as a
 * person does with a cookie browser: its administrators see the contract, the exact OAuth
 * redirect URI and the audience form; people who may use it see a read-only page; everyone
 * else gets the 404 of an app that publishes nothing; the form needs its CSRF token and its
 * changes take effect; no secret and no script of the contract's reaches the page.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { BASE, manifest, ownerApi, startHarness, type Harness } from '../../../test/harness.ts'
import { deployApp, listOrders, ordersContract } from '../../../test/integration-fixture.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH, signedInBrowser } from '../../../test/sign-in-flow.ts'
import { findConnection, markReconnectRequired } from '../connections/index.ts'

const CLIENT_SECRET = 'crm-client-secret-value-6c1f0a9e'
const API_KEY = 'sk_live_provider_page_key_41d2'
const ORG_API_KEY = 'sk_live_provider_page_org_key_9b7c'
const HOSTILE = `<script>alert("desc")</script><img src=x onerror=alert(1)>`

const SHOP = `functions:
  - name: listOrdersImpl
    entrypoint: functions/list.ts
    access: system
${ordersContract({ operations: [listOrders('listOrdersImpl')] })}`

const CRM = `secrets:
  CRM_CLIENT_SECRET: required
functions:
  - name: listContactsImpl
    entrypoint: functions/list.ts
    access: system
  - name: swapCodeImpl
    entrypoint: functions/list.ts
    access: system
provides:
  integration:
    name: contacts
    title: Contacts
    description: '${HOSTILE}'
    authorization:
      type: oauth2
      authorizationUrl: https://crm.example.com/authorize?tenant=acme
      clientId: crm-client-id-77
      scopes: [contacts.read, offline]
      exchange: swapCodeImpl
    capabilities:
      - name: contacts.read
        description: Read contacts
      - name: contacts.write
        description: Change contacts
    operations:
      - name: contacts.list
        capability: contacts.read
        function: listContactsImpl
        description: Lists contacts
        fake: [{ id: fake-contact-payload }]
    events:
      - type: contact.created
        capability: contacts.read
        description: A contact was added
        fake: { id: fake-event-payload }
`

describe(`the provider app's integration page (${backend})`, () => {
  let h: Harness
  let alice: { token: string; userId: string } // organisation administrator of Acme, owns both provider apps
  let eve: { token: string; userId: string } // another organisation
  let alice$: CookieClient
  let bob$: CookieClient // member of Acme: Use through the organisation
  let carol$: CookieClient // member of Acme
  let dave$: CookieClient // member of Acme
  let eve$: CookieClient
  /** Every page body read, searched for secrets at the end. */
  const seen: string[] = []

  before(async () => {
    h = await startHarness()
    alice = await h.createOwner('alice@acme.test', 'Acme')
    await h.createOwner('bob@acme.test', 'Acme')
    await h.createOwner('carol@acme.test', 'Acme')
    await h.createOwner('dave@acme.test', 'Acme')
    eve = await h.createOwner('eve@globex.test', 'Globex')
    for (const [slug, extra] of [['shop', SHOP], ['crm', CRM]] as const) {
      assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug, visibility: 'private' } })).status, 201)
      await deployApp(h, alice.token, slug, { 'service.yaml': manifest(slug, extra, 'private'), 'functions/list.ts': 'export default 1' })
    }
    const secret = await ownerApi(h, alice.token, 'PUT', '/v1/apps/crm/secrets/CRM_CLIENT_SECRET', { value: CLIENT_SECRET })
    assert.ok(secret.status === 200 || secret.status === 201, secret.text)
    alice$ = await signedInBrowser(h, 'alice@acme.test')
    bob$ = await signedInBrowser(h, 'bob@acme.test')
    carol$ = await signedInBrowser(h, 'carol@acme.test')
    dave$ = await signedInBrowser(h, 'dave@acme.test')
    eve$ = await signedInBrowser(h, 'eve@globex.test')
  })
  after(() => h.close())

  async function open(b: CookieClient, app: string) {
    const res = await b.fetch(`${AUTH}/apps/${app}/integration`)
    const html = await res.text()
    seen.push(html, JSON.stringify([...res.headers]))
    return { res, html }
  }

  /** A page's own content (its nonce aside). */
  function main(html: string): string {
    return html.slice(html.indexOf('<main>'), html.indexOf('</main>'))
  }

  async function saveAudience(b: CookieClient, app: string, fields: Record<string, string>, origin?: string) {
    const res = await b.post(`${AUTH}/apps/${app}/integration/audience`, fields, origin)
    const html = await res.text()
    seen.push(html)
    return { res, html }
  }

  async function audienceOf(app: string) {
    const res = await ownerApi(h, alice.token, 'GET', `/v1/apps/${app}/integration-audience`)
    assert.equal(res.status, 200, res.text)
    return res.body.audience as { useScope: string; usePeople: { email: string }[]; administerPeople: { email: string }[] }
  }

  /** Creates a connection on the connect page (credential integrations) and returns its id. */
  async function connect(b: CookieClient, input: { label: string; kind: string; apiKey: string }): Promise<string> {
    const form = await (await b.fetch(`${AUTH}/connections/new?app=shop&integration=orders`)).text()
    const res = await b.post(`${AUTH}/connections/new`, {
      csrf: field(form, 'csrf'), app: 'shop', integration: 'orders', label: input.label, kind: input.kind, 'value.SHOP_API_KEY': input.apiKey,
    })
    assert.equal(res.status, 303, await res.text())
    const match = /^(.*)\/connections\/([0-9a-f-]{36})$/.exec(res.headers.get('location')!)!
    assert.equal(match[1], AUTH, 'the auth host redirects to an absolute same-origin URL')
    return match[2]!
  }

  test('the administrator sees the contract and exactly the redirect URI the platform\'s OAuth callback uses, with the authorization URL, client id and scopes', async () => {
    const { res, html } = await open(alice$, 'crm')
    assert.equal(res.status, 200, html)
    const oauth = await ownerApi(h, alice.token, 'GET', '/v1/apps/crm/integration-oauth')
    assert.equal(oauth.status, 200, oauth.text)
    assert.equal(oauth.body.callbackUrl, `${BASE}/v1/custom-integrations/oauth/callback`)
    assert.ok(html.includes(`<input id="callback-url" readonly value="${oauth.body.callbackUrl}"`), 'the redirect URI, exactly')
    assert.ok(html.includes('<code id="authorization-url">https://crm.example.com/authorize?tenant=acme</code>'))
    assert.ok(html.includes('<code id="client-id">crm-client-id-77</code>'))
    assert.ok(html.includes('<code>contacts.read</code> <code>offline</code>'), 'the scopes')
    assert.ok(html.includes('<strong id="connects">OAuth 2.0</strong>'))
    assert.ok(html.includes('<code>contacts.write</code>: Change contacts'), 'capabilities')
    assert.ok(html.includes('<code>contacts.list</code> <span class="muted">(needs <code>contacts.read</code>)</span>: Lists contacts'), 'operations')
    assert.ok(html.includes('<code>contact.created</code>'), 'events')
    assert.match(html, /<form method="post" action="\/apps\/crm\/integration\/audience">/)
    assert.ok(!/swapCodeImpl|listContactsImpl|fake-contact-payload|fake-event-payload|CRM_CLIENT_SECRET/.test(html),
      'the provider\'s internals (Function names, fakes, the client secret\'s name) stay off the page')
  })

  test('someone named in the Administer audience administers it; a member who may only use it sees a read-only page without the form or the OAuth registration', async () => {
    const saved = await ownerApi(h, alice.token, 'PUT', '/v1/apps/crm/integration-audience', { administerPeople: ['carol@acme.test'] })
    assert.equal(saved.status, 200, saved.text)
    const carol = await open(carol$, 'crm')
    assert.equal(carol.res.status, 200)
    assert.ok(carol.html.includes('id="callback-url"') && carol.html.includes('<form method="post"'))

    const bob = await open(bob$, 'crm')
    assert.equal(bob.res.status, 200, bob.html)
    assert.ok(bob.html.includes('<h1>Contacts</h1>') && bob.html.includes('<code>contacts.list</code>'), 'the contract is shown')
    assert.ok(bob.html.includes('<p id="use-scope">The whole organisation.'))
    assert.ok(!bob.html.includes('action="/apps/crm/integration/audience"'), 'no audience form')
    assert.ok(!bob.html.includes('callback') && !bob.html.includes('crm-client-id-77'), 'no OAuth registration details')
    assert.ok(!bob.html.includes('carol@acme.test'), 'nor who the administrators are')

    const csrf = bob$.cookie('auth.localhost:8787', 'svc_csrf')!
    const refused = await saveAudience(bob$, 'crm', { csrf, useScope: 'people', usePeople: 'bob@acme.test', administerPeople: 'bob@acme.test' })
    assert.equal(refused.res.status, 404)
    assert.equal((await audienceOf('crm')).useScope, 'organisation', 'a Use member cannot change the audiences')
    assert.deepEqual((await audienceOf('crm')).administerPeople.map((p) => p.email), ['carol@acme.test'])
  })

  test('a person of another organisation, an outsider of a narrowed audience and an unknown app all get the same 404; a signed-out browser is sent to sign in', async () => {
    const unknown = await open(alice$, 'no-such-app')
    assert.equal(unknown.res.status, 404)
    const other = await open(eve$, 'crm')
    assert.equal(other.res.status, 404)
    assert.ok(!other.html.includes('Contacts') && !other.html.includes('contacts.read') && !other.html.includes('<form'))
    assert.equal(main(other.html).replaceAll('crm', 'no-such-app'), main(unknown.html), 'nothing tells an existing app from an unknown one')
    const byId = await open(eve$, (await ownerApi(h, alice.token, 'GET', '/v1/apps/crm')).body.app.id)
    assert.equal(byId.res.status, 404)
    assert.equal((await ownerApi(h, eve.token, 'GET', '/v1/apps/crm/integration-oauth')).status, 404)

    assert.equal((await ownerApi(h, alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'people', usePeople: ['bob@acme.test'] })).status, 200)
    try {
      const dave = await open(dave$, 'shop')
      assert.equal(dave.res.status, 404)
      assert.ok(!dave.html.includes('orders.list'))
      assert.equal((await open(bob$, 'shop')).res.status, 200, 'a named person still sees it')
    } finally {
      assert.equal((await ownerApi(h, alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'organisation' })).status, 200)
    }
    const anonymous = await new CookieClient(h).fetch(`${AUTH}/apps/crm/integration`)
    assert.equal(anonymous.status, 302)
    assert.equal(anonymous.headers.get('location'), `${AUTH}/sign-in?continue=${encodeURIComponent('/apps/crm/integration')}`)
  })

  test('the audience form refuses a missing or wrong CSRF token and another origin, changing nothing', async () => {
    const { html } = await open(alice$, 'shop')
    const fields = { useScope: 'people', usePeople: '', administerPeople: '' }
    assert.equal((await saveAudience(alice$, 'shop', fields)).res.status, 403)
    assert.equal((await saveAudience(alice$, 'shop', { ...fields, csrf: 'svc_wrong_token' })).res.status, 403)
    assert.equal((await saveAudience(alice$, 'shop', { ...fields, csrf: field(html, 'csrf') }, 'http://shop.localhost:8787')).res.status, 403)
    assert.equal((await audienceOf('shop')).useScope, 'organisation')
    assert.equal((await open(bob$, 'shop')).res.status, 200)
  })

  test('a changed audience takes effect: a member left out of Use no longer sees the page, and seeing it again after it is widened', async () => {
    const { html } = await open(alice$, 'shop')
    const saved = await saveAudience(alice$, 'shop', { csrf: field(html, 'csrf'), useScope: 'people', usePeople: 'carol@acme.test', administerPeople: '' })
    assert.equal(saved.res.status, 200, saved.html)
    assert.ok(saved.html.includes('<p id="notice">The audiences were saved.</p>'))
    assert.match(saved.html, /<option value="people" selected>/)
    const audience = await audienceOf('shop')
    assert.equal(audience.useScope, 'people')
    assert.deepEqual(audience.usePeople.map((p) => p.email), ['carol@acme.test'])
    assert.equal((await open(bob$, 'shop')).res.status, 404, 'bob was removed from Use')
    assert.equal((await open(carol$, 'shop')).res.status, 200)
    assert.equal((await bob$.fetch(`${AUTH}/connections/new?app=shop&integration=orders`)).status, 403, 'nor may he connect')

    const again = await open(alice$, 'shop')
    assert.ok(again.html.includes('>carol@acme.test</textarea>'), 'the named people are in the form')
    const widened = await saveAudience(alice$, 'shop', { csrf: field(again.html, 'csrf'), useScope: 'organisation', usePeople: 'carol@acme.test', administerPeople: '' })
    assert.equal(widened.res.status, 200)
    assert.equal((await open(bob$, 'shop')).res.status, 200)
  })

  test('an audience naming someone outside the organisation, or no account, is refused on the page and nothing is stored', async () => {
    const { html } = await open(alice$, 'shop')
    const outside = await saveAudience(alice$, 'shop', { csrf: field(html, 'csrf'), useScope: 'people', usePeople: 'bob@acme.test\neve@globex.test', administerPeople: '' })
    assert.equal(outside.res.status, 403)
    assert.match(outside.html, /<p class="error">eve@globex\.test is not a confirmed member of the app&#39;s organisation/)
    assert.ok(outside.html.includes('bob@acme.test\neve@globex.test</textarea>'), 'what was entered is kept in the form')
    const nobody = await saveAudience(alice$, 'shop', { csrf: field(html, 'csrf'), useScope: 'people', usePeople: 'nobody@acme.test', administerPeople: '' })
    assert.equal(nobody.res.status, 404)
    assert.match(nobody.html, /no account exists for nobody@acme\.test/)
    const scope = await saveAudience(alice$, 'shop', { csrf: field(html, 'csrf'), useScope: 'everyone', usePeople: '', administerPeople: '' })
    assert.equal(scope.res.status, 400)
    assert.equal((await audienceOf('shop')).useScope, 'organisation')
  })

  test('the page lists the connections the person manages or may bind, with Reconnect required shown, and no value, token or webhook URL', async () => {
    const own = await connect(bob$, { label: 'Bob\'s shop', kind: 'personal', apiKey: API_KEY })
    const org = await connect(alice$, { label: 'Acme shop', kind: 'organisation', apiKey: ORG_API_KEY })
    const alicePersonal = await connect(alice$, { label: 'Alice private shop', kind: 'personal', apiKey: ORG_API_KEY })
    assert.ok(await markReconnectRequired(h.t.db, { connection: (await findConnection(h.t.db, own))!, reason: 'provider answered unauthorized', at: h.clock.now() }))

    const bob = await open(bob$, 'shop')
    assert.equal(bob.res.status, 200)
    assert.ok(bob.html.includes(`<a href="/connections/${own}">Bob&#39;s shop</a> <span class="muted">(yours)</span>: <strong>Reconnect required</strong>`))
    assert.ok(bob.html.includes('Acme shop <span class="muted">(organisation)</span>: <strong>Active</strong>'), 'an organisation connection he may bind, without the link to manage it')
    assert.ok(!bob.html.includes(org) && !bob.html.includes(alicePersonal) && !bob.html.includes('Alice private shop'))
    assert.ok(bob.html.includes('<a id="connect" href="/connections/new?app=shop&amp;integration=orders">'))

    const linked = '<a id="integration-page" href="/apps/shop/integration">'
    const manage = await bob$.fetch(`${AUTH}/connections/${own}`)
    assert.ok((await manage.text()).includes(`${linked}orders</a>`), 'the connection\'s page links back to the integration page')
    const form = await bob$.fetch(`${AUTH}/connections/new?app=shop&integration=orders`)
    assert.ok((await form.text()).includes(`${linked}about this integration</a>`), 'so does the connect page')

    const alice = await open(alice$, 'shop')
    assert.ok(alice.html.includes(`<a href="/connections/${org}">Acme shop</a>`), 'the organisation administrator manages it')
    assert.ok(alice.html.includes(`<a href="/connections/${alicePersonal}">Alice private shop</a>`))
    assert.ok(!alice.html.includes('Bob&#39;s shop'), 'another person\'s personal connection is not listed')

    for (const html of seen) {
      for (const secret of [API_KEY, ORG_API_KEY, CLIENT_SECRET]) assert.ok(!html.includes(secret), `a page showed ${secret}`)
      assert.ok(!html.includes('svc_hook_') && !html.includes('/v1/hooks/'), 'a page showed a webhook URL')
    }
  })

  test('a hostile contract description is escaped and the page\'s CSP allows only its own nonce, never unsafe-inline', async () => {
    for (const b of [alice$, bob$]) {
      const { res, html } = await open(b, 'crm')
      assert.equal(res.status, 200)
      assert.ok(!html.includes(HOSTILE) && !html.includes('<script>alert') && !html.includes('<img src=x'))
      assert.ok(html.includes('<p id="description">&lt;script&gt;alert(&quot;desc&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</p>'))
      const csp = res.headers.get('content-security-policy')!
      assert.match(csp, /script-src 'nonce-[A-Za-z0-9+/=]+';/)
      assert.doesNotMatch(csp, /unsafe-inline/)
      assert.match(csp, /form-action 'self'/)
      assert.equal(res.headers.get('x-frame-options'), 'DENY')
    }
  })
})
