/**
 * MCP OAuth 2.1 end to end against the platform on loopback: the metadata documents, the
 * official client SDK's whole flow (discovery from the 401, dynamic registration, PKCE S256,
 * a person's approval on the central sign-in, tokens, refresh), a token scoped to one app on
 * the focused builder surface, and the attacks: a token for app A on app B, a focused token
 * calling production diagnostics, an unconfirmed person approving, a redirect URI that was
 * not registered, a PKCE verifier that does not match, a code used twice, a refresh token
 * used twice; a person's page of approved clients and its Revoke (with another person's and a
 * forged revoke), and the token endpoint's bound per address (PGlite, or PostgreSQL with
 * DATABASE_URL).
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { backend } from '../../test/test-db.ts'
import { manifest, ownerApi } from '../../test/harness.ts'
import { sha256 } from '../lib/crypto.ts'
import { RATE_RULES } from '../identity/mcp-oauth/routes.ts'
import { callTool, consent, failure, files, hiddenFields, ok, REDIRECT, signedIn, startMcpPlatform, TestProvider, type McpPlatform } from './test-mcp.ts'

/** Connects the official client with `provider`, runs its flow to the authorization URL, has `browser` approve, and finishes it. */
async function connectWithOAuth(p: McpPlatform, provider: TestProvider, approve: (url: string) => Promise<Response>): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${p.base}/mcp`), { authProvider: provider })
  const client = new Client({ name: 'test-agent', version: '1.0.0' })
  await client.connect(transport)
  // The first call that needs a person is answered 401: the client discovers, registers and opens the approval.
  await assert.rejects(client.callTool({ name: 'list_apps', arguments: {} }), UnauthorizedError)
  assert.ok(provider.opened, 'the client opened the authorization URL')
  const answered = await approve(provider.opened.toString())
  assert.equal(answered.status, 303)
  const back = new URL(answered.headers.get('location')!)
  assert.equal(back.origin + back.pathname, REDIRECT)
  assert.equal(back.searchParams.get('state'), provider.opened.searchParams.get('state'))
  assert.equal(back.searchParams.get('iss'), p.base)
  await transport.finishAuth(back.searchParams.get('code')!)
  return client
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(48).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

async function register(p: McpPlatform, redirectUris = [REDIRECT]): Promise<string> {
  const res = await fetch(`${p.base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Raw Agent', redirect_uris: redirectUris }) })
  assert.equal(res.status, 201)
  return ((await res.json()) as { client_id: string }).client_id
}

function authorizeUrl(p: McpPlatform, input: { clientId: string; challenge: string; redirectUri?: string; scope?: string; state?: string }): string {
  const url = new URL(`${p.auth}/mcp/authorize`)
  url.search = new URLSearchParams({
    response_type: 'code', client_id: input.clientId, redirect_uri: input.redirectUri ?? REDIRECT, code_challenge: input.challenge,
    code_challenge_method: 'S256', state: input.state ?? 'st-1', scope: input.scope ?? 'mcp', resource: `${p.base}/mcp`,
  }).toString()
  return url.toString()
}

async function token(p: McpPlatform, params: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(`${p.base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params) })
  return { status: res.status, body: await res.json() }
}

async function mcpStatus(p: McpPlatform, accessToken: string): Promise<number> {
  const res = await fetch(`${p.base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${accessToken}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  })
  return res.status
}

