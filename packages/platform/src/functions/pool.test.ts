// The Functions pool against real Deno: results, module caching, input validation, typed
// and untyped errors, import failures, invalid returns, timeouts, crashed workers and
// queueing. Fixtures are written into a temporary bundle.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { failureResponse, type FunctionResult } from './index.ts'
import { metaFor, removeBundle, testPool, writeBundle, type TestPool } from './test-bundle.ts'

const FIXTURES = {
  'functions/counter.ts': `
    import { SERVICE_SDK_VERSION, defineFunction, object, optional, string } from '@service/server'
    let loads = 0
    loads += 1
    let calls = 0
    export default defineFunction({
      input: object({ echo: optional(string()) }),
      handler({ input, requestId }) {
        calls += 1
        console.log('counter ran', calls)
        return { loads, calls, echo: input.echo ?? null, requestId, sdk: SERVICE_SDK_VERSION, pid: Deno.pid }
      },
    })`,
  'functions/validated.ts': `
    import { defineFunction, number, object, string } from '@service/server'
    let ran = 0
    export default defineFunction({
      input: object({ title: string(), count: number() }),
      handler({ input }) {
        ran += 1
        return { ran, title: input.title }
      },
    })`,
  'functions/typed-error.ts': `
    import { defineFunction, enum as enumOf, errors, object } from '@service/server'
    export default defineFunction({
      input: object({ helper: enumOf(['badRequest', 'unauthorized', 'forbidden', 'notFound', 'conflict', 'unavailable']) }),
      handler({ input }) {
        throw errors[input.helper]('ITEM_' + input.helper.toUpperCase(), 'failed with ' + input.helper, { helper: input.helper })
      },
    })`,
  'functions/untyped.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() { throw new Error('kaboom at line 5') },
    })`,
  'functions/throws-string.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler() { throw 'just a string' } })`,
  'functions/syntax-error.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler() { return 1 }`,
  'functions/no-default.ts': `
    import { defineFunction, object } from '@service/server'
    export const named = defineFunction({ input: object({}), handler: () => 1 })`,
  'functions/not-defined.ts': `
    export default { input: {}, handler: () => 1 }`,
  'functions/bad-definition.ts': `
    import { defineFunction } from '@service/server'
    export default defineFunction((() => 1) as never)`,
  'functions/returns.ts': `
    import { defineFunction, enum as enumOf, object } from '@service/server'
    export default defineFunction({
      input: object({ what: enumOf(['function', 'bigint', 'cycle', 'nested-function', 'map', 'nan', 'nothing', 'date']) }),
      handler({ input }) {
        switch (input.what) {
          case 'function': return () => 1
          case 'bigint': return { total: 10n }
          case 'cycle': { const node: Record<string, unknown> = { name: 'a' }; node.self = node; return node }
          case 'nested-function': return { items: [1, { run() {} }] }
          case 'map': return new Map([['a', 1]])
          case 'nan': return { ratio: NaN }
          case 'nothing': return undefined
          case 'date': return { at: new Date('2026-01-02T03:04:05.000Z'), skipped: undefined }
        }
      },
    })`,
  'functions/forever.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler() { for (;;) {} } })`,
  'functions/hang.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ log }) {
        log.info('hanging', { pid: Deno.pid })
        await new Promise(() => {})
      },
    })`,
  'functions/sleep.ts': `
    import { defineFunction, number, object } from '@service/server'
    export default defineFunction({
      input: object({ ms: number() }),
      async handler({ input }) {
        const started = Date.now()
        await new Promise((resolve) => setTimeout(resolve, input.ms))
        return { started, ended: Date.now(), pid: Deno.pid }
      },
    })`,
  'functions/stray.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        Promise.reject(new Error('stray rejection'))
        setTimeout(() => { throw new Error('late throw') }, 0)
        const exits = []
        for (const end of [() => Deno.exit(3), () => process.exit(4), () => globalThis.close()]) {
          try { end(); exits.push('allowed') } catch (error) { exits.push(error.message) }
        }
        process.stdout.write('a line a library wrote to process.stdout\\n')
        return { pid: Deno.pid, exits }
      },
    })`,
}

let bundleDir: string
let pool: TestPool

before(() => {
  bundleDir = writeBundle(FIXTURES)
  pool = testPool(bundleDir, { size: 2 })
})

after(async () => {
  await pool.close()
  removeBundle(bundleDir)
})

function failure(result: FunctionResult) {
  if (result.ok) assert.fail(`expected a failure, got ${JSON.stringify(result.value)}`)
  return result.error
}

