/**
 * The whole OAuth flow in real Chromium against a real authorization server on loopback:
 * `oidc-provider` with a confidential client, PKCE required, refresh-token rotation, and
 * revocation. The provider app ("crm") runs its exchange, refresh and operation Functions in
 * Deno, calling the server's token and userinfo endpoints. The consumer app ("desk") has a
 * page whose script calls its Function with the browser SDK; the Function calls the
 * `calling_user` slot, so every call acts for the person in the browser.
 *
 * A person, in Chromium: opens the desk, is told to connect, connects (the platform's form,
 * sign-in and consent at the server's own pages, PKCE S256 checked by the server, back through
 * the `{base_url}` callback) and binds the slot on the connect page; the desk then shows their
 * account at the server. The token expires (the platforms' clock moves on), and 20 concurrent
 * calls from the page all succeed on one refresh at the server. On PostgreSQL two platform
 * processes share the database behind one address, which sends each request to the next in
 * turn as a load balancer does, so the whole flow and the 20 calls are spread over both; on
 * PGlite one process owns the database, so one process serves everything. The next refresh
 * presents the rotated refresh token. The person's grant is revoked at the server: the refresh
 * is rejected, the desk shows INTEGRATION_RECONNECT_REQUIRED with a link to the connection,
 * which says "Reconnect required"; the person follows it, reconnects at the server, and the
 * desk works again. Each step is asserted on what the browser sees and on what the server saw.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { serve } from '@hono/node-server'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import Provider from 'oidc-provider'
import { ManualClock } from '../../lib/clock.ts'
import { newSecret } from '../../lib/crypto.ts'
import { silentLogger } from '../../lib/logger.ts'
import { backend, createTestDb } from '../../../test/test-db.ts'
import { manifest, type Harness } from '../../../test/harness.ts'
import { consumerManifest, deployApp } from '../../../test/integration-fixture.ts'
import { browserSuite, signInAt, WAIT_MS, type BrowserHarness } from '../../../test/browser.ts'
import { findChromium } from '../../../../../scripts/find-chromium.mjs'
import { OIDC_CLIENT_ID, oidcProviderFunctions, startPlatform, startSecondProcess } from './test-platform.ts'

const CLIENT_ID = OIDC_CLIENT_ID
const CLIENT_SECRET = `client-secret-${randomBytes(8).toString('hex')}`
/** The person, at the platform and at the authorization server. */
const PERSON = 'bob@acme.test'
const ACCOUNT = 'bob-at-crm'
/** The server's access-token lifetime: the platform refreshes a token in its last minute. */
const ACCESS_TOKEN_TTL_S = 120
/** A whole flow signs in twice, starts Deno in two processes and consents at the server twice. */
const TEST = { timeout: 60_000 }

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** The provider app: OAuth declared with exchange and refresh; the operation reads the access token and calls userinfo. */
function providerApp(issuer: string): Record<string, string> {
  return {
    'service.yaml': manifest('crm', `secrets:
  CRM_CLIENT_SECRET: required
functions:
  - name: whoAmI
    entrypoint: functions/account.ts
    access: system
  - name: swapCode
    entrypoint: functions/swap.ts
    access: system
  - name: renewToken
    entrypoint: functions/renew.ts
    access: system
provides:
  integration:
    name: contacts
    title: Contacts
    description: The CRM's contacts
    authorization:
      type: oauth2
      authorizationUrl: ${issuer}/auth
      clientId: ${CLIENT_ID}
      scopes: [openid]
      exchange: swapCode
      refresh: renewToken
    capabilities:
      - name: contacts.read
        description: Read contacts
    operations:
      - name: account.show
        capability: contacts.read
        function: whoAmI
        description: The signed-in account at the CRM
`, 'private'),
    ...oidcProviderFunctions(issuer),
  }
}

