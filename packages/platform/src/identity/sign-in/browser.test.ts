/**
 * The email-link sign-in and the app edge in a real browser (Chromium): the waiting page
 * that polls and continues by itself, the review page's preview cookie, SameSite and
 * HttpOnly cookies across `auth.localhost` and the app origins, and the `service` SDK
 * global. Attacks and clock-driven cases are tested over HTTP in sign-in.test.ts.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import type { BrowserContext, Page, Response as NavigationResponse } from 'playwright-core'
import { backend } from '../../../test/test-db.ts'
import { deployPage } from '../../../test/sign-in-flow.ts'
import { approveIn, browserSuite, emailedLink, plainRequest, signInAt, startBrowserHarness, submitEmail, submitForm, type BrowserHarness } from '../../../test/browser.ts'
import { COOKIES } from '../pages/cookies.ts'

/** The `service` global the SDK defines in app pages (used only inside `page.evaluate`). */
declare const service: {
  auth: {
    currentUser(): Promise<{ id: string; email: string; displayName?: string } | null>
    signInUrl(): string
    signOut(): Promise<void>
  }
  ServiceError: unknown
}

// The owner starts 8 sign-ins here; the limit is 10 per address per 15 minutes of the test
// clock, which these tests never advance.
const OWNER = 'owner@acme.test'
const GUEST = 'guest@elsewhere.test'
/** Bound of a whole test: a sign-in takes a few seconds of real polling. */
const TEST = { timeout: 60_000 }
/** Long enough for the waiting page to poll (every 1.5 s) at least twice. */
const STILL_WAITING_MS = 4_000

const PRIVATE_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Vault</title>
<script src="/_service/sdk.js"></script></head><body><h1>vault page</h1></body></html>`

const PUBLIC_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Open</title>
<script src="/_service/sdk.js"></script></head><body><h1>open page</h1><p id="who">loading</p>
<script type="module">document.getElementById('who').textContent = JSON.stringify(await service.auth.currentUser())</script>
</body></html>`

