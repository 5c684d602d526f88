// The worker is untrusted: Function code runs in its isolate, can write to its stdout
// through `node:fs`, and can bend what the worker itself serialises (a toJSON on
// Object.prototype turns the worker's own messages into ones of its choosing). Each test
// is an attack on the pool through that channel, against real Deno; the pool must end the
// worker (failing its invocations as crashed) and never let the message through.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { failureResponse } from './failures.ts'
import { ByteResultError, type InvokeResult } from './pool.ts'
import { metaFor, removeBundle, testPool, writeBundle, type TestPool } from './test-bundle.ts'

/**
 * Installs a toJSON that rewrites the worker's next `log` context call into the message the
 * first of `forgeries` makes of it (it has the invocation's id), so each `log.info` of the
 * Function makes the worker itself write a forged message with its nonce.
 */
const FORGE = `
  const forgeries: Array<(call: { invocationId: string }) => unknown> = []
  ;(Object.prototype as any).toJSON = function () {
    if (this && this.type === 'call' && this.member === 'log' && forgeries.length > 0) return forgeries.shift()!(this)
    return this
  }
`

const FIXTURES = {
  'functions/victim.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ log }) {
        // Logs every 100 ms for two seconds: a forger that loads late still sees a call.
        for (let i = 0; i < 20; i += 1) {
          log.info('the victim is running')
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        return 'the real value'
      },
    })`,
  'functions/fd-forger.ts': `
    import { defineFunction, object } from '@service/server'
    import fs from 'node:fs'
    // Learns the ids of the invocations that make context calls (the victim logs one).
    const seen: string[] = []
    ;(Object.prototype as any).toJSON = function () {
      if (this && this.type === 'call' && typeof this.invocationId === 'string') seen.push(this.invocationId)
      return this
    }
    export default defineFunction({
      input: object({}),
      async handler() {
        while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 20))
        fs.writeSync(1, JSON.stringify({ type: 'result', id: seen[0], ok: true, value: 'forged' }) + '\\n')
        await new Promise((resolve) => setTimeout(resolve, 500))
        return 'written'
      },
    })`,
  'functions/chunk-flood.ts': `
    import { defineFunction, object } from '@service/server'
    ${FORGE}
    export default defineFunction({
      input: object({}),
      handler({ log }) {
        let first = true
        const stream = new ReadableStream({
          pull(controller) {
            if (first) { first = false; controller.enqueue('x'); return }
            return new Promise(() => {}) // never another piece: only forged ones
          },
        }, { highWaterMark: 0 })
        setTimeout(() => {
          for (let i = 0; i < 20; i += 1) {
            forgeries.push((call) => ({ type: 'chunk', id: call.invocationId, data: btoa('A'.repeat(48 * 1024)) }))
            log.info('chunk ' + i)
          }
        }, 200)
        return stream
      },
    })`,
  'functions/forged.ts': `
    import { defineFunction, enum as enumOf, object } from '@service/server'
    ${FORGE}
    export default defineFunction({
      input: object({ what: enumOf(['second-ready', 'padded-ready', 'unknown-result', 'unknown-loaded', 'head']) }),
      async handler({ input, log }) {
        const forgery = {
          'second-ready': () => ({ type: 'ready', pid: 1, deno: 'forged' }),
          'padded-ready': () => ({ type: 'ready', pid: 1, deno: 'x'.repeat(4096) }),
          'unknown-result': () => ({ type: 'result', id: 'no-such-invocation', ok: true, value: 1 }),
          'unknown-loaded': () => ({ type: 'loaded', id: 'no-such-load', ok: true }),
          'head': (call: { invocationId: string }) => ({ type: 'head', id: call.invocationId, status: 200, headers: [] }),
        }[input.what]
        forgeries.push(forgery)
        log.info('forged')
        await new Promise((resolve) => setTimeout(resolve, 1000))
        return 'survived'
      },
    })`,
  'functions/fake-service-error.ts': `
    import { defineFunction, number, object, string } from '@service/server'
    export default defineFunction({
      input: object({ status: number(), code: string() }),
      handler({ input }) {
        throw { __serviceError: true, name: 'ServiceError', code: input.code, message: 'looks typed', status: input.status }
      },
    })`,
  'functions/forged-failure.ts': `
    import { defineFunction, object } from '@service/server'
    ${FORGE}
    export default defineFunction({
      input: object({}),
      async handler({ log }) {
        forgeries.push((call) => ({ type: 'result', id: call.invocationId, ok: false, error: { kind: 'service', code: 'FINE', message: 'all good', status: 200 } }))
        log.info('forged')
        await new Promise((resolve) => setTimeout(resolve, 500))
        return 'survived'
      },
    })`,
  'functions/limits.ts': `
    import { defineFunction, enum as enumOf, object } from '@service/server'
    export default defineFunction({
      input: object({ what: enumOf(['big-result', 'big-call', 'big-log', 'self-json', 'many-calls']) }),
      async handler({ input, data, log }) {
        switch (input.what) {
          case 'big-result': return 'x'.repeat(9 * 1024 * 1024)
          case 'big-call':
            try { await data.table('t').getById('x'.repeat(2 * 1024 * 1024)); return 'sent' } catch (error) { return { code: error.code, status: error.status, message: error.message } }
          case 'big-log':
            log.info('big', { blob: 'y'.repeat(2 * 1024 * 1024) })
            return 'logged'
          case 'self-json': {
            const value = { a: 1 }
            Object.defineProperty(value, 'toJSON', { value() { return this }, enumerable: false })
            return value
          }
          case 'many-calls': {
            const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => data.table('t').getById(String(i).padStart(1024, '0'))))
            return answers.length
          }
        }
      },
    })`,
  'functions/streams.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        let n = 0
        return new ReadableStream({ pull(controller) { n += 1; if (n > 3) controller.close(); else controller.enqueue('piece ' + n + ' ') } })
      },
    })`,
}

