/**
 * The OAuth flow against a real authorization server on loopback: `oidc-provider` with a
 * confidential client, PKCE required, refresh-token rotation and a short access-token TTL.
 * The person signs in at the server through its own pages (followed by hand, cookies kept),
 * the server redirects to the platform's callback, and the provider app's exchange and refresh
 * Functions call the server's token endpoint with the client secret. Twice: with those
 * Functions run for real in Deno (the platform's provider invoker, loopback opened to the
 * sandbox for this test only), and run in Node as an `InvokeProvider` doing the same POST.
 * Covered: a denial, connect (the server verifies PKCE), expiry and one refresh for 20
 * concurrent calls from two platforms over one database, the rotated refresh token used next
 * (the server refuses a reused one), a revoked refresh token marking the connection
 * Reconnect required, reconnect, and no token (nor the client secret) in any platform table,
 * the provider app's own database (where its Functions record each invocation), log line,
 * response or error.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import Provider from 'oidc-provider'
import { ManualClock } from '../../lib/clock.ts'
import { newSecret } from '../../lib/crypto.ts'
import { ServiceError } from '../../lib/errors.ts'
import { openPostgres } from '../../db/postgres.ts'
import { backend, createTestDb, type TestDb } from '../../../test/test-db.ts'
import { BASE, manifest, type Harness } from '../../../test/harness.ts'
import { consumerManifest, deployApp } from '../../../test/integration-fixture.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH } from '../../../test/sign-in-flow.ts'
import { capturedLog, type CapturedLog } from '../../../test/captured-log.ts'
import { assertNoLeak, recordResponses, type RecordedResponses } from '../../../test/leak-scan.ts'
import type { InvokeProvider, ProviderResult } from '../provider-invocation.ts'
import { OIDC_CLIENT_ID, oidcProviderFunctions, startPlatform } from './test-platform.ts'
import { signedInBrowser } from '../../../test/sign-in-flow.ts'
import { findAppBySlug } from '../../apps/apps.ts'

const CALLBACK = `${BASE}/v1/custom-integrations/oauth/callback`
const CLIENT_ID = OIDC_CLIENT_ID
const CLIENT_SECRET = `client-secret-${randomBytes(8).toString('hex')}`


/**
 * The provider's own table and its Functions wrapped to record each invocation there (its
 * trigger, operation and connection; never a token), so that the leak test reads rows the
 * provider wrote during the flow.
 */
const RECORDING_FILES: Record<string, string> = {
  'database/migrations/0001_calls.sql': `
create table calls (
  id uuid primary key default gen_random_uuid(),
  trigger text not null,
  operation text,
  connection_id uuid
);
alter table calls enable row level security;
create policy calls_system on calls for all using (auth.is_system()) with check (auth.is_system());
`,
  'functions/recorded.ts': `import { defineFunction } from '@service/server'
export function recorded(fn) {
  return defineFunction({
    input: fn.input,
    async handler(ctx) {
      await ctx.data.table('calls').create({
        trigger: ctx.integration?.trigger ?? 'none', operation: ctx.integration?.operation ?? null, connection_id: ctx.integration?.connectionId ?? null,
      })
      return fn.handler(ctx)
    },
  })
}
`,
  'functions/recorded-account.ts': `import account from './account.ts'\nimport { recorded } from './recorded.ts'\nexport default recorded(account)\n`,
  'functions/recorded-swap.ts': `import swap from './swap.ts'\nimport { recorded } from './recorded.ts'\nexport default recorded(swap)\n`,
  'functions/recorded-renew.ts': `import renew from './renew.ts'\nimport { recorded } from './recorded.ts'\nexport default recorded(renew)\n`,
}

const CONSUMER = consumerManifest({ function: 'callCrm', slots: { crm: { integration: 'contacts', capabilities: ['contacts.read'] } } })

const CONSUMER_CODE = `import { defineFunction, object } from '@service/server'
export default defineFunction({
  input: object({}),
  handler({ integrations }) {
    return integrations.use('crm').call('contacts.list', {})
  },
})
`

