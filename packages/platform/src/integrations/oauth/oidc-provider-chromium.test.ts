/**
 * Connecting with OAuth in real Chromium: the platform served over HTTP, `oidc-provider` on
 * loopback (PKCE required), the provider app's exchange Function in Deno calling its token
 * endpoint. A person signs in at the platform, fills the connect form, signs in and consents
 * on the server's own pages, and lands on "Connected": the browser follows the form's redirect
 * to the provider (the page's form-action allows that origin), carries the flow cookie back
 * through the `{base_url}` callback to `{auth_url}`, and the token works.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { serve } from '@hono/node-server'
import { chromium, type Browser, type BrowserContext } from 'playwright-core'
import Provider from 'oidc-provider'
import { ManualClock } from '../../lib/clock.ts'
import { newSecret } from '../../lib/crypto.ts'
import { backend, createTestDb } from '../../../test/test-db.ts'
import { manifest, type Harness } from '../../../test/harness.ts'
import { deployApp } from '../../../test/integration-fixture.ts'
import { browserSuite, signInAt, WAIT_MS, type BrowserHarness } from '../../../test/browser.ts'
import { findChromium } from '../../../../../scripts/find-chromium.mjs'
import { silentLogger } from '../../lib/logger.ts'
import { startPlatform } from './test-platform.ts'

const CLIENT_ID = 'crm-client'
const CLIENT_SECRET = `client-secret-${randomBytes(8).toString('hex')}`

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

function providerApp(issuer: string): Record<string, string> {
  return {
    'service.yaml': manifest('crm', `secrets:
  CRM_CLIENT_SECRET: required
functions:
  - name: listContacts
    entrypoint: functions/list.ts
    access: system
  - name: swapCode
    entrypoint: functions/swap.ts
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
    capabilities:
      - name: contacts.read
        description: Read contacts
    operations:
      - name: contacts.list
        capability: contacts.read
        function: listContacts
        description: Lists contacts
`, 'private'),
    'functions/list.ts': 'export default 1',
    'functions/swap.ts': `import { defineFunction, errors, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({ code: string(), redirectUri: string(), codeVerifier: optional(string()) }),
  async handler({ input, secrets }) {
    const res = await fetch('${issuer}/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: input.code, redirect_uri: input.redirectUri,
        code_verifier: input.codeVerifier ?? '', client_id: '${CLIENT_ID}', client_secret: (await secrets.get('CRM_CLIENT_SECRET')) ?? '' }),
    })
    const body = await res.json()
    if (res.status !== 200) throw errors.badRequest('TOKEN_REFUSED', 'the server refused: ' + body.error)
    return { accessToken: body.access_token, refreshToken: body.refresh_token, expiresIn: body.expires_in }
  },
})
`,
  }
}

describe(`OAuth connect in Chromium against oidc-provider (${backend})`, browserSuite(), () => {
  let h: Harness
  let platformServer: HttpServer
  let oidcServer: HttpServer
  let browser: Browser
  let issuer: string
  let authUrl: string
  const issued: string[] = []
  const contexts: BrowserContext[] = []

  before(async () => {
    const port = await freePort()
    const baseUrl = `http://localhost:${port}`
    let handler: Parameters<typeof createHttpServer>[1] | null = null
    oidcServer = createHttpServer((req, res) => handler!(req, res))
    await new Promise<void>((resolve) => oidcServer.listen(0, '127.0.0.1', resolve))
    issuer = `http://127.0.0.1:${(oidcServer.address() as AddressInfo).port}`
    const provider = new Provider(issuer, {
      clients: [{
        client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${baseUrl}/v1/custom-integrations/oauth/callback`],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post',
      }],
      pkce: { required: () => true },
      findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
      cookies: { keys: [randomBytes(16).toString('hex')] },
      features: { devInteractions: { enabled: true } },
    })
    provider.on('access_token.saved', (token) => { issued.push(token.jti) })
    handler = provider.callback()

    h = await startPlatform(await createTestDb(), {
      allowNet: ['127.0.0.1'], baseUrl, masterKey: new Uint8Array(randomBytes(32)), clock: new ManualClock(new Date().toISOString()),
      operatorKey: newSecret('svc_operator_'), logger: silentLogger,
    })
    authUrl = h.platform.urls.auth
    platformServer = serve({ fetch: (request) => h.platform.fetch(request), port, hostname: '127.0.0.1' }) as HttpServer
    await new Promise<void>((resolve) => platformServer.listening ? resolve() : platformServer.once('listening', () => resolve()))
    browser = await chromium.launch({
      executablePath: findChromium({ env: process.env }).path!, headless: true, timeout: WAIT_MS,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })

    const alice = await h.createOwner('alice@acme.test', 'Acme')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'crm', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'crm', providerApp(issuer))
    const secret = await h.request('/v1/apps/crm/secrets/CRM_CLIENT_SECRET', { method: 'PUT', token: alice.token, json: { value: CLIENT_SECRET } })
    assert.ok(secret.status === 200 || secret.status === 201, await secret.text())
    await h.createOwner('bob@acme.test', 'Acme')
  })
  after(async () => {
    await Promise.all(contexts.map((context) => context.close()))
    await browser?.close()
    await new Promise((resolve) => platformServer?.close(resolve))
    await new Promise((resolve) => oidcServer?.close(resolve))
    await h?.close()
  })

  test('a person connects: connect form, sign-in and consent at the server, back to "Connected", and the token is the server\'s', async () => {
    const newContext = async () => {
      const context = await browser.newContext()
      context.setDefaultTimeout(WAIT_MS)
      context.setDefaultNavigationTimeout(WAIT_MS)
      contexts.push(context)
      return context
    }
    const b = { h, authUrl, newContext } as unknown as BrowserHarness
    const connectUrl = `${authUrl}/connections/new?app=crm&integration=contacts`
    const page = await signInAt(b, await newContext(), connectUrl, 'bob@acme.test')
    await page.getByLabel('Name of this connection').fill('My CRM')
    await page.getByRole('button', { name: 'Continue to sign in at the provider' }).click()
    await page.waitForURL((url) => url.origin === issuer && url.pathname.startsWith('/interaction/'))
    await page.locator('input[name=login]').fill('bob-at-crm')
    await page.locator('input[name=password]').fill('any')
    await page.getByRole('button', { name: 'Sign-in' }).click()
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.waitForURL((url) => url.origin === authUrl && url.pathname === '/connections/oauth/finish')
    await page.getByRole('heading', { name: 'Connected' }).waitFor()
    const href = await page.getByRole('link', { name: 'Open the connection' }).getAttribute('href')
    const id = /^\/connections\/([0-9a-f-]{36})$/.exec(href!)![1]!
    assert.equal(await h.platform.oauth.accessTokenFor({ connectionId: id }), issued.at(-1))
  })
})
