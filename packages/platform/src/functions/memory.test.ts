// Functions memory limits against real Deno (security finding 6, issue 11): a worker over
// its resident-memory budget (ArrayBuffers, which V8's heap limit does not count) is killed,
// a worker that reaches its V8 heap limit ends itself, and both fail the invocations in
// flight with FUNCTION_MEMORY_EXCEEDED while the pool carries on with a fresh worker. The
// budgets are small (128 MiB resident, 64 MiB heap; an idle worker holds about 45 MiB) so
// the tests stay light.

import assert from 'node:assert/strict'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../config.ts'
import { isRetryable } from '../jobs/dispatcher.ts'
import { attemptNotSpent } from './failures.ts'
import { failureResponse, type FunctionFailure } from './failures.ts'
import { DEFAULT_MAX_HEAP_MB, DEFAULT_MEMORY_BUDGET_MB, type InvokeResult } from './pool.ts'
import { metaFor, removeBundle, testPool, writeBundle, type TestPool } from './test-bundle.ts'

const MIB = 1024 * 1024
const hasProc = existsSync('/proc/self/status')

const FIXTURES = {
  // Touches 3 x 256 MiB of ArrayBuffers, then holds them until the platform ends the worker.
  'functions/buffers.ts': `
    import { defineFunction, object } from '@service/server'
    const held: Uint8Array[] = []
    export default defineFunction({
      input: object({}),
      async handler() {
        for (let index = 0; index < 3; index += 1) {
          const block = new Uint8Array(256 * 1024 * 1024)
          block.fill(1)
          held.push(block)
          await new Promise((resolve) => setTimeout(resolve, 0))
        }
        await new Promise(() => {})
      },
    })`,
  // Grows the JavaScript heap without end.
  'functions/heap.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        const kept: unknown[] = []
        while (true) kept.push({ index: kept.length, label: 'item ' + kept.length })
      },
    })`,
  // Returns at once and leaves a timer that touches 3 x 256 MiB once the test has its result
  // (the test writes the file "gate" into the bundle).
  'functions/leaves-behind.ts': `
    import { defineFunction, object } from '@service/server'
    const held: Uint8Array[] = []
    async function allocateWhenOpen() {
      while (!(await Deno.stat('gate').then(() => true, () => false))) await new Promise((resolve) => setTimeout(resolve, 20))
      for (let index = 0; index < 3; index += 1) held.push(new Uint8Array(256 * 1024 * 1024).fill(1))
    }
    export default defineFunction({
      input: object({}),
      handler() {
        void allocateWhenOpen()
        return { pid: Deno.pid }
      },
    })`,
  // Reports its call, then waits until its worker ends.
  'functions/waits.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ log }) {
        await log.info('waiting')
        await new Promise(() => {})
      },
    })`,
  'functions/pid.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: () => ({ pid: Deno.pid }) })`,
}

const meta = metaFor()

function failure(result: InvokeResult): FunctionFailure {
  assert.equal(result.ok, false, `expected a failure, got ${JSON.stringify(result)}`)
  if (result.ok) throw new Error('unreachable')
  return result.error
}

function pidOf(result: InvokeResult): number {
  assert.equal(result.ok, true, `expected a value, got ${JSON.stringify(result)}`)
  if (!result.ok) throw new Error('unreachable')
  return (result.value as { pid: number }).pid
}

function assertMemoryExceeded(error: FunctionFailure, seen: RegExp): void {
  assert.equal(error.kind, 'crashed')
  assert.equal(error.kind === 'crashed' ? error.reason : undefined, 'memory_exceeded')
  assert.match(error.message, seen)
  const production = failureResponse(error, { environment: 'production' })
  assert.equal(production.status, 502)
  assert.deepEqual(production.body, { error: { code: 'FUNCTION_MEMORY_EXCEEDED', message: 'The Function went over its memory limit' } })
  const development = failureResponse(error, { environment: 'development' })
  assert.equal(development.body.error.code, 'FUNCTION_MEMORY_EXCEEDED')
  assert.match(development.body.error.message, seen)
}

