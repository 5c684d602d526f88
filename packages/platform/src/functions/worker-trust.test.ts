// The worker is untrusted: Function code runs in its isolate, can write to its stdout
// through `node:fs`, and can bend what the worker itself serialises (a toJSON on
// Object.prototype turns the worker's own messages into ones of its choosing). Each test
// is an attack on the pool through that channel, against real Deno; the pool must end the
// worker (failing its invocations as crashed) and never let the message through.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
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
        await new Promise((resolve) => setTimeout(resolve, 600))
        log.info('the victim is running')
        await new Promise((resolve) => setTimeout(resolve, 1500))
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