/** A browser at the authorization server: its cookies, redirects followed by hand. */
class ServerBrowser {
  cookies = new Map<string, string>()
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '))
    const res = await fetch(url, { ...init, headers, redirect: 'manual' })
    for (const header of res.headers.getSetCookie()) {
      const [pair] = header.split(';')
      const eq = pair!.indexOf('=')
      const value = pair!.slice(eq + 1)
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(header)) this.cookies.delete(pair!.slice(0, eq))
      else this.cookies.set(pair!.slice(0, eq), value)
    }
    return res
  }

  /**
   * Signs in as `account` and consents, from the authorization request to the redirect back
   * to the platform; returns that redirect URL (or the denial's, with `deny`).
   */
  async authorize(authorizationUrl: string, account: string, options: { deny?: boolean } = {}): Promise<URL> {
    let url = authorizationUrl
    for (let hop = 0; hop < 12; hop++) {
      const res = await this.fetch(url)
      if (res.status >= 300 && res.status < 400) {
        const next = new URL(res.headers.get('location')!, url)
        if (next.toString().startsWith(CALLBACK)) return next
        url = next.toString()
        continue
      }
      const html = await res.text()
      assert.equal(res.status, 200, html)
      if (options.deny) {
        url = new URL(`${new URL(url).pathname}/abort`, url).toString()
        continue
      }
      const prompt = /name="prompt" value="(\w+)"/.exec(html)![1]!
      const body = new URLSearchParams(prompt === 'login' ? { prompt, login: account, password: 'any' } : { prompt })
      const posted = await this.fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body })
      assert.ok(posted.status >= 300 && posted.status < 400, `${posted.status} ${await posted.text()}`)
      const next = new URL(posted.headers.get('location')!, url)
      if (next.toString().startsWith(CALLBACK)) return next
      url = next.toString()
    }
    throw new Error('the authorization server did not redirect back')
  }
}

