/**
 * The browser SDK's own tests in a real browser (Chromium): an app page loads
 * `/_service/sdk.js` and uses the `service` global as an app does. `functions.call` runs a
 * `public` Function and answers a `user` one AUTH_REQUIRED while signed out; a `system`
 * Function, through `call` or `stream`, is refused by the SDK itself with FUNCTION_NOT_FOUND
 * and no request leaves the page (spec 4.2); `auth.currentUser()` is null signed out and the
 * person signed in; `auth.signInUrl()` is the app's sign-in; every error is a ServiceError
 * with a code. Serving and caching of sdk.js are tested over HTTP in browser-sdk.test.ts.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest } from '../../test/harness.ts'
import { approveIn, browserSuite, emailedLink, startBrowserHarness, submitEmail, type BrowserHarness } from '../../test/browser.ts'

const OWNER = 'owner@acme.test'
const TEST = { timeout: 60_000 }

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Desk</title>
<script src="/_service/sdk.js"></script></head><body><h1>desk page</h1></body></html>`

const FUNCTIONS = `functions:
  - name: hello
    entrypoint: functions/hello.ts
    access: public
  - name: mine
    entrypoint: functions/mine.ts
    access: user
  - name: nightlyCleanup
    entrypoint: functions/nightly-cleanup.ts
    access: system
`

const FILES = {
  'functions/hello.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({
      input: object({ name: string() }),
      handler: ({ input, user }) => ({ greeting: 'hello ' + input.name, signedIn: user !== null }),
    })`,
  'functions/mine.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: ({ user }) => ({ id: user.id }) })`,
  'functions/nightly-cleanup.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: () => ({ cleaned: true }) })`,
}

/**
 * Runs the SDK's calls in the page (plain JavaScript source: the test runner's transform
 * would add helpers the page does not have). Each error is reported as what a page can see
 * of it: whether it is a ServiceError, its name, code and message.
 */
const CALLS = `(async () => {
  const outcome = (promise) => promise.then(
    (value) => ({ value }),
    (error) => ({ error: { isServiceError: error instanceof service.ServiceError, name: error.name, code: error.code, message: error.message } }))
  return {
    user: await service.auth.currentUser(),
    signInUrl: service.auth.signInUrl(),
    hello: await outcome(service.functions.call('hello', { name: 'Ada' })),
    mine: await outcome(service.functions.call('mine', {})),
    systemCall: await outcome(service.functions.call('nightlyCleanup', {})),
    systemStream: await outcome(service.functions.stream('nightlyCleanup', {})),
    unknown: await outcome(service.functions.call('noSuchFunction', {})),
  }
})()`

/** The refusal the SDK gives for `name` (a system Function's or an unknown one). */
function refused(name: string) {
  return {
    error: {
      isServiceError: true,
      name: 'ServiceError',
      code: 'FUNCTION_NOT_FOUND',
      message: `This app has no Function named ${name} that a browser may call (system Functions run only on the platform)`,
    },
  }
}

/** The paths of the Function calls the page sends, from now on. */
function functionRequests(page: Page): string[] {
  const paths: string[] = []
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname
    if (path.startsWith('/_service/functions/')) paths.push(path)
  })
  return paths
}

describe(`the browser SDK in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness
  let owner: { token: string; userId: string }

  before(async () => {
    b = await startBrowserHarness()
    owner = await b.h.createOwner(OWNER)
    assert.equal((await b.h.request('/v1/apps', { token: owner.token, json: { slug: 'desk', visibility: 'public' } })).status, 201)
    const res = await b.h.request('/v1/apps/desk/deployments', {
      token: owner.token,
      json: bundle({ 'service.yaml': manifest('desk', FUNCTIONS), 'public/index.html': PAGE, ...FILES }),
    })
    assert.equal(res.status, 201, await res.text())
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  test('signed out: a public Function answers, a user Function is AUTH_REQUIRED, a system Function is refused without a request', TEST, async () => {
    const page = await (await b.newContext()).newPage()
    await page.goto(`${b.appUrl('desk')}/`)
    const sent = functionRequests(page)
    const outcome = await page.evaluate(CALLS) as any

    assert.equal(outcome.user, null)
    assert.equal(outcome.signInUrl, `${b.appUrl('desk')}/_service/auth/sign-in`)
    assert.deepEqual(outcome.hello, { value: { greeting: 'hello Ada', signedIn: false } })
    assert.deepEqual(outcome.mine, { error: { isServiceError: true, name: 'ServiceError', code: 'AUTH_REQUIRED', message: 'Sign in to call mine' } })
    assert.deepEqual(outcome.systemCall, refused('nightlyCleanup'))
    assert.deepEqual(outcome.systemStream, refused('nightlyCleanup'))
    assert.deepEqual(outcome.unknown, refused('noSuchFunction'), 'an unknown name gets the same answer, as from the platform')
    assert.deepEqual(sent, ['/_service/functions/hello', '/_service/functions/mine'], 'no request for the system Function or the unknown name')
  })

  test('signed in through auth.signInUrl(): currentUser is the person, a user Function runs as them, a system Function is still refused without a request', TEST, async () => {
    const page = await (await b.newContext()).newPage()
    await page.goto(`${b.appUrl('desk')}/`)
    await page.evaluate(`location.href = service.auth.signInUrl()`)
    await page.waitForURL((url) => url.origin === b.authUrl && url.pathname === '/sign-in')
    await submitEmail(page, OWNER)
    await approveIn(await b.newContext(), await emailedLink(b, OWNER))
    await page.waitForURL((url) => url.toString() === `${b.appUrl('desk')}/`)

    const sent = functionRequests(page)
    const outcome = await page.evaluate(CALLS) as any
    assert.deepEqual(outcome.user, { id: owner.userId, email: OWNER })
    assert.deepEqual(outcome.hello, { value: { greeting: 'hello Ada', signedIn: true } })
    assert.deepEqual(outcome.mine, { value: { id: owner.userId } })
    assert.deepEqual(outcome.systemCall, refused('nightlyCleanup'))
    assert.deepEqual(outcome.systemStream, refused('nightlyCleanup'))
    assert.deepEqual(sent, ['/_service/functions/hello', '/_service/functions/mine'])
  })
})
