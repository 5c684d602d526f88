/**
 * Real-browser tests: the harness platform served over HTTP on a free loopback port, and a
 * locally installed headless Chromium driven by playwright-core (a browser is never
 * downloaded; scripts/find-chromium.mjs finds it from CHROMIUM_PATH or PATH). Each
 * `newContext()` is a separate browser with its own cookie jar, so one test can play the
 * laptop that starts a sign-in and the phone that opens the emailed link. Chromium resolves
 * `*.localhost` to loopback by itself, so the auth host and every app origin work as they
 * do in production, without DNS or a proxy.
 */
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:net'
import type { Server as HttpServer } from 'node:http'
import { serve } from '@hono/node-server'
import { chromium, type APIResponse, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core'
import { latestDevMailTo } from '../src/email/index.ts'
import { startHarness, type Harness } from './harness.ts'
import { CHROMIUM_INSTALL_HINT, browserRequired, findChromium } from '../../../scripts/find-chromium.mjs'

/**
 * The `describe` options of every real-browser suite: where no Chromium is found the suite
 * is skipped, naming why and how to install one, unless the run requires a browser (CI, or
 * SERVICE_REQUIRE_BROWSER=1 as `.ci/run` sets), where `startBrowserHarness` fails instead.
 *
 * @example
 * describe('sign-in in a real browser', browserSuite(), () => { ... })
 */
export function browserSuite(): { skip: string | false } {
  const found = findChromium({ env: process.env })
  if (found.path !== null || browserRequired({ env: process.env })) return { skip: false }
  return { skip: `${found.reason}; ${CHROMIUM_INSTALL_HINT}` }
}

/** Bound of every wait on the browser: generous for a loaded CI machine, never endless. */
export const WAIT_MS = 15_000

const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

export interface BrowserHarness {
  /** The in-process platform, its base URL the served one. */
  h: Harness
  /** `http://localhost:<port>` */
  baseUrl: string
  /** `http://auth.localhost:<port>` */
  authUrl: string
  appUrl(slug: string): string
  /**
   * A new, separate browser (own cookies); closed by `closeContexts` or `close`. `options`
   * are Playwright's (a time zone, a viewport, a colour scheme).
   */
  newContext(options?: BrowserContextOptions): Promise<BrowserContext>
  /** Closes every context opened so far (call it after each test). */
  closeContexts(): Promise<void>
  /** Closes Chromium, the HTTP server and the harness database. */
  close(): Promise<void>
}

/**
 * Starts the platform on a real HTTP server and launches Chromium. `baseDomain` (default
 * `localhost`) puts the platform under another domain, which Chromium resolves to loopback:
 * under `localhost` every app origin is its own site, while under a domain such as
 * `apps.example.com` sibling apps are same-site, as they are in production (a domain under an
 * unknown TLD such as `.test` is not registrable, so it behaves like `localhost`).
 *
 * @example
 * const b = await startBrowserHarness()
 * const page = await (await b.newContext()).newPage()
 * await page.goto(`${b.authUrl}/sign-in`)
 * await b.close()
 */
export async function startBrowserHarness(options: { baseDomain?: string } = {}): Promise<BrowserHarness> {
  const found = findChromium({ env: process.env })
  if (found.path === null) {
    throw new Error(`the browser tests need Chromium: ${found.reason}; ${CHROMIUM_INSTALL_HINT} ` +
      '(.ci/run installs Debian\'s; browsers are never downloaded)')
  }
  const executablePath = found.path
  const port = await freePort()
  const baseDomain = options.baseDomain ?? 'localhost'
  const baseUrl = `http://${baseDomain}:${port}`
  const h = await startHarness(undefined, { baseUrl })
  const urls = h.platform.urls

  let server: HttpServer | undefined
  let browser: Browser | undefined
  try {
    // No custom createServer option, so serve() returns a node:http server.
    server = serve({ fetch: (request) => h.platform.fetch(request), port, hostname: '127.0.0.1' }) as HttpServer
    // Realtime sockets, as main.ts serves them (a test starts realtime itself: `h.platform.realtime.start()`).
    server.on('upgrade', h.platform.realtime.upgrade)
    await listening(server)
    const resolve = baseDomain === 'localhost' ? [] : [`--host-resolver-rules=MAP ${baseDomain} 127.0.0.1, MAP *.${baseDomain} 127.0.0.1`]
    browser = await chromium.launch({ executablePath, headless: true, args: [...CHROMIUM_ARGS, ...resolve], timeout: WAIT_MS })
  } catch (error) {
    await browser?.close()
    if (server) await stop(server)
    await h.close()
    throw error
  }

  const contexts = new Set<BrowserContext>()
  const closeContexts = async () => {
    const open = [...contexts]
    contexts.clear()
    await Promise.all(open.map((context) => context.close()))
  }
  const running = { browser, server }
  return {
    h,
    baseUrl,
    authUrl: urls.auth,
    appUrl: (slug) => urls.app(slug),
    async newContext(options) {
      const context = await running.browser.newContext(options)
      context.setDefaultTimeout(WAIT_MS)
      context.setDefaultNavigationTimeout(WAIT_MS)
      contexts.add(context)
      return context
    },
    closeContexts,
    async close() {
      await closeContexts()
      await running.browser.close()
      await stop(running.server)
      await h.close()
    },
  }
}

/**
 * Types an address into the sign-in page the browser is on and submits it; resolves on the
 * "Check your email" page with the sign-in request's id.
 */
export async function submitEmail(page: Page, email: string): Promise<string> {
  assert.equal(new URL(page.url()).pathname, '/sign-in', `expected the sign-in page, not ${page.url()}`)
  await page.getByLabel('Email address').fill(email)
  await submitForm(page, 'Continue', { path: '/sign-in', status: 303 })
  await page.waitForURL((url) => url.pathname === '/sign-in/wait')
  await page.getByRole('heading', { name: 'Check your email' }).waitFor()
  const id = new URL(page.url()).searchParams.get('r')
  assert.ok(id, 'the waiting page names its sign-in request')
  return id
}

/** The confirmation link of the newest email to `email` in the dev mailbox. */
export async function emailedLink(b: BrowserHarness, email: string): Promise<string> {
  const mail = await latestDevMailTo(b.h.t.db, email)
  assert.ok(mail, `no email to ${email}`)
  const link = new RegExp(`${escapeRegExp(b.authUrl)}/confirm\\?\\S+`).exec(mail.text)?.[0]
  assert.ok(link, `the email to ${email} has no confirmation link: ${mail.text}`)
  return link
}

/**
 * Opens an emailed link in a new page of `context` (the phone), presses Approve as a person
 * does and checks the confirmation; the page is closed afterwards.
 */
export async function approveIn(context: BrowserContext, link: string): Promise<void> {
  const page = await context.newPage()
  const review = await page.goto(link)
  assert.equal(review?.status(), 200)
  await page.getByRole('heading', { name: 'Approve this sign-in' }).waitFor()
  await submitForm(page, 'Approve', { path: '/confirm', status: 200 })
  await page.getByText('You may close this window').waitFor()
  await page.close()
}

/**
 * Signs a browser in the way a person does: opens `url` (a private app page) in a new page,
 * is sent to sign-in, submits `email`, approves the emailed link in a separate browser and
 * waits until the first page is back on `url`.
 */
export async function signInAt(b: BrowserHarness, context: BrowserContext, url: string, email: string): Promise<Page> {
  const page = await context.newPage()
  await page.goto(url)
  await submitEmail(page, email)
  await approveIn(await b.newContext(), await emailedLink(b, email))
  await page.waitForURL((current) => current.toString() === url)
  return page
}

/**
 * Presses a form's button and checks the status of the POST it sends, failing at once with
 * the text of the page the server answered (rather than timing out on a navigation).
 */
export async function submitForm(page: Page, button: string, expected: { path: string; status: number }): Promise<void> {
  const posted = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === expected.path)
  await page.getByRole('button', { name: button }).click()
  const response = await posted
  if (response.status() !== expected.status) {
    const html = await response.text()
    const text = (/<main>([\s\S]*)<\/main>/.exec(html)?.[1] ?? html).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()
    assert.fail(`POST ${expected.path} (Origin: ${await response.request().headerValue('origin')}) answered ` +
      `${response.status()}, not ${expected.status}: ${text}`)
  }
}

