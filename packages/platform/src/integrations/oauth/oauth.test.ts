/**
 * OAuth 2.0 connections (spec 2.6 `authorization`, 4.4, 5.6) end to end over HTTP: the
 * connect form starts the flow (state bound to the browser and the person, PKCE S256), the
 * callback on {base_url} hands over to {auth_url}, where the provider's exchange Function
 * (here a test double that plays the authorization server and checks PKCE) trades the code;
 * tokens are sealed, never shown, never logged; `accessTokenFor` refreshes once for 20
 * concurrent callers, also across two platforms over one database; a rejected refresh makes
 * the connection Reconnect required with a connectUrl, and reconnecting makes it active.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { ManualClock } from '../../lib/clock.ts'
import { newSecret } from '../../lib/crypto.ts'
import { ServiceError } from '../../lib/errors.ts'
import { openPostgres } from '../../db/postgres.ts'
import { backend, createTestDb, type TestDb } from '../../../test/test-db.ts'
import { BASE, bundle, manifest, ownerApi, type Harness } from '../../../test/harness.ts'
import { deployApp } from '../../../test/integration-fixture.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH } from '../../../test/sign-in-flow.ts'
import { startPlatform } from './test-platform.ts'
import { signedInBrowser } from '../../../test/sign-in-flow.ts'
import { createAccessTokens } from './access-tokens.ts'
import { resealOAuthTokens } from './index.ts'
import { capturedLog, type CapturedLog } from '../../../test/captured-log.ts'
import { assertNoLeak } from '../../../test/leak-scan.ts'
import type { InvokeProvider, ProviderInvocation, ProviderResult } from '../provider-invocation.ts'

const AUTHORIZE = 'https://crm.example.com/oauth/authorize?tenant=acme'
const REGION = 'eu-west-region-77'
const CALLBACK = `${BASE}/v1/custom-integrations/oauth/callback`

const PROVIDER = `secrets:
  CRM_CLIENT_SECRET: required
functions:
  - name: listContacts
    entrypoint: functions/list.ts
    access: system
  - name: swapCode
    entrypoint: functions/list.ts
    access: system
  - name: renewToken
    entrypoint: functions/list.ts
    access: system
provides:
  integration:
    name: contacts
    title: Contacts
    description: The CRM's contacts
    credentials:
      - name: CRM_REGION
        label: Region
        secret: false
    authorization:
      type: oauth2
      authorizationUrl: ${AUTHORIZE}
      clientId: crm-client
      scopes: [contacts.read, offline]
      exchange: swapCode
      refresh: renewToken
    capabilities:
      - name: contacts.read
        description: Read contacts
    operations:
      - name: contacts.list
        capability: contacts.read
        function: listContacts
        description: Lists contacts
`

/**
 * The external system, as the provider's exchange and refresh Functions would reach it: codes
 * bound to their PKCE challenge and redirect URI, single-use; refresh tokens rotated.
 */
class FakeAuthorizationServer {
  codes = new Map<string, { challenge: string | null; redirectUri: string }>()
  refreshTokens = new Set<string>()
  /** Every token issued (the leak test searches for them). */
  issued: string[] = []
  invocations: ProviderInvocation[] = []
  refreshCalls = 0
  expiresIn = 3600
  /** What the next refresh does. */
  refreshMode: 'rotate' | 'keep' | 'reject' | 'unavailable' | 'empty' = 'rotate'
  exchangeMode: 'ok' | 'fail' = 'ok'
  /** Holds refreshes until released (to line up concurrent callers). */
  gate: Promise<void> | null = null

  token(kind: string): string {
    const value = `${kind}_${randomBytes(12).toString('hex')}`
    this.issued.push(value)
    return value
  }

  /** The person approves at the provider: a code for the request's challenge. */
  authorize(url: URL): string {
    const code = this.token('code')
    this.codes.set(code, { challenge: url.searchParams.get('code_challenge'), redirectUri: url.searchParams.get('redirect_uri')! })
    return code
  }

