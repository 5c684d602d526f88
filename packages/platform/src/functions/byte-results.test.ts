// Byte results through the pool against real Deno: a Function that returns a Response, a
// ReadableStream or a Uint8Array streams its pieces to an HTTP caller as they come, pulled
// only as fast as the caller reads; a failure before the first byte is an ordinary failure,
// one after it errors the stream; the timeout covers the whole stream; cancelling the
// stream cancels the Function's; callers that take JSON get an invalid return.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ByteResultError, type InvokeResult } from './pool.ts'
import { metaFor, removeBundle, testPool, writeBundle, type TestPool } from './test-bundle.ts'

const FIXTURES = {
  'functions/response.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        return new Response('a,b\\n1,2\\n', { status: 201, headers: { 'content-type': 'text/csv', 'set-cookie': 'x=1' } })
      },
    })`,
  'functions/text-stream.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        const words = ['one ', 'two ', 'three']
        return new ReadableStream({ pull(controller) { const word = words.shift(); if (word) controller.enqueue(word); else controller.close() } })
      },
    })`,
  'functions/big-bytes.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        const bytes = new Uint8Array(200 * 1024)
        for (let i = 0; i < bytes.length; i += 1) bytes[i] = i % 251
        return bytes
      },
    })`,
  'functions/endless.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler({ log }) {
        let n = 0
        return new ReadableStream({
          pull(controller) { n += 1; log.info('pulled', { n }); controller.enqueue(new Uint8Array(1024)) },
          cancel() { globalThis.cancelledStreams = (globalThis.cancelledStreams ?? 0) + 1 },
        }, { highWaterMark: 0 })
      },
    })`,
  'functions/cancelled.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: () => globalThis.cancelledStreams ?? 0 })`,
  'functions/fails-early.ts': `
    import { defineFunction, errors, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        return new ReadableStream({ pull() { throw errors.conflict('TOO_LATE', 'nothing to stream') } })
      },
    })`,
  'functions/fails-late.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        let sent = false
        return new ReadableStream({ pull(controller) { if (!sent) { sent = true; controller.enqueue('first') } else throw new Error('broke') } })
      },
    })`,
  'functions/bad-chunk.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() { return new ReadableStream({ start(controller) { controller.enqueue({ not: 'bytes' }) } }) },
    })`,
  'functions/stalls.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() { return new ReadableStream({ start(controller) { controller.enqueue('started') } }) },
    })`,
}

function bytesOf(result: InvokeResult) {
  assert.ok(result.ok && 'bytes' in result, `expected a byte result, got ${JSON.stringify(result)}`)
  return result.bytes
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(body).arrayBuffer())
}

describe('byte results', () => {
  let bundleDir: string
  let pool: TestPool

  before(() => {
    bundleDir = writeBundle(FIXTURES)
    pool = testPool(bundleDir, { size: 1 })
  })
  after(async () => {
    await pool.close()
    removeBundle(bundleDir)
  })

  const invoke = (name: string, options: { bytes?: boolean; timeoutMs?: number } = {}) =>
    pool.invoke({ entrypoint: `functions/${name}.ts`, input: {}, meta: metaFor(), bytes: options.bytes ?? true, ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}) })

  test('a returned Response keeps its status and headers, and its body arrives whole', async () => {
    const bytes = bytesOf(await invoke('response'))
    assert.equal(bytes.status, 201)
    assert.deepEqual(bytes.headers.find(([name]) => name === 'content-type'), ['content-type', 'text/csv'])
    assert.equal(new TextDecoder().decode(await readAll(bytes.body)), 'a,b\n1,2\n')
  })

  test('a stream of strings arrives as UTF-8 text/plain, piece by piece', async () => {
    const bytes = bytesOf(await invoke('text-stream'))
    assert.deepEqual(bytes.headers, [['content-type', 'text/plain; charset=utf-8']])
    assert.equal(new TextDecoder().decode(await readAll(bytes.body)), 'one two three')
  })

  test('a large Uint8Array is split into pieces of at most 64 KiB and arrives unchanged', async () => {
    const bytes = bytesOf(await invoke('big-bytes'))
    const reader = bytes.body.getReader()
    const sizes: number[] = []
    const all: number[] = []
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      sizes.push(value.byteLength)
      all.push(...value)
    }
    assert.deepEqual(sizes, [65536, 65536, 65536, 8192])
    assert.ok(all.every((byte, index) => byte === index % 251))
  })

  test('the worker produces only as fast as the reader reads, and cancelling cancels the Function\'s stream', async () => {
    const before = pool.calls.length
    const bytes = bytesOf(await invoke('endless'))
    const reader = bytes.body.getReader()
    for (let read = 0; read < 3; read += 1) await reader.read()
    const pulled = () => pool.calls.slice(before).filter((call) => call.args[0] === 'pulled').length
    // Round trips to the same worker: without backpressure the Function would have been pulled thousands of times by now.
    for (let trip = 0; trip < 5; trip += 1) await invoke('text-stream', { bytes: false })
    assert.ok(pulled() <= 3 + 4 + 2, `pulled ${pulled()} times while 3 pieces were read`)
    await reader.cancel()
    // The cancel message reaches the worker before the next invoke (one ordered channel).
    assert.deepEqual(await invoke('cancelled', { bytes: false }), { ok: true, value: 1 })
    const after = pulled()
    for (let trip = 0; trip < 3; trip += 1) await invoke('text-stream', { bytes: false })
    assert.equal(pulled(), after, 'no pulls after the cancel')
    // The stream may still pull once more after the invocation ended (its queue refills as the
    // cancel crosses); that pull's log call is refused for a dead capability, which is the
    // capability rule working, not noise from the cancel. Nothing else may be warned about.
    const warnings = pool.logger.lines.filter((line) => line.level === 'warn' && line.message !== 'functions: refused a context call without a live capability')
    assert.deepEqual(warnings.map((line) => line.message), [], 'the cancelled stream ends quietly')
  })

  test('a failure before the first byte is an ordinary failed result', async () => {
    const result = await invoke('fails-early')
    assert.equal(result.ok, false)
    assert.deepEqual(!result.ok && result.error, { kind: 'service', code: 'TOO_LATE', message: 'nothing to stream', status: 409 })
  })

  test('a failure after the first byte errors the stream with the failure', async () => {
    const bytes = bytesOf(await invoke('fails-late'))
    const reader = bytes.body.getReader()
    const first = await reader.read()
    assert.equal(new TextDecoder().decode(first.value), 'first')
    const error = await reader.read().then(() => null, (thrown: unknown) => thrown)
    assert.ok(error instanceof ByteResultError)
    assert.equal(error.failure.kind, 'unknown')
    assert.equal(error.failure.message, 'broke')
  })

  test('a chunk that is not bytes or text is an invalid return', async () => {
    const result = await invoke('bad-chunk')
    assert.equal(result.ok, false)
    assert.equal(!result.ok && result.error.kind, 'invalid_return')
  })

  test('the timeout covers the whole stream', async () => {
    const bytes = bytesOf(await invoke('stalls', { timeoutMs: 1000 }))
    const reader = bytes.body.getReader()
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'started')
    const error = await reader.read().then(() => null, (thrown: unknown) => thrown)
    assert.ok(error instanceof ByteResultError)
    assert.equal(error.failure.kind, 'timeout')
  })

  test('a caller that takes JSON gets an invalid return for bytes, naming what was returned', async () => {
    const result = await invoke('response', { bytes: false })
    assert.equal(result.ok, false)
    assert.equal(!result.ok && result.error.kind, 'invalid_return')
    assert.match(!result.ok ? result.error.message : '', /returned a Response; bytes reach HTTP callers only/)
  })
})
