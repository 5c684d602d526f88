/**
 * Test support for the MCP server: the harness platform served over real HTTP on a free
 * loopback port (its base URL `http://localhost:<port>`, so Node's fetch and the official MCP
 * client reach it by name), clients of the official SDK, and a tool call's parsed answer.
 */
import assert from 'node:assert/strict'
import type { Server as HttpServer } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport, type StreamableHTTPClientTransportOptions } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { latestDevMailTo } from '../email/index.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { CookieClient, field } from '../../test/cookie-client.ts'

export interface McpPlatform {
  h: Harness
  /** `http://localhost:<port>` */
  base: string
  /** `http://auth.localhost:<port>` */
  auth: string
  close(): Promise<void>
}

async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, 'localhost', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

/** The platform listening on a loopback port. */
export async function startMcpPlatform(): Promise<McpPlatform> {
  const port = await freePort()
  const base = `http://localhost:${port}`
  const h = await startHarness(undefined, { baseUrl: base })
  const server = serve({ fetch: (request) => h.platform.fetch(request), port, hostname: 'localhost' }) as HttpServer
  if (!server.listening) await new Promise((resolve, reject) => server.once('listening', resolve).once('error', reject))
  return {
    h, base, auth: h.platform.urls.auth,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      await h.close()
    },
  }
}

/** A connected client of the official SDK, with `token` as its bearer (none: anonymous). */
export async function mcpClient(p: McpPlatform, token?: string, options: StreamableHTTPClientTransportOptions = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${p.base}/mcp`), {
    ...options,
    ...(token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  })
  const client = new Client({ name: 'test-agent', version: '1.0.0' })
  await client.connect(transport)
  return client
}

export interface ToolAnswer {
  isError: boolean
  body: any
  /** The platform's code of a tool error. */
  code: string | undefined
}

/** Calls a tool; the answer's JSON (the text content and structuredContent must agree). */
export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 })
  const text = (result.content as Array<{ type: string; text: string }>)[0]!.text
  const body = JSON.parse(text)
  assert.deepEqual(result.structuredContent, body, 'structuredContent is the text content')
  return { isError: result.isError === true, body, code: body?.error?.code }
}

/** Calls a tool that must succeed; its answer. */
export async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const answer = await callTool(client, name, args)
  assert.equal(answer.isError, false, `${name} failed: ${JSON.stringify(answer.body)}`)
  return answer.body
}

/** Calls a tool that must fail; its platform code. */
export async function failure(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ code: string; message: string; details?: any }> {
  const answer = await callTool(client, name, args)
  assert.equal(answer.isError, true, `${name} succeeded: ${JSON.stringify(answer.body)}`)
  return answer.body.error
}

/** The newest email to `email` holding a link to `path` on the auth host. */
export async function emailedLink(p: McpPlatform, email: string, path: string): Promise<string> {
  const mail = await latestDevMailTo(p.h.t.db, email)
  assert.ok(mail, `no email to ${email}`)
  const link = new RegExp(`${p.auth.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}${path}\\S*`).exec(mail.text)?.[0]
  assert.ok(link, `no ${path} link in: ${mail.text}`)
  return link
}

/** Opens an emailed confirmation link in `browser` and presses Approve, as a person does. */
export async function approveLink(browser: CookieClient, p: McpPlatform, link: string): Promise<Response> {
  const review = await browser.fetch(link)
  assert.equal(review.status, 200)
  const html = await review.text()
  return browser.post(`${p.auth}/confirm`, { r: field(html, 'r'), t: field(html, 't') })
}

/** Sets up a company for the signed-in browser, continuing to `next` on the auth host. */
export async function setUpCompany(browser: CookieClient, p: McpPlatform, name: string, next: string): Promise<Response> {
  const html = await (await browser.fetch(`${p.auth}/company?continue=${encodeURIComponent(next)}`)).text()
  return browser.post(`${p.auth}/company`, { csrf: field(html, 'csrf'), continue: field(html, 'continue'), name })
}

/** Text files as the MCP tools take them. */
export function files(entries: Record<string, string>): Array<{ path: string; content: string }> {
  return Object.entries(entries).map(([path, content]) => ({ path, content }))
}

/** Every hidden field of a page's form. */
export function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1]!] = match[2]!.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
  }
  return fields
}

/** A browser signed in at the central sign-in as `email` (email link, approved, claimed). */
export async function signedIn(p: McpPlatform, email: string): Promise<CookieClient> {
  const browser = new CookieClient(p.h)
  const html = await (await browser.fetch(`${p.auth}/sign-in?continue=%2F`)).text()
  const started = await browser.post(`${p.auth}/sign-in`, { csrf: field(html, 'csrf'), continue: field(html, 'continue'), email })
  assert.equal(started.status, 303)
  const requestId = new URL(started.headers.get('location')!, p.auth).searchParams.get('r')!
  assert.equal((await approveLink(browser, p, await emailedLink(p, email, '/confirm'))).status, 200)
  const wait = await (await browser.fetch(`${p.auth}/sign-in/wait?r=${requestId}`)).text()
  assert.equal((await browser.post(`${p.auth}/sign-in/claim`, { csrf: field(wait, 'csrf'), r: requestId })).status, 303)
  return browser
}

/**
 * A person's approval of an authorization URL in `browser`: the consent page, then its form
 * posted with `decision`; the response of the POST (a 303 to the client's redirect URI).
 */
export async function consent(browser: CookieClient, p: McpPlatform, authorizationUrl: string, decision: 'approve' | 'deny' = 'approve'): Promise<{ page: string; response: Response }> {
  const shown = await browser.fetch(authorizationUrl)
  const page = await shown.text()
  assert.equal(shown.status, 200, page)
  const response = await browser.post(`${p.auth}/mcp/authorize`, { ...hiddenFields(page), decision })
  return { page, response }
}

/** The redirect URI test clients register (nothing listens there: tests read the redirect). */
export const REDIRECT = 'http://127.0.0.1:53682/callback'

/** An MCP client's OAuth state, as a coding agent keeps it; the authorization URL it would open is captured. */
export class TestProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ''
  opened: URL | undefined
  readonly scope: string | undefined
  constructor(scope?: string) {
    this.scope = scope
  }
  get redirectUrl() { return REDIRECT }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Test Agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', ...(this.scope ? { scope: this.scope } : {}) }
  }
  clientInformation() { return this.client }
  saveClientInformation(info: OAuthClientInformationMixed) { this.client = info }
  tokens() { return this.saved }
  saveTokens(tokens: OAuthTokens) { this.saved = tokens }
  redirectToAuthorization(url: URL) { this.opened = url }
  saveCodeVerifier(verifier: string) { this.verifier = verifier }
  codeVerifier() { return this.verifier }
}