  invoke: InvokeProvider = async (invocation): Promise<ProviderResult> => {
    this.invocations.push(invocation)
    const input = invocation.input as Record<string, string>
    if (invocation.functionName === 'swapCode') {
      if (this.exchangeMode === 'fail') return { ok: false, kind: 'failed', message: 'token endpoint said no' }
      const grant = this.codes.get(input.code!)
      this.codes.delete(input.code!)
      if (!grant || grant.redirectUri !== input.redirectUri) {
        return { ok: false, kind: 'typed', error: { status: 400, code: 'INVALID_GRANT', message: 'bad code' } }
      }
      const verified = grant.challenge === null
        ? !('codeVerifier' in input)
        : grant.challenge === createHash('sha256').update(input.codeVerifier ?? '').digest('base64url')
      if (!verified) return { ok: false, kind: 'typed', error: { status: 400, code: 'PKCE_FAILED', message: 'code_verifier mismatch' } }
      const refreshToken = this.token('rt')
      this.refreshTokens.add(refreshToken)
      return { ok: true, value: { accessToken: this.token('at'), refreshToken, expiresIn: this.expiresIn } }
    }
    if (invocation.functionName === 'renewToken') {
      this.refreshCalls++
      if (this.gate) await this.gate
      if (this.refreshMode === 'unavailable') return { ok: false, kind: 'typed', error: { status: 503, code: 'DOWN', message: 'down' } }
      if (this.refreshMode === 'empty') return { ok: true, value: {} }
      if (this.refreshMode === 'reject' || !this.refreshTokens.has(input.refreshToken!)) {
        return { ok: false, kind: 'typed', error: { status: 401, code: 'INVALID_GRANT', message: 'refresh token revoked' } }
      }
      if (this.refreshMode === 'keep') return { ok: true, value: { accessToken: this.token('at'), expiresIn: this.expiresIn } }
      this.refreshTokens.delete(input.refreshToken!)
      const refreshToken = this.token('rt')
      this.refreshTokens.add(refreshToken)
      return { ok: true, value: { accessToken: this.token('at'), refreshToken, expiresIn: this.expiresIn } }
    }
    return { ok: false, kind: 'failed', message: `no Function ${invocation.functionName}` }
  }
}

