/**
 * The SDK source with and without the callable Functions written in, evaluated in a fresh
 * V8 context against a fetch that records what it is asked (the real-browser tests are in
 * packages/platform/src/functions/browser-sdk-chromium.test.ts).
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { runInNewContext } from 'node:vm'
import { BROWSER_SDK_SOURCE, renderBrowserSdk } from './index.ts'

interface Sdk {
  functions: {
    call(name: unknown, input?: unknown): Promise<unknown>
    stream(name: unknown, input?: unknown): Promise<unknown>
  }
  ServiceError: new (...args: unknown[]) => Error & { code: string; details?: unknown }
}

/** The `service` global of `source`, and the paths its fetches asked for. */
function load(source: string): { sdk: Sdk; fetched: string[] } {
  const fetched: string[] = []
  const window: Record<string, unknown> = {}
  const fetch = async (path: string) => {
    fetched.push(path)
    return new Response(JSON.stringify({ ok: true }), { headers: { 'content-type': 'application/json' } })
  }
  runInNewContext(source, { window, fetch, location: new URL('http://notes.localhost/') })
  return { sdk: window['service'] as Sdk, fetched }
}

/** A value of the SDK's realm as one of this realm (deepEqual compares prototypes). */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value))
}

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  assert.fail('expected a rejection')
}

describe('the browser SDK source', () => {
  test('renderBrowserSdk writes the callable names in: a listed Function is called, any other name is refused without a fetch', async () => {
    const { sdk, fetched } = load(renderBrowserSdk({ callableFunctions: JSON.stringify(['addNote', 'listNotes']) }))
    assert.deepEqual(plain(await sdk.functions.call('listNotes', {})), { ok: true })
    assert.deepEqual(fetched, ['/_service/functions/listNotes'])

    for (const refused of [sdk.functions.call('nightlyCleanup', {}), sdk.functions.stream('nightlyCleanup', {})]) {
      const error = await rejection(refused)
      assert.ok(error instanceof sdk.ServiceError)
      assert.equal(error.code, 'FUNCTION_NOT_FOUND')
      assert.match(error.message, /no Function named nightlyCleanup that a browser may call/)
      assert.deepEqual(plain(error.details), { function: 'nightlyCleanup' })
    }
    // A name is compared as the string the request would carry, and inherited names are no names.
    assert.equal((await rejection(sdk.functions.call({ toString: () => 'hasOwnProperty' }))).code, 'FUNCTION_NOT_FOUND')
    assert.equal((await rejection(sdk.functions.call('constructor'))).code, 'FUNCTION_NOT_FOUND')
    assert.deepEqual(fetched, ['/_service/functions/listNotes'], 'no request for a refused name')
  })

  test('the stored source, with no list written in, leaves every name to the platform', async () => {
    const { sdk, fetched } = load(BROWSER_SDK_SOURCE)
    assert.deepEqual(plain(await sdk.functions.call('nightlyCleanup', {})), { ok: true })
    assert.deepEqual(fetched, ['/_service/functions/nightlyCleanup'])
  })

  test('an empty list refuses every name (an app before its first deploy)', async () => {
    const { sdk, fetched } = load(renderBrowserSdk({ callableFunctions: '[]' }))
    assert.equal((await rejection(sdk.functions.call('listNotes'))).code, 'FUNCTION_NOT_FOUND')
    assert.deepEqual(fetched, [])
  })
})
