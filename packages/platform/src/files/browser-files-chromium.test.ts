/**
 * The browser SDK's `service.files` in a real browser (Chromium): a signed-in person uploads
 * a File, reads it back and its info, and a Function of the app reads it as that person
 * (`ctx.files`, the same files); another person and a signed-out browser find nothing, a
 * signed-out upload is AUTH_REQUIRED, and navigating to a file's address does not render it.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import type { Page } from 'playwright-core'
import { approveIn, browserSuite, emailedLink, startBrowserHarness, submitEmail, type BrowserHarness } from '../../test/browser.ts'
import { filesBundle } from './test-app.ts'
import { bundle } from '../../test/harness.ts'

const TEST = { timeout: 90_000 }
const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Box</title>
<script src="/_service/sdk.js"></script></head><body><h1>box page</h1></body></html>`

/** Runs in the page: uploads 300 KiB as a File, downloads it, reads its info, asks a Function to read it. */
const UPLOAD = `(async () => {
  const bytes = new Uint8Array(300 * 1024)
  for (let i = 0; i < bytes.length; i += 1) bytes[i] = (i * 31 + 7) & 0xff
  const ref = await service.files.upload({ data: new File([bytes], 'scan.bin', { type: 'application/pdf' }) })
  const down = await service.files.download(ref)
  let same = down.data.length === bytes.length
  for (let i = 0; same && i < bytes.length; i += 1) same = down.data[i] === bytes[i]
  const info = await service.files.info(ref)
  const viaFunction = await service.functions.call('op', { op: 'download', ref })
  const html = await service.files.upload({ data: '<script>document.title = "owned"</script>', name: 'x.html', contentType: 'text/html' })
  return { ref, html, same, name: down.name, contentType: down.contentType, size: down.size, info, viaFunction }
})()`

const outcome = (expression: string) => `(async () => {
  try { return { value: await ${expression} } } catch (error) { return { error: { isServiceError: error instanceof service.ServiceError, code: error.code } } }
})()`

/** A new browser signed in to the public app `box` through service.auth.signInUrl(). */
async function signedIn(b: BrowserHarness, email: string): Promise<Page> {
  const page = await (await b.newContext()).newPage()
  await page.goto(`${b.appUrl('box')}/`)
  await page.evaluate(`location.href = service.auth.signInUrl()`)
  await page.waitForURL((url) => url.origin === b.authUrl && url.pathname === '/sign-in')
  await submitEmail(page, email)
  await approveIn(await b.newContext(), await emailedLink(b, email))
  await page.waitForURL((url) => url.toString() === `${b.appUrl('box')}/`)
  return page
}

describe(`service.files in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness

  before(async () => {
    b = await startBrowserHarness()
    const owner = await b.h.createOwner('owner@box.test')
    assert.equal((await b.h.request('/v1/apps', { token: owner.token, json: { slug: 'box', visibility: 'public' } })).status, 201)
    const files = filesBundle('box').files.concat(bundle({ 'public/index.html': PAGE }).files)
    const res = await b.h.request('/v1/apps/box/deployments', { token: owner.token, json: { files } })
    assert.equal(res.status, 201, await res.text())
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  test("a person's uploads are theirs in the browser and in the app's Functions; others and signed-out browsers find nothing", TEST, async () => {
    const ann = await signedIn(b, 'ann@box.test')
    const mine = await ann.evaluate(UPLOAD) as any
    assert.equal(mine.same, true, 'the bytes come back as they went')
    assert.equal(mine.name, 'scan.bin')
    assert.equal(mine.contentType, 'application/pdf')
    assert.equal(mine.size, 300 * 1024)
    assert.equal(mine.info.ref, mine.ref)
    assert.equal(mine.info.generation, 1)
    assert.equal(mine.viaFunction.size, 300 * 1024, "the app's Function reads the person's file as the person")
    assert.equal(mine.viaFunction.name, 'scan.bin')

    const bob = await signedIn(b, 'bob@box.test')
    assert.deepEqual(await bob.evaluate(outcome(`service.files.download(${JSON.stringify(mine.ref)})`)), { error: { isServiceError: true, code: 'FILE_NOT_FOUND' } })
    assert.deepEqual(await bob.evaluate(outcome(`service.files.info(${JSON.stringify(mine.info.id)})`)), { error: { isServiceError: true, code: 'FILE_NOT_FOUND' } })

    const anonymous = await (await b.newContext()).newPage()
    await anonymous.goto(`${b.appUrl('box')}/`)
    assert.deepEqual(await anonymous.evaluate(outcome(`service.files.download(${JSON.stringify(mine.ref)})`)), { error: { isServiceError: true, code: 'FILE_NOT_FOUND' } })
    assert.deepEqual(await anonymous.evaluate(outcome(`service.files.upload({ data: 'x', name: 'x.txt' })`)), { error: { isServiceError: true, code: 'AUTH_REQUIRED' } })

    // Navigating the person's own browser to an uploaded HTML file does not run it on the app origin.
    const response = await ann.goto(`${b.appUrl('box')}/_service/files/${mine.html}`)
    assert.equal(response?.status(), 403)
    assert.notEqual(await ann.title(), 'owned')
  })
})