describe(`sign-in in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness
  let owner: { token: string; userId: string }

  before(async () => {
    b = await startBrowserHarness()
    owner = await b.h.createOwner(OWNER)
    await deployPage(b.h, owner.token, 'vault', 'private', PRIVATE_PAGE)
    await deployPage(b.h, owner.token, 'open', 'public', PUBLIC_PAGE)
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  /** Whether the page shows the central sign-in form. */
  const onSignInPage = (page: Page) => {
    const url = new URL(page.url())
    return url.origin === b.authUrl && url.pathname === '/sign-in'
  }

  /** The names of the session cookies a browser holds (central and app). */
  const sessionCookies = async (context: BrowserContext) =>
    (await context.cookies()).map((c) => c.name).filter((name) => name === COOKIES.session.name || name === COOKIES.appSession.name)

  /** Fails unless the page stays where it is for `ms` (the waiting page must not continue). */
  const staysOn = async (page: Page, ms: number) => {
    const at = page.url()
    await assert.rejects(page.waitForURL((url) => url.toString() !== at, { timeout: ms }), /Timeout/)
  }

  /** What the waiting page's own poll sees, asked from that page (with its claim cookie). */
  const claimStatus = (page: Page, id: string) =>
    page.evaluate((r) => fetch(`/sign-in/claim/status?r=${encodeURIComponent(r)}`).then((res) => res.json()), id)

  /** The URLs a navigation went through, first to last. */
  const hops = (response: NavigationResponse | null) => {
    const urls: string[] = []
    for (let request = response?.request() ?? null; request; request = request.redirectedFrom()) urls.unshift(request.url())
    return urls
  }

  test('a link approved in a second browser signs in the first, which continues to the app by itself; the approver gets no session', TEST, async () => {
    const laptop = await b.newContext()
    const phone = await b.newContext()
    const target = `${b.appUrl('vault')}/reports?x=1`

    const a = await laptop.newPage()
    await a.goto(target)
    assert.ok(onSignInPage(a), `expected the sign-in page, got ${a.url()}`)
    await submitEmail(a, OWNER)
    await a.getByText('We sent you a sign-in link').waitFor()

    const review = await phone.newPage()
    assert.equal((await review.goto(await emailedLink(b, OWNER)))?.status(), 200)
    await review.getByRole('heading', { name: 'Approve this sign-in' }).waitFor()
    await submitForm(review, 'Approve', { path: '/confirm', status: 200 })
    await review.getByText('You may close this window').waitFor()

    await a.waitForURL((url) => url.toString() === target)
    assert.equal(await a.locator('h1').textContent(), 'vault page')

    await review.goto(target)
    assert.ok(onSignInPage(review), `the phone should be sent to sign-in, got ${review.url()}`)
    assert.deepEqual(await sessionCookies(phone), [])
  })

  test('another browser that opens the waiting URL cannot claim the approved request; the browser that asked still can', TEST, async () => {
    const laptop = await b.newContext()
    const other = await b.newContext()
    const target = `${b.appUrl('vault')}/claimed`

    const a = await laptop.newPage()
    await a.goto(target)
    await submitEmail(a, OWNER)
    const waitUrl = a.url()
    // The laptop's window is closed while the link is approved, so nobody has claimed the
    // request when the other browser tries (an open window would claim within 1.5 s).
    await a.close()
    await approveIn(await b.newContext(), await emailedLink(b, OWNER))

    const c = await other.newPage()
    await c.goto(waitUrl)
    await c.getByText('This sign-in request has expired. Start again.').waitFor()
    await submitForm(c, 'I approved, continue', { path: '/sign-in/claim', status: 409 })
    await c.getByRole('heading', { name: 'Not approved yet' }).waitFor()
    assert.deepEqual(await sessionCookies(other), [])
    await c.goto(target)
    assert.ok(onSignInPage(c), `the other browser should still be signed out, got ${c.url()}`)

    const again = await laptop.newPage()
    await again.goto(waitUrl)
    await again.waitForURL((url) => url.toString() === target)
    assert.equal(await again.locator('h1').textContent(), 'vault page')
  })

  test('a prefetched or merely opened link approves nothing: the waiting window waits until a person presses Approve', TEST, async () => {
    const laptop = await b.newContext()
    const target = `${b.appUrl('vault')}/prefetched`
    const a = await laptop.newPage()
    await a.goto(target)
    const id = await submitEmail(a, OWNER)
    const link = await emailedLink(b, OWNER)

    const scanner = await b.newContext()
    const fetched = await plainRequest(scanner, link)
    assert.equal(fetched.status(), 200)
    assert.match(await fetched.text(), /Approve this sign-in/)
    const preview = await scanner.newPage() // a link preview renders the page and clicks nothing
    await preview.goto(link)
    await preview.getByRole('button', { name: 'Approve' }).waitFor()

    await staysOn(a, STILL_WAITING_MS)
    assert.equal(await a.locator('#state').textContent(), 'Waiting for your approval…')
    assert.deepEqual(await claimStatus(a, id), { status: 'pending' })

    await approveIn(await b.newContext(), link)
    await a.waitForURL((url) => url.toString() === target)
  })

  test('a scanner that posts the confirmation form without the review page’s preview cookie gets 403 and approves nothing', TEST, async () => {
    const laptop = await b.newContext()
    const target = `${b.appUrl('vault')}/scanned`
    const a = await laptop.newPage()
    await a.goto(target)
    const id = await submitEmail(a, OWNER)
    const link = await emailedLink(b, OWNER)
    const r = new URL(link).searchParams.get('r') ?? ''
    const t = new URL(link).searchParams.get('t') ?? ''

    // The scanner fetches the review page with one client and submits its form from another.
    assert.equal((await plainRequest(await b.newContext(), link)).status(), 200)
    const submitter = await b.newContext()
    // The auth origin is sent so that the refusal can only come from the missing preview cookie.
    const posted = await plainRequest(submitter, `${b.authUrl}/confirm`, { method: 'POST', form: { r, t }, headers: { origin: b.authUrl } })
    assert.equal(posted.status(), 403)
    assert.match(await posted.text(), /Open the link in your browser/)

    await staysOn(a, STILL_WAITING_MS)
    assert.deepEqual(await claimStatus(a, id), { status: 'pending' })

    await approveIn(await b.newContext(), link)
    await a.waitForURL((url) => url.toString() === target)
  })

  test('an unauthenticated visit to a private app goes to sign-in and returns to exactly the original path and query', TEST, async () => {
    const browser = await b.newContext()
    const app = b.appUrl('vault')
    const target = `${app}/reports/q3?x=1&tab=open%20items`

    const a = await browser.newPage()
    const first = await a.goto(target)
    assert.deepEqual(hops(first).map((u) => new URL(u).origin + new URL(u).pathname),
      [`${app}/reports/q3`, `${b.authUrl}/authorize`, `${b.authUrl}/sign-in`])
    await submitEmail(a, OWNER)

    const landed = a.waitForResponse((r) => r.url() === target && r.request().isNavigationRequest())
    await approveIn(await b.newContext(), await emailedLink(b, OWNER))
    const response = await landed
    assert.equal(response.status(), 200)
    assert.deepEqual(hops(response).map((u) => new URL(u).origin + new URL(u).pathname),
      [`${b.authUrl}/sign-in/claim`, `${b.authUrl}/authorize`, `${app}/_service/auth/callback`, `${app}/reports/q3`])
    await a.waitForURL((url) => url.toString() === target)
    assert.equal(await a.locator('h1').textContent(), 'vault page')
  })

  test('an account without a grant signs in and gets the No access page with HTTP 403', TEST, async () => {
    const browser = await b.newContext()
    const target = `${b.appUrl('vault')}/`
    const a = await browser.newPage()
    await a.goto(target)
    await submitEmail(a, GUEST)

    const landed = a.waitForResponse((r) => r.url() === target && r.request().isNavigationRequest())
    await approveIn(await b.newContext(), await emailedLink(b, GUEST))
    assert.equal((await landed).status(), 403)
    await a.getByRole('heading', { name: 'No access' }).waitFor()
    assert.match((await a.locator('main').textContent()) ?? '', /signed in as guest@elsewhere\.test/)
    assert.doesNotMatch(await a.content(), /vault page/)
    assert.equal((await a.reload())?.status(), 403)
  })

  test('signing out in one browser leaves another browser signed in', TEST, async () => {
    const laptop = await b.newContext()
    const phone = await b.newContext()
    const target = `${b.appUrl('vault')}/`
    const a = await signInAt(b, laptop, target, OWNER)
    const p = await signInAt(b, phone, target, OWNER)

    await a.evaluate(() => service.auth.signOut())
    await a.reload()
    // Back on sign-in (not bounced to the app by /authorize): the central session ended too.
    assert.ok(onSignInPage(a), `the signed-out browser should be sent to sign-in, got ${a.url()}`)
    assert.deepEqual((await laptop.cookies(target)).map((c) => c.name).filter((name) => name === COOKIES.appSession.name), [])

    const still = await p.reload()
    assert.equal(still?.status(), 200)
    assert.equal(p.url(), target)
    assert.equal(await p.locator('h1').textContent(), 'vault page')
  })

  test('the SDK reports no user, then the signed-in user after signInUrl, and never exposes the session cookie', TEST, async () => {
    const browser = await b.newContext()
    const start = `${b.appUrl('open')}/welcome?from=sdk`
    const a = await browser.newPage()
    await a.goto(start)
    await a.locator('#who').filter({ hasText: 'null' }).waitFor()
    assert.equal(await a.evaluate(() => service.auth.currentUser()), null)
    assert.equal(await a.evaluate(() => typeof service.ServiceError), 'function')

    await a.evaluate(() => {
      location.href = service.auth.signInUrl()
    })
    await a.waitForURL((url) => url.origin === b.authUrl && url.pathname === '/sign-in')
    await submitEmail(a, OWNER)
    await approveIn(await b.newContext(), await emailedLink(b, OWNER))
    await a.waitForURL((url) => url.toString() === start)

    assert.deepEqual(await a.evaluate(() => service.auth.currentUser()), { id: owner.userId, email: OWNER })
    await a.locator('#who').filter({ hasText: OWNER }).waitFor()
    assert.doesNotMatch(await a.evaluate(() => document.cookie), new RegExp(COOKIES.appSession.name))
    const appCookie = (await browser.cookies(b.appUrl('open'))).find((c) => c.name === COOKIES.appSession.name)
    assert.equal(appCookie?.httpOnly, true, 'the session cookie is there, HttpOnly')
  })

  test('password registration in the browser: an unknown address registers, returns to the app signed in, and confirms by email', TEST, async () => {
    const browser = await b.newContext()
    const page = await browser.newPage()
    await page.goto(`${b.appUrl('open')}/_service/auth/sign-in`)
    await page.waitForURL((url) => onSignInPage(page))
    await page.fill('#email', 'newbie@fresh.test')
    await page.click('summary') // reveals the password field
    await page.fill('#password', 'a fine password')
    await page.click('button')
    await page.getByRole('heading', { name: 'Check your email' }).waitFor()
    await Promise.all([page.waitForURL((url) => url.origin === b.appUrl('open')), page.getByRole('link', { name: 'Continue' }).click()])
    await page.locator('#who').filter({ hasText: 'newbie@fresh.test' }).waitFor()

    const prefs = await browser.newPage()
    await prefs.goto(`${b.authUrl}/preferences`)
    await prefs.getByText('not confirmed yet').waitFor()
    // The link opened in the same browser: the registrant's own, so the session stays.
    const mailbox = await browser.newPage()
    await mailbox.goto(await emailedLink(b, 'newbie@fresh.test'))
    await mailbox.getByRole('heading', { name: 'Confirm your email address' }).waitFor()
    await submitForm(mailbox, 'Approve', { path: '/confirm', status: 200 })
    await mailbox.getByText('Email confirmed').waitFor()
    await prefs.reload()
    await prefs.getByText('Signed in as').waitFor()
    assert.equal(await prefs.getByText('not confirmed yet').count(), 0)
  })

  test('password sign-in in the browser: set a password in Preferences, sign out, sign in with it', TEST, async () => {
    const browser = await b.newContext()
    const page = await browser.newPage()
    await page.goto(`${b.appUrl('open')}/_service/auth/sign-in`)
    await submitEmail(page, GUEST)
    await approveIn(await b.newContext(), await emailedLink(b, GUEST))
    await page.waitForURL((url) => url.origin === b.appUrl('open'))
    await page.goto(`${b.authUrl}/preferences`)
    await page.fill('#password', 'guest password 1')
    await page.fill('#repeat', 'guest password 1')
    await submitForm(page, 'Save password', { path: '/preferences/password', status: 200 })
    await page.goto(`${b.authUrl}/`)
    await submitForm(page, 'Sign out', { path: '/sign-out', status: 200 })

    const again = await b.newContext()
    const fresh = await again.newPage()
    await fresh.goto(`${b.appUrl('open')}/_service/auth/sign-in`)
    await fresh.waitForURL(() => onSignInPage(fresh))
    await fresh.fill('#email', GUEST)
    await fresh.click('summary')
    await fresh.fill('#password', 'guest password 1')
    await Promise.all([fresh.waitForURL((url) => url.origin === b.appUrl('open')), fresh.click('button')])
    await fresh.locator('#who').filter({ hasText: GUEST }).waitFor()
    assert.deepEqual((await sessionCookies(again)).sort(), [COOKIES.appSession.name, COOKIES.session.name].sort())
  })
})
