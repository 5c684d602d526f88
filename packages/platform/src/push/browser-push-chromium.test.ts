/**
 * The browser SDK's `service.notifications` in a real browser (Chromium). What it covers:
 * - `subscribe()` for a signed-in person: notification permission, the platform's service
 *   worker registered from the app origin (/_service/push/sw.js, scope /_service/push/) and
 *   activated, and Chromium's real `PushManager.subscribe` with the platform's VAPID key.
 *   Chromium's push service is Firebase Cloud Messaging, which a machine without network
 *   cannot reach: there Chromium's subscribe never answers (it keeps retrying the
 *   registration), and the SDK must end the wait with a ServiceError PUSH_SUBSCRIBE_FAILED
 *   (TimeoutError) carrying the browser's side, storing nothing. Where the network is there
 *   and the subscription succeeds, the test accepts that too and checks it was stored for
 *   the person. This runs in a persistent profile: in an off-the-record context (every
 *   `newContext()`) Chromium refuses push at once ("Registration failed - permission
 *   denied"), which the SDK reports the same way.
 * - The rest of subscribe with `PushManager.prototype.subscribe` replaced by one returning a
 *   subscription as Chromium makes it (an https endpoint, real P-256 keys): the SDK posts it
 *   and the platform stores it for the signed-in person; `unsubscribe()` removes it.
 * - The service worker showing a push: a message delivered to it through the DevTools
 *   protocol (ServiceWorker.deliverPushMessage, what Chromium's push service would hand it)
 *   becomes a visible notification with the title, body, tag and same-origin URL sent.
 * - A signed-out browser gets AUTH_REQUIRED and a browser whose person refused
 *   notifications PUSH_PERMISSION_DENIED, before any subscription is made.
 * The click (opening `url`) needs a person's gesture Chromium cannot fake; push-sw.test.ts
 * runs the worker's click handler against recorded Clients.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { findChromium } from '../../../../scripts/find-chromium.mjs'
import { backend } from '../../test/test-db.ts'
import { approveIn, browserSuite, emailedLink, startBrowserHarness, submitEmail, WAIT_MS, type BrowserHarness } from '../../test/browser.ts'
import { pushBundle } from './test-app.ts'

const TEST = { timeout: 90_000 }

const outcome = (expression: string) => `(async () => {
  try { return { value: await ${expression} } } catch (error) { return { error: { isServiceError: error instanceof service.ServiceError, code: error.code, message: error.message, details: error.details } } }
})()`

async function signedIn(b: BrowserHarness, context: BrowserContext, email: string): Promise<Page> {
  const page = await context.newPage()
  await page.goto(`${b.appUrl('pushbox')}/`)
  await page.evaluate(`location.href = service.auth.signInUrl()`)
  await page.waitForURL((url) => url.origin === b.authUrl && url.pathname === '/sign-in')
  await submitEmail(page, email)
  await approveIn(await b.newContext(), await emailedLink(b, email))
  await page.waitForURL((url) => url.toString() === `${b.appUrl('pushbox')}/`)
  return page
}

describe(`service.notifications in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness

  before(async () => {
    b = await startBrowserHarness()
    const owner = await b.h.createOwner('owner@pushbox.test')
    assert.equal((await b.h.request('/v1/apps', { token: owner.token, json: { slug: 'pushbox', visibility: 'public' } })).status, 201)
    const res = await b.h.request('/v1/apps/pushbox/deployments', { token: owner.token, json: pushBundle('pushbox') })
    assert.equal(res.status, 201, await res.text())
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  async function permitted(): Promise<BrowserContext> {
    const context = await b.newContext()
    await context.grantPermissions(['notifications'], { origin: b.appUrl('pushbox') })
    return context
  }

  const stored = async (email: string) => b.h.t.db.query<{ endpoint: string }>(
    `select s.endpoint from platform.push_subscriptions s join platform.users u on u.id = s.user_id where u.email = $1`, [email])

  test('subscribe registers the platform\'s service worker and reaches Chromium\'s PushManager; without its push service it fails PUSH_SUBSCRIBE_FAILED', TEST, async (t) => {
    // A persistent profile: Chromium refuses push in an off-the-record context (every newContext) outright.
    const profile = mkdtempSync(join(tmpdir(), 'service-push-profile-'))
    const persistent = await chromium.launchPersistentContext(profile, {
      executablePath: findChromium({ env: process.env }).path!, headless: true, timeout: WAIT_MS,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-component-update', '--disable-sync'],
    })
    t.after(async () => {
      await persistent.close()
      rmSync(profile, { recursive: true, force: true })
    })
    await persistent.grantPermissions(['notifications'], { origin: b.appUrl('pushbox') })
    const page = await signedIn(b, persistent, 'ann@pushbox.test')
    const result = await page.evaluate(outcome('service.notifications.subscribe({ timeoutMs: 10000 })')) as any
    const registration = await page.evaluate(`navigator.serviceWorker.getRegistration('/_service/push/').then((r) => r && ({
      scope: r.scope, script: r.active && r.active.scriptURL, state: r.active && r.active.state }))`) as any
    assert.deepEqual(registration, {
      scope: `${b.appUrl('pushbox')}/_service/push/`, script: `${b.appUrl('pushbox')}/_service/push/sw.js`, state: 'activated',
    })
    t.diagnostic(`PushManager.subscribe: ${JSON.stringify(result)}`)
    if (result.error) {
      // No route to Firebase Cloud Messaging from here: the browser's refusal, as a ServiceError.
      assert.equal(result.error.isServiceError, true)
      assert.equal(result.error.code, 'PUSH_SUBSCRIBE_FAILED', JSON.stringify(result.error))
      assert.match(result.error.message, /push service/)
      assert.ok(result.error.details.name, 'the browser error\'s name is kept')
      assert.equal((await stored('ann@pushbox.test')).length, 0)
    } else {
      assert.match(result.value.id, /^[0-9a-f-]{36}$/)
      assert.equal((await stored('ann@pushbox.test')).length, 1)
    }
  })

  test('the SDK stores the subscription the browser makes for the signed-in person, and unsubscribe removes it', TEST, async () => {
    const page = await signedIn(b, await permitted(), 'bob@pushbox.test')
    // A subscription as Chromium makes one (an https FCM endpoint, a real P-256 key, a 16-byte secret), in place of FCM's.
    await page.evaluate(`(async () => {
      const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits'])
      const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))
      const b64 = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '')
      const fake = {
        endpoint: 'https://fcm.googleapis.com/fcm/send/chromium-test:APA91b' + Math.random().toString(36).slice(2),
        options: null,
        toJSON() { return { endpoint: this.endpoint, expirationTime: null, keys: { p256dh: b64(raw), auth: b64(crypto.getRandomValues(new Uint8Array(16))) } } },
        unsubscribe: async () => { window.unsubscribedFake = true; return true },
      }
      window.fakeSubscription = fake
      PushManager.prototype.subscribe = async function (options) {
        window.subscribeOptions = { userVisibleOnly: options.userVisibleOnly, keyLength: new Uint8Array(options.applicationServerKey).length }
        return fake
      }
    })()`)
    const result = await page.evaluate(outcome('service.notifications.subscribe()')) as any
    assert.match(result.value?.id ?? '', /^[0-9a-f-]{36}$/, JSON.stringify(result))
    assert.deepEqual(await page.evaluate('window.subscribeOptions'), { userVisibleOnly: true, keyLength: 65 })
    const endpoint = await page.evaluate('window.fakeSubscription.endpoint') as string
    assert.deepEqual((await stored('bob@pushbox.test')).map((row) => row.endpoint), [endpoint])
    await page.evaluate(`PushManager.prototype.getSubscription = async () => window.fakeSubscription`)
    assert.deepEqual(await page.evaluate(outcome('service.notifications.unsubscribe()')), { value: true })
    assert.equal(await page.evaluate('window.unsubscribedFake'), true)
    assert.equal((await stored('bob@pushbox.test')).length, 0)
  })

  test('a push handed to the service worker is shown as a notification with the title, body, tag and same-origin url sent', TEST, async () => {
    const page = await signedIn(b, await permitted(), 'carl@pushbox.test')
    await page.evaluate(outcome('service.notifications.subscribe()'))
    const cdp = await page.context().newCDPSession(page)
    const registrations: { registrationId: string; scopeURL: string }[] = []
    cdp.on('ServiceWorker.workerRegistrationUpdated', (event: { registrations: { registrationId: string; scopeURL: string }[] }) => {
      registrations.push(...event.registrations)
    })
    await cdp.send('ServiceWorker.enable')
    const scope = `${b.appUrl('pushbox')}/_service/push/`
    for (let waited = 0; !registrations.some((r) => r.scopeURL === scope) && waited < 5000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50))
    const registration = registrations.find((r) => r.scopeURL === scope)
    assert.ok(registration, 'the push service worker is registered')
    const message = { id: 'n-1', title: 'Order shipped', body: 'Your tea is on its way', url: '/orders/42?tab=1', tag: 'order-42' }
    await cdp.send('ServiceWorker.deliverPushMessage', { origin: b.appUrl('pushbox'), registrationId: registration.registrationId, data: JSON.stringify(message) })
    const shown = await page.evaluate(`(async () => {
      const registration = await navigator.serviceWorker.getRegistration('/_service/push/')
      for (let i = 0; i < 100; i += 1) {
        const list = await registration.getNotifications()
        if (list.length > 0) return list.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data }))
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      return []
    })()`)
    assert.deepEqual(shown, [{
      title: 'Order shipped', body: 'Your tea is on its way', tag: 'order-42', data: { id: 'n-1', url: `${b.appUrl('pushbox')}/orders/42?tab=1` },
    }])
  })

  test('signed out, subscribe fails AUTH_REQUIRED; with notifications refused, PUSH_PERMISSION_DENIED; neither subscribes', TEST, async () => {
    const anonymous = await (await permitted()).newPage()
    await anonymous.goto(`${b.appUrl('pushbox')}/`)
    const signedOut = await anonymous.evaluate(outcome('service.notifications.subscribe()')) as any
    assert.equal(signedOut.error.code, 'AUTH_REQUIRED')
    assert.equal(await anonymous.evaluate(`navigator.serviceWorker.getRegistration('/_service/push/').then((r) => r === undefined)`), true)
    const context = await b.newContext()
    const page = await signedIn(b, context, 'dana@pushbox.test')
    await page.evaluate(`Notification.requestPermission = async () => 'denied'`)
    const refused = await page.evaluate(outcome('service.notifications.subscribe()')) as any
    assert.equal(refused.error.code, 'PUSH_PERMISSION_DENIED')
    assert.equal((await stored('dana@pushbox.test')).length, 0)
  })
})