for (const variant of ['deno', 'node'] as const) describe(`OAuth against a real authorization server (oidc-provider), exchange and refresh in ${variant} (${backend})`, () => {
  let server: Server
  let issuer: string
  let provider: Provider
  let h: Harness
  let log: CapturedLog
  /** Every response the platform answered (the leak test searches them). */
  let responses: RecordedResponses
  /** Function results and errors the test read (searched too). */
  const seen: string[] = []
  const masterKey = new Uint8Array(randomBytes(32))
  /** Every token the server issued (the leak test searches for them). */
  const issued: string[] = []
  /** Successful refresh grants at the server. */
  let refreshCalls = 0

  async function tokenEndpoint(params: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...params, client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }

  /** The provider app's exchange and refresh Functions, run in Node: the same POST as their Deno code. */
  const invokeProvider: InvokeProvider = async (invocation): Promise<ProviderResult> => {
    const input = invocation.input as Record<string, string>
    const params = invocation.functionName === 'swapCode'
      ? { grant_type: 'authorization_code', code: input.code!, redirect_uri: input.redirectUri!, code_verifier: input.codeVerifier! }
      : { grant_type: 'refresh_token', refresh_token: input.refreshToken! }
    const { status, body } = await tokenEndpoint(params)
    if (status !== 200) {
      return { ok: false, kind: 'typed', error: { status: body.error === 'invalid_grant' ? 401 : 400, code: String(body.error), message: 'token endpoint refused' } }
    }
    return { ok: true, value: { accessToken: body.access_token, refreshToken: body.refresh_token, expiresIn: body.expires_in } }
  }

  before(async () => {
    let handler: ((req: Parameters<Parameters<typeof createServer>[1] & object>[0], res: Parameters<Parameters<typeof createServer>[1] & object>[1]) => void) | null = null
    server = createServer((req, res) => {
      // Keeps every token the server hands out (the leak test searches for them).
      if (req.method === 'POST' && req.url === '/token') {
        const chunks: Buffer[] = []
        const write = res.write.bind(res)
        const end = res.end.bind(res)
        res.write = ((chunk: unknown, ...rest: unknown[]) => { if (chunk) chunks.push(Buffer.from(chunk as Buffer)); return (write as (...a: unknown[]) => boolean)(chunk, ...rest) }) as typeof res.write
        res.end = ((chunk?: unknown, ...rest: unknown[]) => {
          if (chunk && typeof chunk !== 'function') chunks.push(Buffer.from(chunk as Buffer))
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>
            for (const key of ['access_token', 'refresh_token'] as const) if (typeof body[key] === 'string') issued.push(body[key])
          } catch { /* not JSON */ }
          return (end as (...a: unknown[]) => ServerResponse)(chunk, ...rest)
        }) as typeof res.end
      }
      handler!(req, res)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    provider = new Provider(issuer, {
      clients: [{
        client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [CALLBACK],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post',
      }],
      pkce: { required: () => true },
      rotateRefreshToken: true,
      issueRefreshToken: async () => true,
      ttl: { AccessToken: 120, RefreshToken: 24 * 3600, Grant: 24 * 3600, Session: 24 * 3600, Interaction: 600 },
      findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
      cookies: { keys: [randomBytes(16).toString('hex')] },
      features: { devInteractions: { enabled: true }, revocation: { enabled: true } },
    })
    provider.on('grant.success', (ctx) => {
      if (ctx.oidc.params?.grant_type === 'refresh_token') refreshCalls++
    })
    handler = provider.callback()
    log = capturedLog('debug')
    h = await startPlatform(await createTestDb(), {
      ...(variant === 'node' ? { invokeProvider } : { allowNet: ['127.0.0.1'] }),
      masterKey, clock: new ManualClock('2026-11-21T12:00:00Z'), operatorKey: newSecret('svc_operator_'), logger: log.logger,
    })
    responses = recordResponses(h.platform)
    const alice = await h.createOwner('alice@acme.test', 'Acme')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'crm', visibility: 'private' } })).status, 201)
    await deployApp(h, alice.token, 'crm', {
      'service.yaml': manifest('crm', `secrets:
  CRM_CLIENT_SECRET: required
functions:
  - name: listContacts
    entrypoint: functions/recorded-account.ts
    access: system
  - name: swapCode
    entrypoint: functions/recorded-swap.ts
    access: system
  - name: renewToken
    entrypoint: functions/recorded-renew.ts
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
      - name: contacts.list
        capability: contacts.read
        function: listContacts
        description: Lists contacts
`, 'private'),
      ...oidcProviderFunctions(issuer),
      ...RECORDING_FILES,
    })
    const secret = await h.request('/v1/apps/crm/secrets/CRM_CLIENT_SECRET', { method: 'PUT', token: alice.token, json: { value: CLIENT_SECRET } })
    assert.ok(secret.status === 200 || secret.status === 201, await secret.text())
  })
  after(async () => {
    await h.close()
    await new Promise((resolve) => server.close(resolve))
  })

  async function connect(b: CookieClient, atServer: ServerBrowser, input: { reconnect?: string; deny?: boolean } = {}) {
    const formUrl = input.reconnect ? `${AUTH}/connections/${input.reconnect}` : `${AUTH}/connections/new?app=crm&integration=contacts`
    const html = await (await b.fetch(formUrl)).text()
    const started = input.reconnect
      ? await b.post(`${AUTH}/connections/${input.reconnect}/credentials`, { csrf: field(html, 'csrf') })
      : await b.post(`${AUTH}/connections/new`, { csrf: field(html, 'csrf'), app: 'crm', integration: 'contacts', label: 'CRM', kind: 'personal' })
    assert.equal(started.status, 303, await started.text())
    const back = await atServer.authorize(started.headers.get('location')!, 'bob-at-crm', input.deny ? { deny: true } : {})
    const { response } = await b.visit(back.toString())
    return { res: response, html: await response.text(), back }
  }

  test('connect, expire, one refresh for 20 concurrent calls from two platforms, rotation, revoked refresh, reconnect; no token stored or logged in plaintext', async () => {
    const bob = await h.createOwner('bob@acme.test', 'Acme')
    const browser = await signedInBrowser(h, 'bob@acme.test')
    const atServer = new ServerBrowser()

    // A denial at the server's consent is a page and no connection.
    const denied = await connect(browser, atServer, { deny: true })
    assert.equal(denied.back.searchParams.get('error'), 'access_denied')
    assert.equal(denied.res.status, 403)

    // Connect: the server issued the code only against the S256 challenge; the exchange sent the verifier.
    const done = await connect(browser, atServer)
    assert.equal(done.res.status, 200, done.html)
    const id = /href="\/connections\/([0-9a-f-]{36})"/.exec(done.html)![1]!
    const first = await h.platform.oauth.accessTokenFor({ connectionId: id })
    assert.equal(first, issued[0])

    // In Deno, a consumer app calls the operation through the broker; the provider's Function
    // reads the access token and the server accepts it.
    const callCrm = async () => {
      const app = (await findAppBySlug(h.t.db, 'desk'))!
      const result = await h.platform.functions.run((await h.platform.functions.resolve(app, 'callCrm'))!, { input: {}, user: null })
      seen.push(JSON.stringify(result))
      return result as { ok: boolean; value?: unknown; error?: { code?: string; details?: { connectUrl?: string } } }
    }
    if (variant === 'deno') {
      assert.equal((await h.request('/v1/apps', { token: bob.token, json: { slug: 'desk', visibility: 'private' } })).status, 201)
      await deployApp(h, bob.token, 'desk', { 'service.yaml': manifest('desk', CONSUMER, 'private'), 'functions/call.ts': CONSUMER_CODE })
      const bound = await h.request('/v1/apps/desk/integrations/crm/binding', { method: 'PUT', token: bob.token, json: { connectionId: id } })
      assert.equal(bound.status, 200, await bound.text())
      assert.deepEqual(await callCrm(), { ok: true, value: { sub: 'bob-at-crm' } })
    }

    // The server does verify PKCE: a fresh code with a wrong verifier is refused.
    const html = await (await browser.fetch(`${AUTH}/connections/new?app=crm&integration=contacts`)).text()
    const started = await browser.post(`${AUTH}/connections/new`, { csrf: field(html, 'csrf'), app: 'crm', integration: 'contacts', label: 'X', kind: 'personal' })
    const back = await atServer.authorize(started.headers.get('location')!, 'bob-at-crm')
    const wrong = await tokenEndpoint({ grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: CALLBACK, code_verifier: 'x'.repeat(43) })
    assert.equal(wrong.status, 400)
    assert.equal(wrong.body.error, 'invalid_grant')

    // Expiry: 20 concurrent calls over two platforms, one refresh, one new token.
    const otherDb: TestDb = h.t.url
      ? (() => { const pool = openPostgres({ url: h.t.url!, maxConnections: 2 }); return { db: pool, cleanup: () => pool.close() } })()
      : { db: h.t.db, cleanup: async () => {} }
    const other = await startPlatform(otherDb, {
      ...(variant === 'node' ? { invokeProvider } : { allowNet: ['127.0.0.1'] }), masterKey, clock: h.clock, operatorKey: h.operatorKey, logger: log.logger,
    })
    try {
      h.clock.advance(61_000)
      const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? h : other).platform.oauth.accessTokenFor({ connectionId: id })))
      assert.equal(refreshCalls, 1)
      assert.equal(new Set(tokens).size, 1)
      assert.notEqual(tokens[0], first)
      if (variant === 'deno') assert.deepEqual(await callCrm(), { ok: true, value: { sub: 'bob-at-crm' } }, 'the refreshed token works at the server')
    } finally {
      await other.close()
    }

    // Rotation: the next refresh succeeds, so it used the rotated token (the server refuses a reused one).
    h.clock.advance(120_000)
    const third = await h.platform.oauth.accessTokenFor({ connectionId: id })
    assert.equal(refreshCalls, 2)
    assert.equal(third, issued.at(-2))

    // Revoked at the server: the refresh is rejected, the connection needs reconnecting.
    const current = issued.at(-1)!
    const revoked = await fetch(`${issuer}/token/revocation`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: current, token_type_hint: 'refresh_token', client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
    })
    assert.equal(revoked.status, 200)
    h.clock.advance(120_000)
    const error = await h.platform.oauth.accessTokenFor({ connectionId: id }).then(() => null, (e: unknown) => e)
    seen.push(JSON.stringify({ error, message: (error as Error).message }))
    assert.ok(error instanceof ServiceError && error.code === 'INTEGRATION_RECONNECT_REQUIRED', String(error))
    assert.equal((error.details as { connectUrl: string }).connectUrl, `${AUTH}/connections/${id}`)
    if (variant === 'deno') {
      const refused = await callCrm()
      assert.equal(refused.ok, false)
      assert.equal(refused.error?.code, 'INTEGRATION_RECONNECT_REQUIRED')
    }

    // Reconnect from the connection's page: active again with a working token.
    const again = await connect(browser, atServer, { reconnect: id })
    assert.equal(again.res.status, 200, again.html)
    assert.equal(await h.platform.oauth.accessTokenFor({ connectionId: id }), issued.at(-2))
    const [{ status }] = await h.t.db.query<{ status: string }>('select status from platform.connections where id = $1', [id]) as [{ status: string }]
    assert.equal(status, 'active')
    if (variant === 'deno') assert.deepEqual(await callCrm(), { ok: true, value: { sub: 'bob-at-crm' } })

    // Leak test: no issued token, nor the client secret, in any platform table, the provider's
    // own database, log line, response or error.
    assert.ok(issued.length >= 6, 'the server issued access and refresh tokens')
    const scan = await assertNoLeak(h.t.db, {
      secrets: [...issued, CLIENT_SECRET],
      texts: { 'the log': log.text(), 'a response': (await responses.texts()).join('\n'), 'a Function result or error': seen.join('\n') },
      schemas: ['app_crm'],
    })
    // In Deno the provider's own Functions ran (exchange, refresh, the operation) and recorded each run.
    const calls = scan.tables.find((t) => t.name === 'app_crm.calls')
    assert.ok(calls && calls.rows >= (variant === 'deno' ? 6 : 0), JSON.stringify(calls))
  })
})