describe(`MCP OAuth 2.1 (${backend})`, () => {
  let p: McpPlatform
  let owner: { token: string; userId: string }
  before(async () => {
    p = await startMcpPlatform()
    owner = await p.h.createOwner('owner@shop.test', 'Shop')
    for (const slug of ['shop', 'other']) {
      assert.equal((await ownerApi(p.h, owner.token, 'POST', '/v1/apps', { slug, visibility: 'public' })).status, 201)
    }
  })
  after(async () => {
    await p?.close()
  })

  test('the protected resource and authorization server metadata name each other and the endpoints', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const prm = (await (await fetch(`${p.base}${path}`)).json()) as Record<string, unknown>
      assert.equal(prm.resource, `${p.base}/mcp`)
      assert.deepEqual(prm.authorization_servers, [p.base])
    }
    const as = (await (await fetch(`${p.base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>
    assert.equal(as.issuer, p.base)
    assert.equal(as.authorization_endpoint, `${p.auth}/mcp/authorize`)
    assert.equal(as.token_endpoint, `${p.base}/oauth/token`)
    assert.equal(as.registration_endpoint, `${p.base}/oauth/register`)
    assert.deepEqual(as.code_challenge_methods_supported, ['S256'])
    assert.deepEqual(as.grant_types_supported, ['authorization_code', 'refresh_token'])
  })

  test('the official client gets a token by a person\'s approval and uses the full surface; tokens are stored hashed and refresh rotates', async () => {
    const browser = await signedIn(p, 'owner@shop.test')
    const provider = new TestProvider()
    let page = ''
    const client = await connectWithOAuth(p, provider, async (url) => {
      const shown = await consent(browser, p, url)
      page = shown.page
      return shown.response
    })
    assert.match(page, /Allow Test Agent to act for you\?/)
    assert.match(page, /<code>mcp<\/code>/)
    const apps = (await ok(client, 'list_apps')).apps.map((a: { slug: string }) => a.slug)
    assert.deepEqual(apps.sort(), ['other', 'shop'])
    const names = (await client.listTools()).tools.map((t) => t.name)
    assert.ok(names.includes('list_background_jobs') && names.includes('create_app'))
    const tokens = provider.saved!
    assert.match(tokens.access_token, /^svc_mcp_/)
    // Stored as hashes only.
    const stored = await p.h.t.db.query<{ token_hash: Uint8Array }>('select token_hash from platform.mcp_oauth_tokens')
    assert.ok(stored.some((row) => Buffer.from(row.token_hash).equals(sha256(tokens.access_token))))
    const dump = JSON.stringify(await p.h.t.db.query('select * from platform.mcp_oauth_tokens'))
    assert.ok(!dump.includes(tokens.access_token) && !dump.includes(tokens.refresh_token!))

    // An hour later the access token is over; the refresh token gives a new pair, once.
    p.h.clock.advance(60 * 60 * 1000 + 1000)
    assert.equal(await mcpStatus(p, tokens.access_token), 401)
    const clientId = (provider.client as { client_id: string }).client_id
    const refreshed = await token(p, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId })
    assert.equal(refreshed.status, 200)
    assert.notEqual(refreshed.body.refresh_token, tokens.refresh_token)
    assert.equal(await mcpStatus(p, refreshed.body.access_token), 200)
    // The spent refresh token again: refused, and every token of the approval ends.
    const replay = await token(p, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId })
    assert.equal(replay.status, 400)
    assert.equal(replay.body.error, 'invalid_grant')
    assert.equal(await mcpStatus(p, refreshed.body.access_token), 401)
    assert.equal((await token(p, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token, client_id: clientId })).body.error, 'invalid_grant')
    await client.close()
  })

  test('a token for one app reaches that app only, on the focused builder surface without production diagnostics', async () => {
    const browser = await signedIn(p, 'owner@shop.test')
    const provider = new TestProvider('mcp:app:shop')
    let page = ''
    const client = await connectWithOAuth(p, provider, async (url) => {
      const shown = await consent(browser, p, url)
      page = shown.page
      return shown.response
    })
    assert.match(page, /only the app shop/)
    const names = (await client.listTools()).tools.map((t) => t.name)
    for (const hidden of ['list_background_jobs', 'get_background_job', 'create_app', 'create_app_access_token']) assert.ok(!names.includes(hidden), hidden)
    assert.ok(names.includes('deploy_app'))
    assert.deepEqual((await ok(client, 'list_apps')).apps.map((a: { slug: string }) => a.slug), ['shop'])
    const bundle = (slug: string) => files({ 'service.yaml': manifest(slug), 'public/index.html': '<h1>hi</h1>' })
    assert.equal((await ok(client, 'deploy_app', { appId: 'shop', files: bundle('shop') })).release.version, 1)
    // App A's token on app B, by slug, by id, and on an app that does not exist: the same refusal.
    const other = (await ownerApi(p.h, owner.token, 'GET', '/v1/apps/other')).body.app
    for (const appId of ['other', other.id, 'nowhere']) {
      assert.equal((await failure(client, 'deploy_app', { appId, files: bundle('other') })).code, 'TOKEN_SCOPE_MISMATCH', appId)
      assert.equal((await failure(client, 'list_secrets', { appId })).code, 'TOKEN_SCOPE_MISMATCH', appId)
    }
    assert.equal((await ownerApi(p.h, owner.token, 'GET', '/v1/apps/other/releases')).body.releases.length, 0, 'nothing reached app B')
    // Production diagnostics are not on the focused surface, even named directly.
    const diagnostics = await failure(client, 'list_background_jobs', { appId: 'shop' })
    assert.equal(diagnostics.code, 'TOOL_NOT_AVAILABLE')
    assert.equal((await failure(client, 'get_background_job', { appId: 'shop', jobId: '00000000-0000-4000-8000-000000000000' })).code, 'TOOL_NOT_AVAILABLE')
    assert.equal((await failure(client, 'create_app', { slug: 'sneaky' })).code, 'TOOL_NOT_AVAILABLE')
    assert.equal((await failure(client, 'list_integration_event_deliveries', { appId: 'shop' })).code, 'TOOL_NOT_AVAILABLE')
    const productionLogs = await failure(client, 'read_logs', { appId: 'shop' })
    assert.deepEqual([productionLogs.code, productionLogs.details.field], ['TOOL_NOT_AVAILABLE', 'sessionId'])
    // A development session's lines are the builder's own.
    assert.equal((await ok(client, 'deploy_app', { appId: 'shop', sessionId: 'ada', files: bundle('shop') })).release.version, 1)
    assert.ok(Array.isArray((await ok(client, 'read_logs', { appId: 'shop', sessionId: 'ada' })).logs))
    await client.close()
  })

  test('a person without Edit on the app cannot approve a token for it', async () => {
    await p.h.createOwner('stranger@else.test', 'Else')
    const browser = await signedIn(p, 'stranger@else.test')
    const clientId = await register(p)
    const shown = await browser.fetch(authorizeUrl(p, { clientId, challenge: pkce().challenge, scope: 'mcp:app:shop' }))
    assert.equal(shown.status, 404)
    assert.doesNotMatch(await shown.text(), /Approve/)
  })

  test('an unconfirmed account cannot approve a client (spec 5.2)', async () => {
    const person = await p.h.createOwner('fresh@shop.test', 'Shop')
    const browser = await signedIn(p, 'fresh@shop.test')
    await p.h.t.db.query('update platform.users set email_confirmed_at = null where id = $1', [person.userId])
    const clientId = await register(p)
    const url = authorizeUrl(p, { clientId, challenge: pkce().challenge })
    const shown = await browser.fetch(url)
    assert.equal(shown.status, 403)
    assert.match(await shown.text(), /Confirm your email first/)
    // Nor by posting the form directly.
    // The browser's own CSRF cookie from signing in, echoed as a form would.
    const csrf = [...browser.cookies(new URL(p.auth).host)].find(([name]) => name.includes('csrf'))![1].value
    const params = Object.fromEntries(new URL(url).searchParams)
    const posted = await browser.post(`${p.auth}/mcp/authorize`, { ...params, csrf, decision: 'approve' })
    assert.equal(posted.status, 403)
    assert.equal(posted.headers.get('location'), null)
    const [codes] = await p.h.t.db.query<{ n: number }>('select count(*)::int as n from platform.mcp_oauth_codes where user_id = $1', [person.userId])
    assert.equal(codes!.n, 0)
  })

  test('a redirect URI that was not registered is never followed, at the approval or the token endpoint', async () => {
    const browser = await signedIn(p, 'owner@shop.test')
    const clientId = await register(p)
    const { verifier, challenge } = pkce()
    for (const redirectUri of ['https://evil.example/callback', `${REDIRECT}/../steal`, `${REDIRECT}?x=1`, 'http://127.0.0.1:53682/callback2']) {
      const shown = await browser.fetch(authorizeUrl(p, { clientId, challenge, redirectUri }))
      assert.equal(shown.status, 400, redirectUri)
      assert.equal(shown.headers.get('location'), null)
      assert.match(await shown.text(), /not one this application registered/)
    }
    // Registration refuses open or dangerous redirect URIs.
    for (const uri of ['http://evil.example/cb', 'javascript:alert(1)', 'https://a.example/cb#frag', 'data:text/html,x']) {
      const res = await fetch(`${p.base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'x', redirect_uris: [uri] }) })
      assert.equal(res.status, 400, uri)
    }
    // A code approved for the registered URI, exchanged naming another: refused.
    const { response } = await consent(browser, p, authorizeUrl(p, { clientId, challenge }))
    const code = new URL(response.headers.get('location')!).searchParams.get('code')!
    const wrong = await token(p, { grant_type: 'authorization_code', code, redirect_uri: 'https://evil.example/callback', client_id: clientId, code_verifier: verifier })
    assert.equal(wrong.body.error, 'invalid_grant')
  })

  test('a PKCE verifier that does not match is refused, and the code is spent', async () => {
    const browser = await signedIn(p, 'owner@shop.test')
    const clientId = await register(p)
    const { verifier, challenge } = pkce()
    const { response } = await consent(browser, p, authorizeUrl(p, { clientId, challenge }))
    const code = new URL(response.headers.get('location')!).searchParams.get('code')!
    const mismatch = await token(p, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: pkce().verifier })
    assert.equal(mismatch.status, 400)
    assert.equal(mismatch.body.error, 'invalid_grant')
    const late = await token(p, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier })
    assert.equal(late.body.error, 'invalid_grant', 'a guessed verifier cannot be retried on the same code')
    // Without PKCE there is no approval at all: the request goes back with invalid_request.
    const plain = new URL(authorizeUrl(p, { clientId, challenge }))
    plain.searchParams.set('code_challenge_method', 'plain')
    const refused = await browser.fetch(plain.toString())
    assert.equal(refused.status, 302)
    assert.equal(new URL(refused.headers.get('location')!).searchParams.get('error'), 'invalid_request')
  })

  test('a code used twice is refused, and the tokens issued for it end', async () => {
    const browser = await signedIn(p, 'owner@shop.test')
    const clientId = await register(p)
    const { verifier, challenge } = pkce()
    const { response } = await consent(browser, p, authorizeUrl(p, { clientId, challenge }))
    const code = new URL(response.headers.get('location')!).searchParams.get('code')!
    const params = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier }
    const first = await token(p, params)
    assert.equal(first.status, 200)
    assert.equal(await mcpStatus(p, first.body.access_token), 200)
    const second = await token(p, params)
    assert.equal(second.body.error, 'invalid_grant')
    assert.equal(await mcpStatus(p, first.body.access_token), 401, 'the first exchange\'s token is revoked')
  })

  test('deny answers access_denied to the client; a foreign client id is shown, not redirected', async () => {
    const browser = await signedIn(p, 'owner@shop.test')
    const clientId = await register(p)
    const { response } = await consent(browser, p, authorizeUrl(p, { clientId, challenge: pkce().challenge, state: 'keep-me' }), 'deny')
    const back = new URL(response.headers.get('location')!)
    assert.equal(back.searchParams.get('error'), 'access_denied')
    assert.equal(back.searchParams.get('state'), 'keep-me')
    assert.equal(back.searchParams.get('code'), null)
    const unknown = await browser.fetch(authorizeUrl(p, { clientId: '00000000-0000-4000-8000-000000000000', challenge: pkce().challenge }))
    assert.equal(unknown.status, 400)
    assert.equal(unknown.headers.get('location'), null)
  })

  test('an anonymous browser is sent to sign in and back to the approval', async () => {
    const clientId = await register(p)
    const { CookieClient } = await import('../../test/cookie-client.ts')
    const anonymous = new CookieClient(p.h)
    const url = authorizeUrl(p, { clientId, challenge: pkce().challenge })
    const shown = await anonymous.fetch(url)
    assert.equal(shown.status, 302)
    const signIn = new URL(shown.headers.get('location')!)
    assert.equal(signIn.pathname, '/sign-in')
    assert.equal(signIn.searchParams.get('continue'), url.slice(p.auth.length))
    const answer = await callTool(await (await import('./test-mcp.ts')).mcpClient(p), 'start_onboarding', { email: 'x', projectName: 'y' })
    assert.equal(answer.code, 'VALIDATION_FAILED')
  })
  /** A raw client approved by `browser` for `scope`: its tokens. */
  async function approvedTokens(browser: Awaited<ReturnType<typeof signedIn>>, scope: string): Promise<{ clientId: string; access: string; refresh: string }> {
    const clientId = await register(p)
    const { verifier, challenge } = pkce()
    const { response } = await consent(browser, p, authorizeUrl(p, { clientId, challenge, scope }))
    const code = new URL(response.headers.get('location')!).searchParams.get('code')!
    const answer = await token(p, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    return { clientId, access: answer.body.access_token, refresh: answer.body.refresh_token }
  }

  /** The approvals listed on a person's page, in order: the text of each item and its revoke form's fields. */
  async function listedApprovals(browser: Awaited<ReturnType<typeof signedIn>>): Promise<{ html: string; items: Array<{ text: string; fields: Record<string, string> }> }> {
    const res = await browser.fetch(`${p.auth}/mcp/clients`)
    const html = await res.text()
    assert.equal(res.status, 200, html)
    const items = [...html.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) => ({ text: m[1]!.replace(/<[^>]+>/g, ''), fields: hiddenFields(m[1]!) }))
    return { html, items }
  }

  test('a person lists the clients they approved and revokes one: its tokens stop at once, the other keeps working', async () => {
    const owner2 = await p.h.createOwner('lists@clients.test', 'Clients')
    assert.equal((await ownerApi(p.h, owner2.token, 'POST', '/v1/apps', { slug: 'listed', visibility: 'public' })).status, 201)
    const browser = await signedIn(p, 'lists@clients.test')
    assert.match((await listedApprovals(browser)).html, /No application can use the MCP server for you/)
    const whole = await approvedTokens(browser, 'mcp')
    p.h.clock.advance(1000)
    const oneApp = await approvedTokens(browser, 'mcp:app:listed')
    // A browser without a CSRF cookie yet gets one token for every form on the page.
    const authHost = new URL(p.auth).host
    for (const name of [...browser.cookies(authHost).keys()]) if (name.includes('csrf')) browser.cookies(authHost).delete(name)
    const { items } = await listedApprovals(browser)
    assert.equal(items.length, 2)
    assert.equal(new Set(items.map((i) => i.fields.csrf)).size, 1)
    assert.match(items[0]!.text, /^Raw Agent: only the app listed/, 'newest first')
    assert.match(items[1]!.text, /^Raw Agent: your whole account/)
    assert.ok(!items.map((i) => i.text).join('').includes('svc_mcp'), 'never a token')

    // Another person cannot revoke it (the same answer as an unknown approval), nor can a forged form.
    const stranger = await signedIn(p, 'owner@shop.test')
    const strangerPage = await (await stranger.fetch(`${p.auth}/preferences`)).text()
    const foreign = await stranger.post(`${p.auth}/mcp/clients/revoke`, { csrf: hiddenFields(strangerPage).csrf ?? '', approval: items[1]!.fields.approval! })
    assert.equal(foreign.status, 404)
    const forged = await browser.post(`${p.auth}/mcp/clients/revoke`, { csrf: 'not-the-token', approval: items[1]!.fields.approval! })
    assert.equal(forged.status, 403)
    assert.equal(await mcpStatus(p, whole.access), 200, 'neither revoked it')

    const revoked = await browser.post(`${p.auth}/mcp/clients/revoke`, items[1]!.fields)
    assert.equal(revoked.status, 303)
    assert.equal(revoked.headers.get('location'), `${p.auth}/mcp/clients?revoked=1`)
    assert.equal(await mcpStatus(p, whole.access), 401, 'the access token stopped at once')
    const refresh = await token(p, { grant_type: 'refresh_token', refresh_token: whole.refresh, client_id: whole.clientId })
    assert.equal(refresh.body.error, 'invalid_grant', 'so did the refresh token')
    assert.equal(await mcpStatus(p, oneApp.access), 200, 'the other approval keeps working')
    const after = await listedApprovals(browser)
    assert.deepEqual(after.items.map((i) => /only the app listed/.test(i.text)), [true])
    const twice = await browser.post(`${p.auth}/mcp/clients/revoke`, items[1]!.fields)
    assert.equal(twice.status, 404, 'an approval is revoked once')
    assert.match(await (await browser.fetch(`${p.auth}/preferences`)).text(), /href="\/mcp\/clients"/)
  })

  test('the token endpoint is bounded per client address: past the limit, 429 with Retry-After, until the next window', async () => {
    p.h.clock.advance(RATE_RULES.token.windowSeconds * 1000) // a fresh window
    const guess = { grant_type: 'refresh_token', refresh_token: 'svc_mcprt_guess', client_id: '00000000-0000-4000-8000-000000000000' }
    for (let i = 0; i < RATE_RULES.token.limit; i += 1) {
      const answer = await token(p, guess)
      assert.equal(answer.body.error, 'invalid_grant', `request ${i + 1} is answered`)
    }
    const res = await fetch(`${p.base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(guess) })
    assert.equal(res.status, 429)
    assert.ok(Number(res.headers.get('retry-after')) > 0)
    assert.equal(((await res.json()) as { error: string }).error, 'invalid_request')
    p.h.clock.advance(RATE_RULES.token.windowSeconds * 1000)
    assert.equal((await token(p, guess)).body.error, 'invalid_grant', 'the next window answers again')
  })
})