function value(result: FunctionResult): Record<string, unknown> {
  if (!result.ok) assert.fail(`expected a value, got ${JSON.stringify(result.error)}`)
  return result.value as Record<string, unknown>
}

const meta = metaFor()

describe('results and module loading', () => {
  test('a Function returns its value, and a second call reuses the loaded module', async () => {
    const first = value(await pool.invoke({ entrypoint: 'functions/counter.ts', input: { echo: 'one' }, meta }))
    const second = value(await pool.invoke({ entrypoint: 'functions/counter.ts', input: { echo: 'two' }, meta }))
    assert.equal(first['echo'], 'one')
    assert.equal(first['requestId'], 'req-test')
    assert.equal(second['echo'], 'two')
    assert.equal(second['pid'], first['pid'], 'sequential calls run on the same warm worker')
    assert.equal(first['loads'], 1)
    assert.equal(second['loads'], 1, 'the module was evaluated once')
    assert.equal(second['calls'], (first['calls'] as number) + 1)
  })

  test('@service/server resolves through the import map to the local SDK file (remote modules are off: --no-remote)', async () => {
    const result = value(await pool.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta }))
    assert.equal(result['sdk'], '2.6.0')
  })

  test('console output from a Function goes to the logger, not the protocol', async () => {
    value(await pool.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta }))
    assert.ok(pool.logger.lines.some((line) => line.message === 'function output' && String(line.fields?.['line']).startsWith('counter ran')))
  })

  test('a returned Date becomes its JSON string and undefined fields are left out', async () => {
    const result = value(await pool.invoke({ entrypoint: 'functions/returns.ts', input: { what: 'date' }, meta }))
    assert.deepEqual(result, { at: '2026-01-02T03:04:05.000Z' })
  })

  test('a handler that returns nothing resolves to null', async () => {
    const result = await pool.invoke({ entrypoint: 'functions/returns.ts', input: { what: 'nothing' }, meta })
    assert.deepEqual(result, { ok: true, value: null })
  })

  test('warm imports modules ahead of the first call and reports import failures', async () => {
    const warmBundle = writeBundle({ 'functions/counter.ts': FIXTURES['functions/counter.ts'], 'functions/syntax-error.ts': FIXTURES['functions/syntax-error.ts'] })
    const warmPool = testPool(warmBundle, { size: 2 })
    try {
      const report = await warmPool.warm(['functions/counter.ts', 'functions/syntax-error.ts'])
      assert.deepEqual(report[0], { entrypoint: 'functions/counter.ts', ok: true })
      assert.equal(report[1]?.ok, false)
      assert.equal(report[1]?.ok === false && report[1].error.kind, 'import')
      const result = value(await warmPool.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta }))
      assert.equal(result['loads'], 1)
      assert.equal(result['calls'], 1, 'warming imported the module without running the handler')
    } finally {
      await warmPool.close()
      removeBundle(warmBundle)
    }
  })
})