describe('Functions memory limits', () => {
  let bundleDir: string

  before(() => {
    bundleDir = writeBundle(FIXTURES)
  })
  after(() => removeBundle(bundleDir))

  test('a Function holding ArrayBuffers past the resident budget ends with FUNCTION_MEMORY_EXCEEDED, with every invocation on its worker, and the pool carries on with a fresh worker', { skip: !hasProc && 'no /proc: only the heap limit applies' }, async () => {
    const pool = testPool(bundleDir, { size: 1, memoryBudgetMb: 128, maxHeapMb: 64 })
    try {
      const hostBefore = process.memoryUsage().rss
      const firstPid = pidOf(await pool.invoke({ entrypoint: 'functions/pid.ts', input: {}, meta }))
      const waiting = pool.invoke({ entrypoint: 'functions/waits.ts', input: {}, meta })
      while (pool.calls.length < 1) await new Promise((resolve) => setTimeout(resolve, 10))
      const hog = failure(await pool.invoke({ entrypoint: 'functions/buffers.ts', input: {}, meta }))
      assertMemoryExceeded(hog, /resident memory reached \d+ MiB, over the budget of 128 MiB/)
      // Which invocation held the memory cannot be told: the one waiting beside it fails the same way.
      assertMemoryExceeded(failure(await waiting), /over the budget of 128 MiB/)
      const ended = pool.logger.lines.find((line) => line.message === 'functions worker ended')
      assert.match(String(ended?.fields?.['reason']), /went over its memory budget/)

      const nextPid = pidOf(await pool.invoke({ entrypoint: 'functions/pid.ts', input: {}, meta }))
      assert.notEqual(nextPid, firstPid, 'the next invocation runs on a fresh worker')
      assert.equal(existsSync(`/proc/${firstPid}/status`) && /VmRSS/.test(readFileSync(`/proc/${firstPid}/status`, 'latin1')), false, 'the killed worker holds no memory')
      // The memory was the worker's: the platform's own process did not take it on.
      const grew = process.memoryUsage().rss - hostBefore
      assert.ok(grew < 128 * MIB, `the host grew by ${Math.round(grew / MIB)} MiB`)
    } finally {
      await pool.close()
    }
  })

  test('a Function growing the JavaScript heap past the heap limit fails with the same typed error, and the next call works', async () => {
    // The resident watch is off, so only the V8 heap limit can end this worker.
    const pool = testPool(bundleDir, { size: 1, memoryBudgetMb: 0, maxHeapMb: 64 })
    try {
      const firstPid = pidOf(await pool.invoke({ entrypoint: 'functions/pid.ts', input: {}, meta }))
      const error = failure(await pool.invoke({ entrypoint: 'functions/heap.ts', input: {}, meta }))
      assertMemoryExceeded(error, /JavaScript heap reached the limit of 64 MiB/)
      assert.notEqual(pidOf(await pool.invoke({ entrypoint: 'functions/pid.ts', input: {}, meta })), firstPid)
    } finally {
      await pool.close()
    }
  })

  test('an idle worker whose Function left a timer allocating is killed too', { skip: !hasProc && 'no /proc: only the heap limit applies' }, async () => {
    const pool = testPool(bundleDir, { size: 1, memoryBudgetMb: 128, maxHeapMb: 64 })
    try {
      const pid = pidOf(await pool.invoke({ entrypoint: 'functions/leaves-behind.ts', input: {}, meta }))
      writeFileSync(join(bundleDir, 'gate'), '')
      while (!pool.logger.lines.some((line) => line.message === 'functions worker ended')) await new Promise((resolve) => setTimeout(resolve, 20))
      const ended = pool.logger.lines.find((line) => line.message === 'functions worker ended')
      assert.equal(ended?.fields?.['pid'], pid)
      assert.match(String(ended?.fields?.['reason']), /over the budget of 128 MiB/)
      assert.notEqual(pidOf(await pool.invoke({ entrypoint: 'functions/pid.ts', input: {}, meta })), pid)
    } finally {
      await pool.close()
    }
  })

  test('every worker runs under a V8 heap limit by default', { skip: !hasProc && 'reads the worker command line from /proc' }, async () => {
    const pool: TestPool = testPool(bundleDir, { size: 1 })
    try {
      const pid = pidOf(await pool.invoke({ entrypoint: 'functions/pid.ts', input: {}, meta }))
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      assert.ok(args.includes(`--v8-flags=--max-old-space-size=${DEFAULT_MAX_HEAP_MB}`), args.join(' '))
    } finally {
      await pool.close()
    }
  })

  test('for jobs a memory kill is a crash: retryable, and counted (not a bystander)', () => {
    const memory: FunctionFailure = { kind: 'crashed', message: 'the Functions worker went over its memory limit', reason: 'memory_exceeded' }
    assert.equal(isRetryable(memory), true)
    assert.equal(attemptNotSpent(memory), false)
  })

  test('budgets are configuration: FUNCTION_MEMORY_MB and FUNCTION_HEAP_MB, validated, defaulting to the pool defaults', () => {
    const defaults = loadConfig({})
    assert.equal(defaults.functionMemoryMb, DEFAULT_MEMORY_BUDGET_MB)
    assert.equal(defaults.functionHeapMb, DEFAULT_MAX_HEAP_MB)
    const set = loadConfig({ FUNCTION_MEMORY_MB: '1024', FUNCTION_HEAP_MB: '0' })
    assert.equal(set.functionMemoryMb, 1024)
    assert.equal(set.functionHeapMb, 0)
    for (const [name, raw, pattern] of [
      ['FUNCTION_MEMORY_MB', '32', /FUNCTION_MEMORY_MB must be 0 \(off\) or a whole number of MiB from 64 to 1048576, got "32"/],
      ['FUNCTION_MEMORY_MB', '512MB', /FUNCTION_MEMORY_MB must be/],
      ['FUNCTION_HEAP_MB', '-1', /FUNCTION_HEAP_MB must be 0 \(off\) or a whole number of MiB from 16 to 1048576/],
      ['FUNCTION_HEAP_MB', '1.5', /FUNCTION_HEAP_MB must be/],
    ] as const) {
      assert.throws(() => loadConfig({ [name]: raw }), (error: unknown) => error instanceof ConfigError && pattern.test(error.message))
    }
  })

  test('a pool refuses a budget that is not a whole number of MiB', () => {
    assert.throws(() => testPool(bundleDir, { memoryBudgetMb: 1.5 }), /memoryBudgetMb must be a whole number of MiB/)
    assert.throws(() => testPool(bundleDir, { maxHeapMb: -1 }), /maxHeapMb must be a whole number of MiB/)
  })
})
