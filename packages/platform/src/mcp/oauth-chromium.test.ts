/**
 * The MCP OAuth approval in real Chromium: the official MCP client SDK runs its flow against
 * the platform on loopback (discovery from the 401, registration, PKCE) and opens the
 * authorization URL; a person, in the browser, is sent to sign in, confirms by the emailed
 * link in another browser, comes back to the approval page, reads the client's name and the
 * scope, and presses Approve; the browser lands on the client's redirect URI with the code
 * (intercepted, as a native client's loopback listener would be), and the client's token
 * works. Deny, in the browser, lands there with access_denied and no code.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { backend } from '../../test/test-db.ts'
import { ownerApi } from '../../test/harness.ts'
import { approveIn, browserSuite, emailedLink, submitEmail, submitForm, WAIT_MS, type BrowserHarness } from '../../test/browser.ts'
import { REDIRECT, TestProvider } from './test-mcp.ts'

const PERSON = 'builder@acme.test'
const TEST = { timeout: 90_000 }

describe(`MCP OAuth approval in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness
  before(async () => {
    const { startBrowserHarness } = await import('../../test/browser.ts')
    b = await startBrowserHarness()
    const owner = await b.h.createOwner(PERSON)
    assert.equal((await ownerApi(b.h, owner.token, 'POST', '/v1/apps', { slug: 'shop', visibility: 'public' })).status, 201)
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  /** The official client's flow up to the authorization URL it opens. */
  async function startFlow(scope?: string) {
    const provider = new TestProvider(scope)
    const transport = new StreamableHTTPClientTransport(new URL(`${b.baseUrl}/mcp`), { authProvider: provider })
    const client = new Client({ name: 'test-agent', version: '1.0.0' })
    await client.connect(transport)
    await assert.rejects(client.callTool({ name: 'list_apps', arguments: {} }), UnauthorizedError)
    assert.ok(provider.opened)
    return { provider, transport, client, url: provider.opened.toString() }
  }

  /** A person opens the authorization URL, is sent to sign in, confirms by email in another browser, and is back on the approval page. */
  async function signInToApprove(url: string): Promise<Page> {
    const page = await (await b.newContext()).newPage()
    await page.goto(url)
    await submitEmail(page, PERSON)
    await approveIn(await b.newContext(), await emailedLink(b, PERSON))
    await page.waitForURL((current) => current.pathname === '/mcp/authorize', { timeout: WAIT_MS })
    await page.getByRole('heading', { name: 'Allow Test Agent to act for you?' }).waitFor({ timeout: WAIT_MS })
    return page
  }

  /** Where the browser lands on the client's redirect URI (answered here, as the client's listener would). */
  async function catchRedirect(page: Page): Promise<{ landed: Promise<URL> }> {
    let resolve!: (url: URL) => void
    const landed = new Promise<URL>((r) => { resolve = r })
    await page.route(`${REDIRECT}**`, async (route) => {
      resolve(new URL(route.request().url()))
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Done</title><p>You may close this window.</p>' })
    })
    return { landed }
  }

  test('a person signs in, reads who asks for what, approves, and the agent\'s token works', TEST, async () => {
    const flow = await startFlow('mcp:app:shop')
    const page = await signInToApprove(flow.url)
    const text = await page.locator('main').innerText()
    assert.match(text, /only the app shop/)
    assert.match(text, /mcp:app:shop/)
    assert.match(text, new RegExp(PERSON))
    const { landed } = await catchRedirect(page)
    await submitForm(page, 'Approve', { path: '/mcp/authorize', status: 303 })
    const back = await landed
    assert.equal(back.searchParams.get('state'), new URL(flow.url).searchParams.get('state'))
    const code = back.searchParams.get('code')
    assert.ok(code)
    await flow.transport.finishAuth(code)
    const listed = await flow.client.callTool({ name: 'list_apps', arguments: {} })
    assert.equal(listed.isError, undefined)
    assert.deepEqual((listed.structuredContent as { apps: Array<{ slug: string }> }).apps.map((a) => a.slug), ['shop'])
    assert.match(flow.provider.saved!.access_token, /^svc_mcp_/)
    // The browser holds its own session cookie only; nothing of the agent's token is in it.
    const cookies = await page.context().cookies()
    assert.ok(cookies.every((cookie) => !cookie.value.includes('svc_mcp_')))
    await flow.client.close()
  })

  test('Deny sends the browser back to the client with access_denied and no code', TEST, async () => {
    const flow = await startFlow()
    const page = await signInToApprove(flow.url)
    assert.match(await page.locator('main').innerText(), /your whole account/)
    const { landed } = await catchRedirect(page)
    await submitForm(page, 'Deny', { path: '/mcp/authorize', status: 303 })
    const back = await landed
    assert.equal(back.searchParams.get('error'), 'access_denied')
    assert.equal(back.searchParams.get('code'), null)
    await flow.client.close()
  })
})