describe('errors', () => {
  test('invalid input fails with a 400 INPUT_INVALID listing each issue path, and the handler never runs', async () => {
    const error = failure(await pool.invoke({ entrypoint: 'functions/validated.ts', input: { count: 'three', extra: true }, meta }))
    assert.equal(error.kind, 'service')
    assert.ok(error.kind === 'service')
    assert.equal(error.status, 400)
    assert.equal(error.code, 'INPUT_INVALID')
    const issues = (error.details as { issues: { path: unknown[] }[] }).issues
    assert.deepEqual(issues.map((issue) => issue.path), [['title'], ['count'], ['extra']])
    const valid = value(await pool.invoke({ entrypoint: 'functions/validated.ts', input: { title: 'ok', count: 3 }, meta }))
    assert.equal(valid['ran'], 1, 'only the valid call reached the handler')
  })

  test('each error helper keeps its status, code, message and details', async () => {
    const expected = { badRequest: 400, unauthorized: 401, forbidden: 403, notFound: 404, conflict: 409, unavailable: 503 }
    for (const [helper, status] of Object.entries(expected)) {
      const error = failure(await pool.invoke({ entrypoint: 'functions/typed-error.ts', input: { helper }, meta }))
      assert.deepEqual(error, {
        kind: 'service',
        code: `ITEM_${helper.toUpperCase()}`,
        message: `failed with ${helper}`,
        status,
        details: { helper },
      })
    }
  })

  test('an untyped throw is reported as unknown with its message and stack', async () => {
    const error = failure(await pool.invoke({ entrypoint: 'functions/untyped.ts', input: {}, meta }))
    assert.equal(error.kind, 'unknown')
    assert.equal(error.message, 'kaboom at line 5')
    assert.ok(error.kind === 'unknown' && error.stack?.includes('untyped.ts'))
    const thrownString = failure(await pool.invoke({ entrypoint: 'functions/throws-string.ts', input: {}, meta }))
    assert.equal(thrownString.kind, 'unknown')
    assert.match(thrownString.message, /just a string/)
  })

  test('import failures are reported as import: syntax error, no default export, a default that is not defineFunction', async () => {
    const cases: Array<[string, RegExp]> = [
      ['functions/syntax-error.ts', /syntax-error\.ts failed to load/],
      ['functions/no-default.ts', /has no default export/],
      ['functions/not-defined.ts', /is not a defineFunction/],
      ['functions/bad-definition.ts', /defineFunction: takes \{ input, handler \}/],
      ['functions/missing.ts', /missing\.ts failed to load/],
    ]
    for (const [entrypoint, message] of cases) {
      const error = failure(await pool.invoke({ entrypoint, input: {}, meta }))
      assert.equal(error.kind, 'import', entrypoint)
      assert.match(error.message, message)
    }
  })

  test('an entrypoint outside the bundle is refused before any worker sees it', async () => {
    for (const entrypoint of ['../escape.ts', '/etc/passwd.ts', 'https://example.com/f.ts', 'functions/../../x.ts']) {
      const error = failure(await pool.invoke({ entrypoint, input: {}, meta }))
      assert.equal(error.kind, 'import', entrypoint)
    }
  })

  test('returning a function, a BigInt, a cycle, a Map or NaN is invalid_return', async () => {
    const cases: Array<[string, RegExp]> = [
      ['function', /the returned value is a function/],
      ['bigint', /the returned value\.total is a BigInt/],
      ['cycle', /the returned value\.self refers back/],
      ['nested-function', /the returned value\.items\[1\]\.run is a function/],
      ['map', /is a Map, not a plain object/],
      ['nan', /\.ratio is NaN/],
    ]
    for (const [what, message] of cases) {
      const error = failure(await pool.invoke({ entrypoint: 'functions/returns.ts', input: { what }, meta }))
      assert.equal(error.kind, 'invalid_return', what)
      assert.match(error.message, message)
    }
  })

  test('failureResponse keeps typed errors and hides other failures in production', () => {
    const typed = failureResponse({ kind: 'service', code: 'ITEM_NOT_FOUND', message: 'gone', status: 404, details: { id: 1 } }, { environment: 'production' })
    assert.deepEqual(typed, { status: 404, body: { error: { code: 'ITEM_NOT_FOUND', message: 'gone', details: { id: 1 } } } })
    const unknown = { kind: 'unknown' as const, message: 'db password is hunter2', stack: 'Error: at x.ts:1' }
    assert.deepEqual(failureResponse(unknown, { environment: 'production' }), {
      status: 500,
      body: { error: { code: 'FUNCTION_FAILED', message: 'The Function failed' } },
    })
    const development = failureResponse(unknown, { environment: 'development' })
    assert.match(development.body.error.message, /hunter2/)
    assert.deepEqual(development.body.error.details, { stack: 'Error: at x.ts:1' })
    assert.equal(failureResponse({ kind: 'timeout', message: 'x' }, { environment: 'production' }).status, 504)
  })
})