describe(`OAuth connections (${backend})`, () => {
  const server = new FakeAuthorizationServer()
  let h: Harness
  let log: CapturedLog
  let alice: { token: string; userId: string }
  let bob: { token: string; userId: string }
  let aliceBrowser: CookieClient
  let bobBrowser: CookieClient
  const masterKey = new Uint8Array(randomBytes(32))
  /** Every response body and header read (searched for tokens at the end). */
  const seen: string[] = []

  async function read(res: Response): Promise<string> {
    const text = await res.text()
    seen.push(text, JSON.stringify([...res.headers]))
    return text
  }

  before(async () => {
    log = capturedLog('debug')
    h = await startPlatform(await createTestDb(), {
      invokeProvider: server.invoke, masterKey, clock: new ManualClock('2026-11-21T12:00:00Z'),
      operatorKey: newSecret('svc_operator_'), logger: log.logger,
    })
    alice = await h.createOwner('alice@acme.test', 'Acme')
    bob = await h.createOwner('bob@acme.test', 'Acme')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'crm', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'crm', { 'service.yaml': manifest('crm', PROVIDER, 'private'), 'functions/list.ts': 'export default 1' })
    aliceBrowser = await signedInBrowser(h, 'alice@acme.test')
    bobBrowser = await signedInBrowser(h, 'bob@acme.test')
  })
  after(() => h.close())

  /** Fills the connect form and submits it: the answer is the redirect to the provider. */
  async function startConnecting(b: CookieClient, label = 'My CRM'): Promise<Response> {
    const page = await b.fetch(`${AUTH}/connections/new?app=crm&integration=contacts`)
    const html = await read(page)
    assert.equal(page.status, 200, html)
    return b.post(`${AUTH}/connections/new`, {
      csrf: field(html, 'csrf'), app: field(html, 'app'), integration: field(html, 'integration'), label, kind: 'personal',
      'value.CRM_REGION': REGION,
    })
  }

  /** The provider sends the browser back to the registered callback; follows it to the end. */
  async function callback(b: CookieClient, query: Record<string, string>): Promise<{ res: Response; html: string; hops: string[] }> {
    const { response, hops } = await b.visit(`${CALLBACK}?${new URLSearchParams(query)}`)
    return { res: response, html: await read(response), hops }
  }

  /** Connects a personal connection through the whole flow; returns its id. */
  async function connectThrough(b: CookieClient, label = 'My CRM'): Promise<string> {
    const started = await startConnecting(b, label)
    assert.equal(started.status, 303, await read(started))
    const to = new URL(started.headers.get('location')!)
    const { res, html } = await callback(b, { code: server.authorize(to), state: to.searchParams.get('state')! })
    assert.equal(res.status, 200, html)
    return /href="\/connections\/([0-9a-f-]{36})"/.exec(html)![1]!
  }

  async function statusOf(id: string): Promise<string> {
    const rows = await h.t.db.query<{ status: string }>('select status from platform.connections where id = $1', [id])
    return rows[0]!.status
  }

  async function accessTokenError(id: string): Promise<ServiceError> {
    const error = await h.platform.oauth.accessTokenFor({ connectionId: id }).then(() => null, (e: unknown) => e)
    assert.ok(error instanceof ServiceError, String(error))
    return error
  }

  test('the connect form leads to the provider with response_type, client_id, redirect_uri, scope, state and an S256 challenge, and sets a flow cookie on the auth host', async () => {
    const page = await aliceBrowser.fetch(`${AUTH}/connections/new?app=crm&integration=contacts`)
    const html = await read(page)
    assert.equal(page.status, 200)
    assert.match(html, /name="value.CRM_REGION"/, 'the credential declared beside authorization is entered first')
    assert.match(page.headers.get('content-security-policy')!, /form-action 'self' [^;]* https:\/\/crm\.example\.com;/)
    const started = await startConnecting(aliceBrowser)
    assert.equal(started.status, 303)
    const to = new URL(started.headers.get('location')!)
    assert.equal(`${to.origin}${to.pathname}`, 'https://crm.example.com/oauth/authorize')
    assert.equal(to.searchParams.get('tenant'), 'acme', 'the declared URL keeps its own query')
    assert.equal(to.searchParams.get('response_type'), 'code')
    assert.equal(to.searchParams.get('client_id'), 'crm-client')
    assert.equal(to.searchParams.get('redirect_uri'), CALLBACK)
    assert.equal(to.searchParams.get('scope'), 'contacts.read offline')
    assert.match(to.searchParams.get('state')!, /^[A-Za-z0-9_-]{43}$/)
    assert.match(to.searchParams.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/)
    assert.equal(to.searchParams.get('code_challenge_method'), 'S256')
    assert.ok(aliceBrowser.cookie('auth.localhost:8787', 'svc_oauth_flow'), 'the flow cookie is on the auth host')
    assert.equal(aliceBrowser.cookie('localhost:8787', 'svc_oauth_flow'), undefined)
  })

  test('the callback exchanges the code through the exchange Function (PKCE verified, no access token, no emit) and the connection is active with sealed tokens', async () => {
    const before = server.invocations.length
    const id = await connectThrough(bobBrowser)
    const exchange = server.invocations.slice(before).find((i) => i.functionName === 'swapCode')!
    assert.equal(exchange.providerAppId.length, 36)
    assert.deepEqual(exchange.integration, { connectionId: id, trigger: 'oauth' })
    assert.equal(exchange.mayEmit, false)
    assert.deepEqual(exchange.secrets, { CRM_REGION: REGION }, 'the credential values entered before signing in; no access token')
    assert.equal((exchange.input as { redirectUri: string }).redirectUri, CALLBACK)
    assert.equal(await statusOf(id), 'active')
    const manage = await bobBrowser.fetch(`${AUTH}/connections/${id}`)
    const html = await read(manage)
    assert.match(html, /Reconnect at the provider/)
    assert.ok(html.includes(REGION), 'the non-secret credential is shown back')
    const api = await ownerApi(h, bob.token, 'GET', `/v1/connections/${id}`)
    seen.push(api.text)
    assert.equal(api.body.connection.status, 'active')
    const token = await h.platform.oauth.accessTokenFor({ connectionId: id })
    assert.equal(token, server.issued.filter((t) => t.startsWith('at_')).at(-1))
  })

  test('a state is one-time, bound to the browser that started it and to the person, and expires', async () => {
    // Replayed: the first use consumed it.
    let started = await startConnecting(bobBrowser)
    let to = new URL(started.headers.get('location')!)
    let state = to.searchParams.get('state')!
    assert.equal((await callback(bobBrowser, { code: server.authorize(to), state })).res.status, 200)
    let replay = await callback(bobBrowser, { code: server.authorize(to), state })
    assert.equal(replay.res.status, 400)
    assert.match(replay.html, /data-code="OAUTH_STATE_INVALID"/)

    // Another browser of the same person (no flow cookie there), and another person.
    const elsewhere = await signedInBrowser(h, 'bob@acme.test')
    started = await startConnecting(bobBrowser)
    to = new URL(started.headers.get('location')!)
    state = to.searchParams.get('state')!
    const foreign = await callback(elsewhere, { code: server.authorize(to), state })
    assert.match(foreign.html, /data-code="OAUTH_STATE_INVALID"/)
    started = await startConnecting(bobBrowser)
    to = new URL(started.headers.get('location')!)
    aliceBrowser.cookies('auth.localhost:8787').set('svc_oauth_flow', {
      value: bobBrowser.cookie('auth.localhost:8787', 'svc_oauth_flow')!, path: '/', expiresAt: Number.POSITIVE_INFINITY,
    })
    const otherPerson = await callback(aliceBrowser, { code: server.authorize(to), state: to.searchParams.get('state')! })
    assert.match(otherPerson.html, /data-code="OAUTH_STATE_INVALID"/, 'even with the flow cookie, another person cannot finish it')

    // Expired after ten minutes.
    started = await startConnecting(bobBrowser)
    to = new URL(started.headers.get('location')!)
    h.clock.advance(10 * 60 * 1000 + 1)
    const expired = await callback(bobBrowser, { code: server.authorize(to), state: to.searchParams.get('state')! })
    assert.match(expired.html, /data-code="OAUTH_STATE_INVALID"/)
    // A made-up state.
    const madeUp = await callback(bobBrowser, { code: 'x', state: 'A'.repeat(43) })
    assert.match(madeUp.html, /data-code="OAUTH_STATE_INVALID"/)
  })

  test('a denial at the provider and a failed exchange create no connection and say why', async () => {
    const count = async () => (await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.connections'))[0]!.n
    const before = await count()
    let started = await startConnecting(bobBrowser)
    let to = new URL(started.headers.get('location')!)
    const denied = await callback(bobBrowser, { error: 'access_denied', state: to.searchParams.get('state')! })
    assert.equal(denied.res.status, 403)
    assert.match(denied.html, /you did not allow access at the provider/)

    server.exchangeMode = 'fail'
    started = await startConnecting(bobBrowser)
    to = new URL(started.headers.get('location')!)
    const failed = await callback(bobBrowser, { code: server.authorize(to), state: to.searchParams.get('state')! })
    server.exchangeMode = 'ok'
    assert.equal(failed.res.status, 502)
    assert.match(failed.html, /data-code="INTEGRATION_PROVIDER_FAILED"/)
    assert.equal(await count(), before)
  })

  test('an access token that expires within a minute is refreshed once for 20 concurrent callers, and the rotated refresh token is kept', async () => {
    const id = await connectThrough(bobBrowser, 'Refreshing')
    const first = await h.platform.oauth.accessTokenFor({ connectionId: id })
    const calls = server.refreshCalls
    assert.equal(await h.platform.oauth.accessTokenFor({ connectionId: id }), first, 'a fresh token is not refreshed')
    h.clock.advance((server.expiresIn - 59) * 1000)
    let release!: () => void
    server.gate = new Promise((resolve) => { release = resolve })
    const all = Array.from({ length: 20 }, () => h.platform.oauth.accessTokenFor({ connectionId: id }))
    await new Promise((resolve) => setImmediate(resolve))
    release()
    server.gate = null
    const tokens = await Promise.all(all)
    assert.equal(server.refreshCalls - calls, 1, 'one refresh')
    assert.equal(new Set(tokens).size, 1)
    assert.notEqual(tokens[0], first)
    const refresh = server.invocations.filter((i) => i.functionName === 'renewToken').at(-1)!
    assert.deepEqual(Object.keys(refresh.input as object), ['refreshToken'])
    assert.equal(refresh.mayEmit, false)
    assert.ok(!Object.values(refresh.secrets).includes(first), 'the refresh Function never gets the access token')

    // The rotated refresh token is the one used next; a refresh without one keeps it.
    h.clock.advance(server.expiresIn * 1000)
    server.refreshMode = 'keep'
    const kept = await h.platform.oauth.accessTokenFor({ connectionId: id })
    server.refreshMode = 'rotate'
    h.clock.advance(server.expiresIn * 1000)
    const again = await h.platform.oauth.accessTokenFor({ connectionId: id })
    assert.notEqual(again, kept, 'the kept refresh token (the rotated one) was still valid at the server')
  })

  test('two platforms over one database refresh once for 20 concurrent callers', async () => {
    const id = await connectThrough(bobBrowser, 'Two processes')
    const otherDb: TestDb = h.t.url
      ? (() => { const pool = openPostgres({ url: h.t.url!, maxConnections: 2 }); return { db: pool, cleanup: () => pool.close() } })()
      : { db: h.t.db, cleanup: async () => {} }
    const other = await startPlatform(otherDb, {
      invokeProvider: server.invoke, masterKey, clock: h.clock, operatorKey: h.operatorKey, logger: log.logger,
    })
    try {
      h.clock.advance(server.expiresIn * 1000)
      const calls = server.refreshCalls
      let release!: () => void
      server.gate = new Promise((resolve) => { release = resolve })
      const all = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? h : other).platform.oauth.accessTokenFor({ connectionId: id }))
      await new Promise((resolve) => setTimeout(resolve, 50))
      release()
      server.gate = null
      const tokens = await Promise.all(all)
      assert.equal(server.refreshCalls - calls, 1, 'one refresh across both platforms')
      assert.equal(new Set(tokens).size, 1)
    } finally {
      await other.close()
    }
  })

  test('a refresh that fails without rejecting leaves the connection active; a rejected one marks it Reconnect required with a connectUrl; reconnecting makes it active', async () => {
    const id = await connectThrough(bobBrowser, 'Rejected')
    h.clock.advance(server.expiresIn * 1000)
    server.refreshMode = 'unavailable'
    assert.equal((await accessTokenError(id)).code, 'INTEGRATION_PROVIDER_UNAVAILABLE')
    assert.equal(await statusOf(id), 'active')

    server.refreshMode = 'reject'
    const rejected = await accessTokenError(id)
    assert.equal(rejected.code, 'INTEGRATION_RECONNECT_REQUIRED')
    assert.deepEqual(rejected.details, { connectionId: id, connectUrl: `${AUTH}/connections/${id}` })
    assert.equal(await statusOf(id), 'reconnect_required')
    const calls = server.refreshCalls
    assert.equal((await accessTokenError(id)).code, 'INTEGRATION_RECONNECT_REQUIRED')
    assert.equal(server.refreshCalls, calls, 'a connection marked Reconnect required is not refreshed again')
    server.refreshMode = 'rotate'

    // Reconnect from its page: the flow again, for this connection.
    const page = await bobBrowser.fetch(`${AUTH}/connections/${id}`)
    const html = await read(page)
    assert.match(html, /Reconnect required/)
    const started = await bobBrowser.post(`${AUTH}/connections/${id}/credentials`, { csrf: field(html, 'csrf'), 'value.CRM_REGION': REGION })
    assert.equal(started.status, 303, await read(started))
    const to = new URL(started.headers.get('location')!)
    const done = await callback(bobBrowser, { code: server.authorize(to), state: to.searchParams.get('state')! })
    assert.equal(done.res.status, 200, done.html)
    assert.ok(done.html.includes(`/connections/${id}`), 'the same connection')
    assert.equal(await statusOf(id), 'active')
    assert.equal(await h.platform.oauth.accessTokenFor({ connectionId: id }), server.issued.filter((t) => t.startsWith('at_')).at(-1))

    // A refresh that returns no access token is a rejection too.
    h.clock.advance(server.expiresIn * 1000)
    server.refreshMode = 'empty'
    assert.equal((await accessTokenError(id)).code, 'INTEGRATION_RECONNECT_REQUIRED')
    server.refreshMode = 'rotate'
  })

  test('the provider\'s administrators see the callback URL to register; others do not', async () => {
    const shown = await ownerApi(h, alice.token, 'GET', '/v1/apps/crm/integration-oauth')
    assert.equal(shown.status, 200, shown.text)
    assert.deepEqual(shown.body, {
      integration: 'contacts', callbackUrl: CALLBACK, authorizationUrl: AUTHORIZE, clientId: 'crm-client',
      scopes: ['contacts.read', 'offline'], pkce: true,
    })
    const hidden = await ownerApi(h, bob.token, 'GET', '/v1/apps/crm/integration-oauth')
    assert.equal(hidden.status, 404)
    assert.equal(hidden.body.error.code, 'INTEGRATION_NOT_FOUND')
  })

  test('with pkce: false the request has no challenge and the exchange no verifier', async () => {
    const plain = PROVIDER.replace('      refresh: renewToken\n', '      refresh: renewToken\n      pkce: false\n').replace('name: contacts', 'name: leads')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'crm-plain', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'crm-plain', { 'service.yaml': manifest('crm-plain', plain, 'private'), 'functions/list.ts': 'export default 1' })
    const page = await bobBrowser.fetch(`${AUTH}/connections/new?app=crm-plain&integration=leads`)
    const html = await read(page)
    const started = await bobBrowser.post(`${AUTH}/connections/new`, {
      csrf: field(html, 'csrf'), app: 'crm-plain', integration: 'leads', label: 'Plain', kind: 'personal', 'value.CRM_REGION': REGION,
    })
    assert.equal(started.status, 303, await read(started))
    const to = new URL(started.headers.get('location')!)
    assert.equal(to.searchParams.has('code_challenge'), false)
    assert.equal(to.searchParams.has('code_challenge_method'), false)
    const before = server.invocations.length
    const done = await callback(bobBrowser, { code: server.authorize(to), state: to.searchParams.get('state')! })
    assert.equal(done.res.status, 200, done.html)
    const exchange = server.invocations.slice(before).find((i) => i.functionName === 'swapCode')!
    assert.deepEqual(Object.keys(exchange.input as object).sort(), ['code', 'redirectUri'])
  })

  test('the exchange and refresh Functions cannot be invoked in development', async () => {
    const dev = await ownerApi(h, alice.token, 'POST', '/v1/apps/crm/dev/alice/deployments',
      bundle({ 'service.yaml': manifest('crm', PROVIDER, 'private'), 'functions/list.ts': 'export default 1' }))
    assert.equal(dev.status, 201, dev.text)
    for (const name of ['swapCode', 'renewToken']) {
      const before = server.invocations.length
      const res = await ownerApi(h, alice.token, 'POST', `/v1/apps/crm/dev/alice/functions/${name}/invoke`, { input: { code: 'x', refreshToken: 'y' } })
      assert.equal(res.status, 400, res.text)
      assert.equal(res.body.error.code, 'INTEGRATION_OAUTH_FUNCTION_NOT_INVOCABLE')
      assert.equal(server.invocations.length, before)
    }
  })

  test('key rotation re-seals every connection\'s tokens under the new key, and they still open', async () => {
    const id = await connectThrough(bobBrowser, 'Rotated')
    const before = await h.platform.oauth.accessTokenFor({ connectionId: id })
    const old = h.platform.connectionKeyring
    const keyring = { current: 'k2', keys: new Map([...old.keys, ['k2', new Uint8Array(randomBytes(32))]]) }
    const moved = await resealOAuthTokens(h.t.db, keyring)
    assert.ok(moved >= 1)
    const keys = await h.t.db.query<{ key_id: string }>('select distinct key_id from platform.connection_oauth_tokens')
    assert.deepEqual(keys.map((row) => row.key_id), ['k2'])
    assert.equal(await resealOAuthTokens(h.t.db, keyring), 0)
    const rotated = createAccessTokens({
      db: h.t.db, clock: h.clock, logger: log.logger, keyring, invokeProvider: server.invoke, connectUrl: () => '',
    })
    assert.equal(await rotated.accessTokenFor({ connectionId: id }), before)
  })

  test('no token or code appears as plaintext in any platform table, app database, log line or response', async () => {
    const values = server.issued.filter((v) => v.startsWith('at_') || v.startsWith('rt_') || v.startsWith('code_'))
    assert.ok(values.length > 10)
    await assertNoLeak(h.t.db, { secrets: values, texts: { 'the log': log.text() } })
    // A code passes through the browser (the provider's redirect to the callback, forwarded to the auth host); tokens never do.
    const responses = seen.join('\n')
    for (const value of values.filter((v) => !v.startsWith('code_'))) assert.ok(!responses.includes(value), 'no response holds a token')
  })
})
