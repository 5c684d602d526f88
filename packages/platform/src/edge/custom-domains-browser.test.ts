/**
 * Sign-in on a custom domain in a real browser (Chromium). The central sign-in's pages allow
 * forms to end only on their own host and the platform's app origins (CSP form-action, which
 * browsers apply to the redirects after a submission too), so the redirect chain of a claim
 * or password post cannot end on a custom domain: /authorize answers a handoff page that
 * goes on by itself. This checks a person gets from the custom domain's page to sign-in and
 * back, with the app session cookie host-only on the custom domain.
 *
 * The platform runs under `apps.localhost` so that `shop.localhost`, outside the base domain,
 * can be a custom domain that Chromium resolves to loopback by itself.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { ownerApi } from '../../test/harness.ts'
import { deployPage } from '../../test/sign-in-flow.ts'
import { browserSuite, signInAt, startBrowserHarness, type BrowserHarness } from '../../test/browser.ts'
import { createPlatformAdmin } from '../../test/custom-domain-flow.ts'

const TEST = { timeout: 60_000 }

describe(`custom domain sign-in in a real browser (${backend})`, browserSuite(), () => {
  let b: BrowserHarness
  let shop: string

  before(async () => {
    b = await startBrowserHarness({ baseDomain: 'apps.localhost' })
    const admin = await createPlatformAdmin(b.h)
    const owner = await b.h.createOwner('owner@acme.test')
    await deployPage(b.h, owner.token, 'shop', 'private', 'shop page')
    assert.equal((await ownerApi(b.h, admin, 'PUT', '/v1/apps/shop/domains/shop.localhost')).status, 201)
    shop = b.h.platform.urls.custom('shop.localhost')
  })
  afterEach(() => b.closeContexts())
  after(() => b.close())

  test('a person opens a private app on its custom domain, signs in by email link, and lands back on the page', TEST, async () => {
    const context = await b.newContext()
    const page = await signInAt(b, context, `${shop}/cart`, 'owner@acme.test')
    assert.equal(await page.textContent('body'), 'shop page')
    const cookies = await context.cookies()
    const session = cookies.filter((cookie) => cookie.name === 'svc_app_session')
    assert.deepEqual(session.map((cookie) => cookie.domain), ['shop.localhost'], 'one app session, host-only on the custom domain')
  })
})