describe('worker lifecycle', () => {
  test('a Function that loops forever fails with timeout, and the next call runs on a new worker', async () => {
    const before = value(await pool.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta }))
    const error = failure(await pool.invoke({ entrypoint: 'functions/forever.ts', input: {}, meta, timeoutMs: 300 }))
    assert.equal(error.kind, 'timeout')
    assert.equal('reason' in error, false, 'it started: not a not_started timeout')
    const next = value(await pool.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta }))
    assert.notEqual(next['pid'], before['pid'])
    assert.equal(next['loads'], 1, 'the new worker loaded the module afresh')
  })

  test('a timeout kills the worker, failing its other in-flight invocations as crashed bystanders', async () => {
    const isolated = testPool(bundleDir, { size: 1 })
    try {
      const sleeping = isolated.invoke({ entrypoint: 'functions/sleep.ts', input: { ms: 5_000 }, meta })
      const looping = isolated.invoke({ entrypoint: 'functions/forever.ts', input: {}, meta, timeoutMs: 500 })
      const timedOut = failure(await looping)
      assert.equal(timedOut.kind, 'timeout')
      const victim = failure(await sleeping)
      assert.equal(victim.kind, 'crashed')
      assert.equal(victim.kind === 'crashed' ? victim.reason : undefined, 'worker_replaced_for_timeout_of_another_invocation')
      assert.match(victim.message, /timed out/)
      value(await isolated.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta }))
    } finally {
      await isolated.close()
    }
  })

  test('a worker killed from outside fails its in-flight calls as crashed, and the next call works', async () => {
    const isolated = testPool(bundleDir, { size: 1 })
    try {
      const hanging = isolated.invoke({ entrypoint: 'functions/hang.ts', input: {}, meta })
      const second = isolated.invoke({ entrypoint: 'functions/hang.ts', input: {}, meta })
      while (isolated.calls.length < 2) await new Promise((resolve) => setTimeout(resolve, 10))
      const pid = (isolated.calls[0]?.args[1] as { pid: number }).pid
      process.kill(pid, 'SIGKILL')
      const [first, other] = [failure(await hanging), failure(await second)]
      assert.equal(first.kind, 'crashed')
      assert.equal(other.kind, 'crashed')
      assert.equal(first.kind === 'crashed' ? first.reason : 'absent', undefined, 'a crash nobody caused on purpose has no bystander reason')
      assert.match(first.message, /SIGKILL/)
      const next = value(await isolated.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta }))
      assert.notEqual(next['pid'], pid)
    } finally {
      await isolated.close()
    }
  })

  test('stray rejections, late throws, process.stdout writes and the process exits do not end the worker', async () => {
    const first = value(await pool.invoke({ entrypoint: 'functions/stray.ts', input: {}, meta }))
    for (const exit of first['exits'] as string[]) assert.match(exit, /ending the process is not available/)
    assert.ok(pool.logger.lines.some((line) => line.fields?.['line'] === 'a line a library wrote to process.stdout'))
    await new Promise((resolve) => setTimeout(resolve, 50))
    const second = value(await pool.invoke({ entrypoint: 'functions/stray.ts', input: {}, meta }))
    assert.equal(second['pid'], first['pid'])
  })

  test('invocations beyond the per-worker concurrency limit queue until a slot frees', async () => {
    const isolated = testPool(bundleDir, { size: 1, concurrency: 1 })
    try {
      const [first, second] = await Promise.all([
        isolated.invoke({ entrypoint: 'functions/sleep.ts', input: { ms: 200 }, meta }),
        isolated.invoke({ entrypoint: 'functions/sleep.ts', input: { ms: 10 }, meta }),
      ])
      const a = value(first)
      const b = value(second)
      assert.equal(a['pid'], b['pid'])
      assert.ok((b['started'] as number) >= (a['ended'] as number), 'the second started after the first ended')
    } finally {
      await isolated.close()
    }
  })

  test('an invocation that waits in the queue past its timeout fails as a not_started timeout without killing the busy worker', async () => {
    const isolated = testPool(bundleDir, { size: 1, concurrency: 1 })
    try {
      const busy = isolated.invoke({ entrypoint: 'functions/sleep.ts', input: { ms: 400 }, meta })
      const queued = await isolated.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta, timeoutMs: 100 })
      assert.deepEqual(failure(queued), { kind: 'timeout', message: 'the invocation waited 100 ms for a free worker', reason: 'not_started' })
      value(await busy)
    } finally {
      await isolated.close()
    }
  })

  test('a Deno binary that cannot start fails the invocation as crashed instead of retrying in a loop', async () => {
    const broken = testPool(bundleDir, { denoPath: '/nonexistent/deno' })
    try {
      const error = failure(await broken.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta }))
      assert.equal(error.kind, 'crashed')
      assert.match(error.message, /ENOENT/)
      await new Promise((resolve) => setTimeout(resolve, 50))
      assert.equal(broken.logger.lines.filter((line) => line.message === 'functions worker started').length, 1, 'no replacement without work')
    } finally {
      await broken.close()
    }
  })

  test('a closed pool fails queued and running invocations as crashed', async () => {
    const isolated = testPool(bundleDir, { size: 1 })
    const running = isolated.invoke({ entrypoint: 'functions/sleep.ts', input: { ms: 5_000 }, meta })
    await new Promise((resolve) => setTimeout(resolve, 200))
    await isolated.close()
    assert.equal(failure(await running).kind, 'crashed')
    assert.equal(failure(await isolated.invoke({ entrypoint: 'functions/counter.ts', input: {}, meta })).kind, 'crashed')
  })
})