/** The consumer app: a page whose script calls `showAccount` through the browser SDK; the Function calls the person's slot. */
const DESK: Record<string, string> = {
  'service.yaml': manifest('desk', consumerManifest({
    function: 'showAccount', slots: { crm: { integration: 'contacts', account: 'calling_user', capabilities: ['contacts.read'] } },
  }), 'private'),
  'functions/call.ts': `import { defineFunction, object } from '@service/server'
export default defineFunction({
  input: object({}),
  handler({ integrations }) {
    return integrations.use('crm').call('account.show', {})
  },
})
`,
  'public/index.html': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Desk</title>
<script src="/_service/sdk.js"></script><script src="/desk.js" defer></script></head>
<body><h1>Desk</h1><button id="show">Show my CRM account</button>
<p id="result" role="status"></p><p><a id="connect" hidden>Connect your CRM account</a></p></body></html>
`,
  // Plain JavaScript, as an app writes it: the result, or the error's code and its connectUrl as a link.
  'public/desk.js': `const result = document.getElementById('result')
const connect = document.getElementById('connect')
let calls = 0
document.getElementById('show').addEventListener('click', async () => {
  const call = ++calls
  connect.hidden = true
  result.textContent = 'Loading'
  try {
    const account = await service.functions.call('showAccount', {})
    result.textContent = call + ': CRM account ' + account.sub
  } catch (error) {
    result.textContent = call + ': ' + error.code
    if (error.details && error.details.connectUrl) {
      connect.href = error.details.connectUrl
      connect.hidden = false
    }
  }
})
`,
}

/** What the authorization server saw, from its own events and requests. */
interface ServerLog {
  /** Successful code grants: the PKCE method the code was issued against. */
  exchanges: { codeChallengeMethod: string | undefined }[]
  /** Successful refresh grants: the refresh token presented, the one issued instead, the new access token. */
  refreshes: { presented: string; issued: string | undefined; accessToken: string | undefined }[]
  /** Refused refresh grants: the OAuth error. */
  refusedRefreshes: string[]
  /** Every access token issued (the last is the newest). */
  accessTokens: string[]
  /** The bearer token of every userinfo request. */
  userinfo: string[]
}

describe(`OAuth in Chromium against oidc-provider: connect, call, expire, one refresh, rotation, rejected refresh, reconnect (${backend})`, browserSuite(), () => {
  let h: Harness
  /** A second process on the same PostgreSQL database; null on PGlite. */
  let other: Harness | null
  let front: HttpServer
  let oidcServer: HttpServer
  let provider: Provider
  let browser: Browser
  let issuer: string
  let authUrl: string
  let deskUrl: string
  const server: ServerLog = { exchanges: [], refreshes: [], refusedRefreshes: [], accessTokens: [], userinfo: [] }
  /** The processes behind the one address, in turn; `served[i]` counts the Function calls process i answered. */
  let processes: Harness[] = []
  let served: number[] = []
  const contexts: BrowserContext[] = []
  /** The person's page on the desk, and their connection, carried from step to step. */
  let page: Page
  let connectionId: string

  before(async () => {
    const port = await freePort()
    const baseUrl = `http://localhost:${port}`
    let handler: Parameters<typeof createHttpServer>[1] | null = null
    oidcServer = createHttpServer((req, res) => {
      if (req.url === '/me') server.userinfo.push((req.headers.authorization ?? '').replace(/^Bearer /, ''))
      handler!(req, res)
    })
    await new Promise<void>((resolve) => oidcServer.listen(0, '127.0.0.1', resolve))
    issuer = `http://127.0.0.1:${(oidcServer.address() as AddressInfo).port}`
    provider = new Provider(issuer, {
      clients: [{
        client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${baseUrl}/v1/custom-integrations/oauth/callback`],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post',
      }],
      pkce: { required: () => true },
      rotateRefreshToken: true,
      issueRefreshToken: async () => true,
      ttl: { AccessToken: ACCESS_TOKEN_TTL_S, IdToken: 600, RefreshToken: 24 * 3600, Grant: 24 * 3600, Session: 24 * 3600, Interaction: 600 },
      findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
      cookies: { keys: [randomBytes(16).toString('hex')] },
      features: { devInteractions: { enabled: true }, revocation: { enabled: true } },
    })
    provider.on('access_token.saved', (token) => { server.accessTokens.push(token.jti) })
    provider.on('grant.success', (ctx) => {
      const { entities, params } = ctx.oidc
      if (params?.grant_type === 'authorization_code') server.exchanges.push({ codeChallengeMethod: entities.AuthorizationCode?.codeChallengeMethod })
      if (params?.grant_type === 'refresh_token') {
        server.refreshes.push({ presented: entities.RotatedRefreshToken!.jti, issued: entities.RefreshToken?.jti, accessToken: entities.AccessToken?.jti })
      }
    })
    provider.on('grant.error', (ctx, error) => {
      if (ctx.oidc.params?.grant_type === 'refresh_token') server.refusedRefreshes.push((error as { error?: string }).error ?? 'unknown')
    })
    handler = provider.callback()

    const masterKey = new Uint8Array(randomBytes(32))
    h = await startPlatform(await createTestDb(), {
      allowNet: ['127.0.0.1'], baseUrl, masterKey, clock: new ManualClock(new Date().toISOString()),
      operatorKey: newSecret('svc_operator_'), logger: silentLogger,
    })
    other = await startSecondProcess(h, { allowNet: ['127.0.0.1'], baseUrl, masterKey, logger: silentLogger })
    processes = other ? [h, other] : [h]
    served = processes.map(() => 0)
    authUrl = h.platform.urls.auth
    deskUrl = h.platform.urls.app('desk')
    // One address in front of the processes, each request to the next in turn.
    let turn = 0
    front = serve({
      fetch: (request) => {
        const index = turn++ % processes.length
        if (new URL(request.url).pathname.startsWith('/_service/functions/')) served[index]!++
        return processes[index]!.platform.fetch(request)
      },
      port, hostname: '127.0.0.1',
    }) as HttpServer
    await new Promise<void>((resolve) => front.listening ? resolve() : front.once('listening', () => resolve()))
    browser = await chromium.launch({
      executablePath: findChromium({ env: process.env }).path!, headless: true, timeout: WAIT_MS,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })

    const alice = await h.createOwner('alice@acme.test', 'Acme')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'crm', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'crm', providerApp(issuer))
    const secret = await h.request('/v1/apps/crm/secrets/CRM_CLIENT_SECRET', { method: 'PUT', token: alice.token, json: { value: CLIENT_SECRET } })
    assert.ok(secret.status === 200 || secret.status === 201, await secret.text())
    const bob = await h.createOwner(PERSON, 'Acme')
    assert.equal((await h.request('/v1/apps', { token: bob.token, json: { slug: 'desk', visibility: 'private' } })).status, 201)
    await deployApp(h, bob.token, 'desk', DESK)
  })
  after(async () => {
    await Promise.all(contexts.map((context) => context.close()))
    await browser?.close()
    await new Promise((resolve) => { front?.close(resolve); front?.closeAllConnections() })
    await other?.close()
    await h?.close()
    // Functions in Deno keep connections to the server alive; they are not waited for.
    await new Promise((resolve) => { oidcServer?.close(resolve); oidcServer?.closeAllConnections() })
  })

  async function newContext(): Promise<BrowserContext> {
    const context = await browser.newContext()
    context.setDefaultTimeout(WAIT_MS)
    context.setDefaultNavigationTimeout(WAIT_MS)
    contexts.push(context)
    return context
  }

  /** Presses "Show my CRM account" and returns what the desk then shows (without the call's number). */
  async function showAccount(): Promise<string> {
    const before = await page.locator('#result').textContent()
    const call = Number(/^(\d+):/.exec(before ?? '')?.[1] ?? 0) + 1
    await page.getByRole('button', { name: 'Show my CRM account' }).click()
    const shown = page.locator('#result').filter({ hasText: new RegExp(`^${call}: `) })
    await shown.waitFor()
    return (await shown.textContent())!.slice(`${call}: `.length)
  }

  /** Signs in (when the server asks) and consents on the server's own pages, until back on `{auth_url}`; the prompts answered. */
  async function authorizeAtServer(): Promise<string[]> {
    const prompts: string[] = []
    await page.waitForURL((url) => url.origin === issuer && url.pathname.startsWith('/interaction/'))
    while (new URL(page.url()).origin === issuer) {
      const at = page.url()
      if (await page.locator('input[name=login]').count() > 0) {
        prompts.push('login')
        await page.locator('input[name=login]').fill(ACCOUNT)
        await page.locator('input[name=password]').fill('any')
        await page.getByRole('button', { name: 'Sign-in' }).click()
      } else {
        prompts.push('consent')
        await page.getByRole('button', { name: 'Continue' }).click()
      }
      await page.waitForURL((url) => url.toString() !== at && (url.origin === authUrl || url.pathname.startsWith('/interaction/')))
    }
    return prompts
  }

  test('connect: the desk asks the person to connect; on the connect-and-bind page, sign-in and consent at the server (PKCE S256) make the connection and bind the slot in one step; the stored token is the server\'s', TEST, async () => {
    page = await signInAt({ h, authUrl, newContext } as unknown as BrowserHarness, await newContext(), `${deskUrl}/`, PERSON)
    assert.equal(await showAccount(), 'INTEGRATION_CONNECTION_REQUIRED')
    const connectUrl = `${authUrl}/integrations/connect?app=desk&slot=crm`
    assert.equal(await page.getByRole('link', { name: 'Connect your CRM account' }).getAttribute('href'), connectUrl)

    await page.getByRole('link', { name: 'Connect your CRM account' }).click()
    await page.getByRole('heading', { name: 'Connect Contacts for desk' }).waitFor()
    await page.getByLabel('Name of this connection').fill('My CRM')
    const authorizationRequest = page.waitForRequest((request) => new URL(request.url()).origin === issuer && new URL(request.url()).pathname === '/auth')
    await page.getByRole('button', { name: 'Sign in with Contacts and use it in desk' }).click()
    const sent = new URL((await authorizationRequest).url()).searchParams
    assert.equal(sent.get('code_challenge_method'), 'S256')
    assert.match(sent.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/)
    assert.deepEqual(await authorizeAtServer(), ['login', 'consent'])
    await page.waitForURL((url) => url.origin === authUrl && url.pathname === '/connections/oauth/finish')
    await page.getByRole('heading', { name: 'Connected' }).waitFor()
    // One step: the callback bound the new connection into the desk's slot.
    await page.getByText('The app desk now uses it with your account').waitFor()
    // The server issued the code against the S256 challenge and checked the exchange's verifier.
    assert.deepEqual(server.exchanges, [{ codeChallengeMethod: 'S256' }])
    const href = await page.getByRole('link', { name: 'Open the connection' }).getAttribute('href')
    connectionId = /^\/connections\/([0-9a-f-]{36})$/.exec(href!)![1]!
    assert.equal(await h.platform.oauth.accessTokenFor({ connectionId }), server.accessTokens.at(-1))

    // The connect page now offers the new connection, already in use.
    await page.goto(connectUrl)
    assert.equal(await page.getByLabel('Connection', { exact: true }).inputValue(), connectionId)
  })

  test('call: the desk\'s page calls its Function, which calls the operation for the person; the server\'s userinfo accepts the access token', TEST, async () => {
    await page.goto(`${deskUrl}/`)
    assert.equal(await showAccount(), `CRM account ${ACCOUNT}`)
    assert.deepEqual(server.userinfo, [server.accessTokens.at(-1)])
    assert.equal(server.refreshes.length, 0)
  })

  test(backend === 'postgres'
    ? 'expire: 20 concurrent calls from the page, over two platform processes sharing one PostgreSQL database, all succeed on one refresh at the server'
    : 'expire: 20 concurrent calls from the page all succeed on one refresh at the server (one platform process: on PGlite two processes cannot share a database)', TEST, async () => {
    assert.equal(processes.length, backend === 'postgres' ? 2 : 1)
    const expired = server.accessTokens.at(-1)
    h.clock.advance((ACCESS_TOKEN_TTL_S - 59) * 1000)
    served = processes.map(() => 0)
    const shown = await page.evaluate(`Promise.all(Array.from({ length: 20 }, () =>
      service.functions.call('showAccount', {}).then((account) => account.sub, (error) => error.code)))`)
    assert.deepEqual(shown, Array.from({ length: 20 }, () => ACCOUNT))
    assert.deepEqual(served, processes.map(() => 20 / processes.length), 'each process answered its share of the calls')
    assert.equal(server.refreshes.length, 1, 'one refresh at the server')
    assert.deepEqual(server.refusedRefreshes, [])
    const [refreshed] = server.refreshes
    assert.notEqual(refreshed!.accessToken, expired)
    assert.deepEqual(server.userinfo.slice(-20), Array.from({ length: 20 }, () => refreshed!.accessToken), 'every call used the new token')
  })

  test('rotation: the next refresh presents the refresh token the last one issued', TEST, async () => {
    h.clock.advance(ACCESS_TOKEN_TTL_S * 1000)
    assert.equal(await showAccount(), `CRM account ${ACCOUNT}`)
    assert.equal(server.refreshes.length, 2)
    assert.equal(server.refreshes[1]!.presented, server.refreshes[0]!.issued)
    assert.notEqual(server.refreshes[1]!.issued, server.refreshes[0]!.issued)
  })

  test('rejected refresh: with the grant revoked at the server, the desk shows INTEGRATION_RECONNECT_REQUIRED and a link to the connection, which says "Reconnect required"', TEST, async () => {
    const revoked = await fetch(`${issuer}/token/revocation`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: server.refreshes.at(-1)!.issued!, token_type_hint: 'refresh_token', client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
    })
    assert.equal(revoked.status, 200)
    h.clock.advance(ACCESS_TOKEN_TTL_S * 1000)
    const reconnectUrl = `${authUrl}/connections/${connectionId}`
    assert.equal(await showAccount(), 'INTEGRATION_RECONNECT_REQUIRED')
    assert.equal(await page.getByRole('link', { name: 'Connect your CRM account' }).getAttribute('href'), reconnectUrl)
    assert.deepEqual(server.refusedRefreshes, ['invalid_grant'])
    // The next call fails the same, naming the same page, without asking the server again.
    assert.equal(await showAccount(), 'INTEGRATION_RECONNECT_REQUIRED')
    assert.equal(await page.getByRole('link', { name: 'Connect your CRM account' }).getAttribute('href'), reconnectUrl)
    assert.equal(server.refusedRefreshes.length, 1)
    assert.equal(server.refreshes.length, 2)

    await page.getByRole('link', { name: 'Connect your CRM account' }).click()
    await page.waitForURL(reconnectUrl)
    assert.equal(await page.locator('#status').textContent(), 'Reconnect required')
  })

  test('reconnect: from the connection\'s page, consent at the server again; the connection is active and the desk works again', TEST, async () => {
    const issuedBefore = server.accessTokens.length
    await page.getByRole('button', { name: 'Reconnect at the provider' }).click()
    const prompts = await authorizeAtServer()
    assert.equal(prompts.at(-1), 'consent', 'the revoked grant is asked for again')
    await page.waitForURL((url) => url.origin === authUrl && url.pathname === '/connections/oauth/finish')
    await page.getByRole('heading', { name: 'Connected' }).waitFor()
    assert.equal(server.exchanges.length, 2)
    assert.equal(server.exchanges[1]!.codeChallengeMethod, 'S256')
    await page.getByRole('link', { name: 'Open the connection' }).click()
    assert.equal(await page.locator('#status').textContent(), 'Active')

    await page.goto(`${deskUrl}/`)
    assert.equal(await showAccount(), `CRM account ${ACCOUNT}`)
    assert.equal(server.accessTokens.length, issuedBefore + 1)
    assert.equal(server.userinfo.at(-1), server.accessTokens.at(-1), 'the call used the token of the new grant')
  })
})
