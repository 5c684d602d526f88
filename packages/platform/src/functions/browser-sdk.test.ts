/**
 * `{app_url}/_service/sdk.js` over HTTP: the active release's browser-callable Function
 * names written into the SDK (never a `system` one), built once per release, an ETag per
 * release and SDK source so a revalidation answers 304 until a deploy, and what a page that
 * loaded the SDK before a deploy meets: the platform refusing with the SDK's own code. The
 * SDK in a real browser is tested in browser-sdk-chromium.test.ts.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { runInNewContext } from 'node:vm'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import type { Queryable } from '../db/db.ts'
import { createBrowserSdkScripts } from './browser-sdk.ts'

const FILE = `
  import { defineFunction, object } from '@service/server'
  export default defineFunction({ input: object({}), handler: () => 'ran' })`

/** A manifest `functions:` section and its files, from name → access. */
function functionsBundle(slug: string, functions: Record<string, 'public' | 'user' | 'system'>) {
  const entries = Object.entries(functions)
  const section = `functions:\n${entries.map(([name, access]) =>
    `  - name: ${name}\n    entrypoint: functions/${name}.ts\n    access: ${access}\n`).join('')}`
  return bundle({
    'service.yaml': manifest(slug, section),
    'public/index.html': `<h1>${slug}</h1>`,
    ...Object.fromEntries(entries.map(([name]) => [`functions/${name}.ts`, FILE])),
  })
}

interface Sdk {
  functions: { call(name: string, input?: unknown): Promise<unknown> }
}

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  assert.fail('expected a rejection')
}

describe(`the browser SDK as an app release serves it (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }

  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
  })
  after(() => h.close())

  async function deploy(slug: string, functions: Record<string, 'public' | 'user' | 'system'>): Promise<string> {
    const res = await h.request(`/v1/apps/${slug}/deployments`, { token: owner.token, json: functionsBundle(slug, functions) })
    const body = await res.json() as any
    assert.equal(res.status, 201, JSON.stringify(body))
    return body.release.id as string
  }

  async function createApp(slug: string): Promise<void> {
    assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug, visibility: 'public' } })).status, 201)
  }

  const sdkJs = (slug: string, headers: Record<string, string> = {}) =>
    h.request('/_service/sdk.js', { host: slug, headers: { accept: '*/*', ...headers } })

  /** The `service` global of a served sdk.js, calling the app over the in-process platform; `sent` counts its requests. */
  function evaluate(slug: string, source: string): { sdk: Sdk; sent: string[] } {
    const origin = h.platform.urls.app(slug)
    const sent: string[] = []
    const window: Record<string, unknown> = {}
    const fetch = (path: string, init: RequestInit) => {
      sent.push(path)
      return h.platform.fetch(new Request(new URL(path, origin), init))
    }
    runInNewContext(source, { window, fetch, location: new URL(`${origin}/`) })
    return { sdk: window['service'] as Sdk, sent }
  }

  test('sdk.js carries the active release\'s public and user Function names and no system Function\'s', async () => {
    await createApp('desk')
    const releaseId = await deploy('desk', { hello: 'public', mine: 'user', nightlyCleanup: 'system' })
    const res = await sdkJs('desk')
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'text/javascript; charset=utf-8')
    assert.equal(res.headers.get('cache-control'), 'no-cache')
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    assert.match(res.headers.get('etag') ?? '', new RegExp(`^"${releaseId}\\.[0-9a-f]{16}"$`))
    const source = await res.text()
    assert.ok(source.includes('const CALLABLE_FUNCTIONS = ["hello","mine"]'), 'the callable names are written in')
    assert.doesNotMatch(source, /nightlyCleanup/, 'a system Function\'s name is not in the script')
  })

  test('a revalidation with the ETag answers 304 without a body until a deploy, then the new list', async () => {
    await createApp('board')
    await deploy('board', { hello: 'public', report: 'public' })
    const first = await sdkJs('board')
    const etag = first.headers.get('etag')!
    assert.ok((await first.text()).includes('["hello","report"]'))

    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`]) {
      const again = await sdkJs('board', { 'if-none-match': ifNoneMatch })
      assert.equal(again.status, 304, `If-None-Match: ${ifNoneMatch}`)
      assert.equal(await again.text(), '')
      assert.equal(again.headers.get('etag'), etag)
      assert.equal(again.headers.get('cache-control'), 'no-cache')
    }
    assert.equal((await sdkJs('board', { 'if-none-match': '"something-else"' })).status, 200)

    const releaseId = await deploy('board', { hello: 'public', report: 'system', summary: 'user' })
    const after = await sdkJs('board', { 'if-none-match': etag })
    assert.equal(after.status, 200, 'the old ETag no longer holds')
    const newEtag = after.headers.get('etag')!
    assert.ok(newEtag.startsWith(`"${releaseId}.`), newEtag)
    const source = await after.text()
    assert.ok(source.includes('const CALLABLE_FUNCTIONS = ["hello","summary"]'), 'the new release\'s names')
    assert.doesNotMatch(source, /report/, 'report is a system Function now')
    assert.equal((await sdkJs('board', { 'if-none-match': newEtag })).status, 304)
  })

  test('a page holding the SDK from before a deploy sends the call; the platform refuses a Function made system with the SDK\'s code', async () => {
    await createApp('ledger')
    await deploy('ledger', { report: 'public' })
    const stale = evaluate('ledger', await (await sdkJs('ledger')).text())
    await deploy('ledger', { report: 'system', hello: 'public' })
    const fresh = evaluate('ledger', await (await sdkJs('ledger')).text())

    const fromServer = await rejection(stale.sdk.functions.call('report', {}))
    assert.deepEqual(stale.sent, ['/_service/functions/report'], 'the stale list let the request go')
    const fromSdk = await rejection(fresh.sdk.functions.call('report', {}))
    assert.deepEqual(fresh.sent, [], 'the current list refuses it before a request')
    assert.deepEqual([fromServer.code, fromSdk.code], ['FUNCTION_NOT_FOUND', 'FUNCTION_NOT_FOUND'])
    assert.match(fromServer.message, /report/)
    assert.match(fromSdk.message, /report/)
  })

  test('an app before its first deploy gets an SDK that refuses every Function', async () => {
    await createApp('blank')
    const res = await sdkJs('blank')
    assert.equal(res.status, 200)
    assert.match(res.headers.get('etag') ?? '', /^"none\.[0-9a-f]{16}"$/)
    const { sdk, sent } = evaluate('blank', await res.text())
    assert.equal((await rejection(sdk.functions.call('anything', {}))).code, 'FUNCTION_NOT_FOUND')
    assert.deepEqual(sent, [])
  })

  test('each release\'s script is built from one read of the release, however many requests ask', async () => {
    await createApp('counter')
    const releaseId = await deploy('counter', { hello: 'public' })
    const statements: string[] = []
    const db: Queryable = {
      query: (sql, params) => {
        statements.push(sql)
        return h.t.db.query(sql, params)
      },
    } as Queryable
    const scripts = createBrowserSdkScripts({ db })
    const request = () => new Request(`${h.platform.urls.app('counter')}/_service/sdk.js`)
    const answers = await Promise.all([1, 2, 3].map(() => scripts.serve(releaseId, request())))
    answers.push(await scripts.serve(releaseId, request()))
    const sources = await Promise.all(answers.map((answer) => answer.text()))
    assert.ok(sources.every((source) => source === sources[0] && source.includes('["hello"]')))
    assert.equal(statements.length, 1)
    await scripts.serve(null, request())
    assert.equal(statements.length, 1, 'no release, nothing to read')
  })
})