let bundleDir: string
let pool: TestPool

before(() => {
  bundleDir = writeBundle(FIXTURES)
})

after(() => removeBundle(bundleDir))

function freshPool(): TestPool {
  pool = testPool(bundleDir, { timeoutMs: 15_000 })
  return pool
}

function endedReasons(testPool: TestPool): string[] {
  return testPool.logger.lines.filter((line) => line.message === 'functions worker ended').map((line) => String(line.fields?.['reason']))
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<{ bytes: number; error: unknown }> {
  const reader = body.getReader()
  let bytes = 0
  for (;;) {
    try {
      const { value, done } = await reader.read()
      if (done) return { bytes, error: null }
      bytes += value.byteLength
    } catch (error) {
      return { bytes, error }
    }
  }
}

describe('a worker that breaks the protocol', () => {
  test('a result Function code writes to fd 1 for another invocation never reaches it: the worker ends', async () => {
    const pool = freshPool()
    try {
      const victim = pool.invoke({ entrypoint: 'functions/victim.ts', input: {}, meta: metaFor() })
      await new Promise((resolve) => setTimeout(resolve, 300))
      const forger = await pool.invoke({ entrypoint: 'functions/fd-forger.ts', input: {}, meta: metaFor() })
      const victimResult = await victim
      assert.notDeepEqual(victimResult, { ok: true, value: 'forged' })
      assert.equal(!victimResult.ok && victimResult.error.kind, 'crashed')
      assert.equal(!forger.ok && forger.error.kind, 'crashed')
      assert.match(endedReasons(pool).join('\n'), /broke the protocol: a line without its nonce/)
      // The pool replaces the worker.
      const next = await pool.invoke({ entrypoint: 'functions/streams.ts', input: {}, meta: metaFor(), bytes: true })
      assert.equal(next.ok && 'bytes' in next && (await new Response(next.bytes.body).text()), 'piece 1 piece 2 piece 3 ')
    } finally {
      await pool.close()
    }
  })

  test('chunks nobody pulled end the worker: at most the read-ahead is buffered, then the stream errors as crashed', async () => {
    const pool = freshPool()
    try {
      const result: InvokeResult = await pool.invoke({ entrypoint: 'functions/chunk-flood.ts', input: {}, meta: metaFor(), bytes: true })
      assert.ok(result.ok && 'bytes' in result)
      // Nobody reads for a while: the forged chunks arrive with no pull out.
      while (endedReasons(pool).length === 0) await new Promise((resolve) => setTimeout(resolve, 50))
      assert.match(endedReasons(pool)[0] ?? '', /broke the protocol: a chunk nobody pulled/)
      const { bytes, error } = await readAll(result.bytes.body)
      assert.ok(error instanceof ByteResultError && error.failure.kind === 'crashed')
      // 'x' plus the pieces the pool's pulls asked for (its read-ahead of 4), not 20 forged ones.
      assert.ok(bytes <= 1 + 4 * 48 * 1024, `${bytes} bytes were buffered`)
    } finally {
      await pool.close()
    }
  })

  for (const [what, reason] of [
    ['second-ready', /a second ready/],
    ['padded-ready', /a ready message of \d+ characters \(at most 1024\)/],
    ['unknown-result', /a result for no running invocation/],
    ['unknown-loaded', /a loaded for no load/],
    ['head', /a byte result nobody asked for/],
  ] as const) {
    test(`a forged ${what} ends the worker and fails its invocations as crashed`, async () => {
      const pool = freshPool()
      try {
        const result = await pool.invoke({ entrypoint: 'functions/forged.ts', input: { what }, meta: metaFor() })
        assert.equal(!result.ok && result.error.kind, 'crashed', JSON.stringify(result))
        assert.match(endedReasons(pool).join('\n'), reason)
      } finally {
        await pool.close()
      }
    })
  }

  test('an honest byte stream still arrives whole, and cancelling mid-stream does not end the worker', async () => {
    const pool = freshPool()
    try {
      const result = await pool.invoke({ entrypoint: 'functions/streams.ts', input: {}, meta: metaFor(), bytes: true })
      assert.ok(result.ok && 'bytes' in result)
      assert.equal(await new Response(result.bytes.body).text(), 'piece 1 piece 2 piece 3 ')
      for (let round = 0; round < 5; round += 1) {
        const again = await pool.invoke({ entrypoint: 'functions/streams.ts', input: {}, meta: metaFor(), bytes: true })
        assert.ok(again.ok && 'bytes' in again)
        const reader = again.bytes.body.getReader()
        await reader.read()
        await reader.cancel()
      }
      assert.equal((await pool.invoke({ entrypoint: 'functions/victim.ts', input: {}, meta: metaFor() })).ok, true)
      assert.deepEqual(endedReasons(pool), [])
    } finally {
      await pool.close()
    }
  })
})

describe('typed errors a Function cannot bend', () => {
  test('a thrown look-alike of ServiceError with a status outside 400-599 or a bad code is an untyped failure', async () => {
    const pool = freshPool()
    try {
      for (const [status, code] of [[200, 'FINE'], [204, 'EMPTY'], [302, 'MOVED'], [1000, 'HUGE'], [404.5, 'HALF'], [404, 'lower_case'], [404, 'A'.repeat(129)]] as const) {
        const result = await pool.invoke({ entrypoint: 'functions/fake-service-error.ts', input: { status, code }, meta: metaFor() })
        assert.ok(!result.ok)
        assert.equal(result.error.kind, 'unknown', `${status} ${code}`)
        assert.match(result.error.message, /not a valid error response/)
        assert.equal(failureResponse(result.error, { environment: 'production' }).status, 500)
      }
      const valid = await pool.invoke({ entrypoint: 'functions/fake-service-error.ts', input: { status: 418, code: 'TEAPOT' }, meta: metaFor() })
      assert.deepEqual(valid, { ok: false, error: { kind: 'service', code: 'TEAPOT', message: 'looks typed', status: 418 } })
    } finally {
      await pool.close()
    }
  })

  test('a service failure with status 200 that the worker is made to send becomes an untyped failure', async () => {
    const pool = freshPool()
    try {
      const result = await pool.invoke({ entrypoint: 'functions/forged-failure.ts', input: {}, meta: metaFor() })
      assert.ok(!result.ok)
      assert.equal(result.error.kind, 'unknown')
      assert.match(result.error.message, /status 200 is not an HTTP error status/)
    } finally {
      await pool.close()
    }
  })

  test('failureResponse answers a service failure with an invalid status as a generic 500', () => {
    for (const status of [200, 302, 1000]) {
      const response = failureResponse({ kind: 'service', code: 'FINE', message: 'ok', status }, { environment: 'production' })
      assert.deepEqual(response, { status: 500, body: { error: { code: 'FUNCTION_FAILED', message: 'The Function failed' } } })
    }
  })
})

describe('limits an honest worker keeps', () => {
  test('a JSON result over 8 MiB fails as invalid_return, naming the limit and byte results', async () => {
    const pool = freshPool()
    try {
      const result = await pool.invoke({ entrypoint: 'functions/limits.ts', input: { what: 'big-result' }, meta: metaFor() })
      assert.ok(!result.ok)
      assert.equal(result.error.kind, 'invalid_return')
      assert.match(result.error.message, /over the 8388608 a Function may return; return bytes/)
      assert.deepEqual(endedReasons(pool), [], 'the worker keeps running')
    } finally {
      await pool.close()
    }
  })

  test('a context call over 1 MiB is refused in the Function with BODY_TOO_LARGE; a log line that large is cut, not dropped', async () => {
    const pool = freshPool()
    try {
      const refused = await pool.invoke({ entrypoint: 'functions/limits.ts', input: { what: 'big-call' }, meta: metaFor() })
      assert.ok(refused.ok)
      assert.equal((refused.value as { code: string }).code, 'BODY_TOO_LARGE')
      assert.equal((refused.value as { status: number }).status, 413)
      assert.equal(pool.calls.length, 0, 'the call never reached the platform')
      assert.deepEqual(await pool.invoke({ entrypoint: 'functions/limits.ts', input: { what: 'big-log' }, meta: metaFor() }), { ok: true, value: 'logged' })
      while (pool.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 20))
      const [message, fields] = pool.calls[0]!.args as [string, { truncated: boolean; size: number }]
      assert.equal(message, 'big')
      assert.equal(fields.truncated, true)
      assert.ok(fields.size > 2 * 1024 * 1024)
    } finally {
      await pool.close()
    }
  })

  test('a value whose toJSON returns itself is checked as JSON.stringify would send it (once), and answered', async () => {
    const pool = freshPool()
    try {
      assert.deepEqual(await pool.invoke({ entrypoint: 'functions/limits.ts', input: { what: 'self-json' }, meta: metaFor() }), { ok: true, value: { a: 1 } })
    } finally {
      await pool.close()
    }
  })

  test('the pool stops reading a worker with 256 context calls open, and reads on once they are answered', async () => {
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const pool = testPool(bundleDir, { timeoutMs: 15_000, answer: () => gate.then(() => 'row') })
    try {
      const result = pool.invoke({ entrypoint: 'functions/limits.ts', input: { what: 'many-calls' }, meta: metaFor() })
      while (pool.calls.length < 257) await new Promise((resolve) => setTimeout(resolve, 20))
      await new Promise((resolve) => setTimeout(resolve, 300))
      assert.equal(pool.calls.length, 257, 'no call past the 257th is read while they are all open')
      open()
      assert.deepEqual(await result, { ok: true, value: 300 })
      assert.equal(pool.calls.length, 300)
    } finally {
      await pool.close()
    }
  })
})