/**
 * A plain HTTP request, without a browser (what a mail scanner or link previewer sends),
 * from `context`'s request client. Node does not resolve `*.localhost` as Chromium does, so
 * it connects to the loopback address and names the host in the Host header; any cookies it
 * gets are kept under 127.0.0.1, apart from the context's pages.
 */
export function plainRequest(
  context: BrowserContext,
  url: string,
  options: { method?: 'GET' | 'POST'; form?: Record<string, string>; headers?: Record<string, string> } = {},
): Promise<APIResponse> {
  const target = new URL(url)
  const host = target.host
  target.hostname = '127.0.0.1'
  return context.request.fetch(target.toString(), {
    method: options.method ?? 'GET',
    headers: { ...options.headers, host },
    maxRedirects: 0,
    ...(options.form ? { form: options.form } : {}),
  })
}

/** A port that was free a moment ago (the platform's base URL must name it before it listens). */
async function freePort(): Promise<number> {
  const probe: Server = createServer()
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', resolve)
  })
  const address = probe.address()
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  if (!address || typeof address === 'string') throw new Error('could not pick a free port')
  return address.port
}

function listening(server: HttpServer): Promise<void> {
  if (server.listening) return Promise.resolve()
  return new Promise((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
}

/** Closes the server, dropping kept-alive browser connections that would hold it open. */
function stop(server: HttpServer): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
