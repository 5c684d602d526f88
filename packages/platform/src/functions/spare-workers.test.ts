// Spare Functions workers against real Deno (issue 14, cold starts): a pool's first
// invocation runs in a Deno process started before the pool existed; a spare serves one pool
// only and ends with it; it reads its own release's files and nothing else, holds no
// environment, and keeps the heap limit and the resident-memory watch; a pool refuses spares
// of another sandbox; a spare that ends untaken is not restarted in a loop; directories are
// removed once their process has exited.

import assert from 'node:assert/strict'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../config.ts'
import { createFunctionPool, poolSandbox, type InvokeResult } from './pool.ts'
import { createSpareWorkers, type SpareWorkers } from './spare-workers.ts'
import { SDK_ENTRY, metaFor, recordingLogger, removeBundle, writeBundle } from './test-bundle.ts'
import { eventually } from '../../test/eventually.ts'

const FIXTURES = {
  'functions/where.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: () => ({ pid: Deno.pid, cwd: Deno.cwd(), data: Deno.readTextFileSync('data.txt') }) })`,
  'functions/probe.ts': `
    import { array, defineFunction, object, string } from '@service/server'
    function attempt(run: () => unknown): string {
      try { run(); return 'allowed' } catch (error) { return (error as Error).name }
    }
    export default defineFunction({
      input: object({ paths: array(string()) }),
      handler: async ({ input }) => ({
        reads: input.paths.map((path) => attempt(() => Deno.readDirSync(path).next())),
        parent: attempt(() => Deno.readDirSync('..').next()),
        env: attempt(() => Deno.env.get('HOME')),
        write: attempt(() => Deno.writeTextFileSync('written.txt', 'x')),
        loopback: await fetch('http://127.0.0.1:80/').then(() => 'allowed', (error) => (error as Error).name),
      }),
    })`,
  'functions/heap.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        const kept: unknown[] = []
        while (true) kept.push({ index: kept.length, label: 'item ' + kept.length })
      },
    })`,
  'functions/buffers.ts': `
    import { defineFunction, object } from '@service/server'
    const held: Uint8Array[] = []
    export default defineFunction({
      input: object({}),
      async handler() {
        for (let index = 0; index < 3; index += 1) {
          held.push(new Uint8Array(256 * 1024 * 1024).fill(1))
          await new Promise((resolve) => setTimeout(resolve, 0))
        }
        await new Promise(() => {})
      },
    })`,
  'data.txt': 'release A',
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function exited(pid: number): Promise<void> {
  while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 20))
}

function valueOf(result: InvokeResult): Record<string, unknown> {
  assert.equal(result.ok, true, JSON.stringify(result))
  return (result as { value: Record<string, unknown> }).value
}

describe('spare Functions workers', () => {
  let bundleA: string
  let bundleB: string
  let denoDir: string
  let workersDir: string
  const sandbox = () => poolSandbox({ sdkEntry: SDK_ENTRY, denoDir, maxHeapMb: 64 })
  const poolOver = (bundleDir: string, spares: SpareWorkers, memoryBudgetMb = 0) =>
    createFunctionPool({
      bundleDir, sdkEntry: SDK_ENTRY, size: 1, denoDir, maxHeapMb: 64, memoryBudgetMb, timeoutMs: 20_000,
      logger: recordingLogger(), onContextCall: async () => null, spares,
    })

  before(() => {
    bundleA = writeBundle(FIXTURES)
    bundleB = writeBundle({ ...FIXTURES, 'data.txt': 'release B' })
    denoDir = join(dirname(bundleA), 'deno-cache')
    workersDir = join(dirname(bundleA), 'workers')
  })
  after(() => {
    removeBundle(bundleA)
    removeBundle(bundleB)
  })

  test('a new pool runs its first invocation in the spare started before it, and another spare takes its place', async () => {
    const spares = createSpareWorkers({ count: 1, directory: workersDir, sandbox: sandbox(), logger: recordingLogger() })
    try {
      await spares.ready()
      const [sparePid] = spares.idle()
      assert.ok(sparePid !== undefined)
      const pool = poolOver(bundleA, spares)
      try {
        const value = valueOf(await pool.invoke({ entrypoint: 'functions/where.ts', input: {}, meta: metaFor() }))
        assert.equal(value.pid, sparePid)
        assert.equal(value.data, 'release A')
        await spares.ready()
        const [replacement] = spares.idle()
        assert.ok(replacement !== undefined && replacement !== sparePid)
      } finally {
        await pool.close()
      }
    } finally {
      await spares.close()
    }
  })

  test('a spare serves one pool only: it ends with that pool and never returns to the spares', async () => {
    const spares = createSpareWorkers({ count: 1, directory: workersDir, sandbox: sandbox(), logger: recordingLogger() })
    try {
      await spares.ready()
      const poolA = poolOver(bundleA, spares)
      const first = valueOf(await poolA.invoke({ entrypoint: 'functions/where.ts', input: {}, meta: metaFor() }))
      await poolA.close()
      await exited(first.pid as number)
      await spares.ready()
      assert.ok(!spares.idle().includes(first.pid as number))
      const poolB = poolOver(bundleB, spares)
      try {
        const second = valueOf(await poolB.invoke({ entrypoint: 'functions/where.ts', input: {}, meta: metaFor() }))
        assert.notEqual(second.pid, first.pid)
        assert.equal(second.data, 'release B')
      } finally {
        await poolB.close()
      }
    } finally {
      await spares.close()
    }
  })

  test('a worker from a spare reads its own release only (not the bundle it came from, another worker\'s directory, the environment), writes nothing, and cannot reach loopback', async () => {
    const spares = createSpareWorkers({ count: 1, directory: workersDir, sandbox: sandbox(), logger: recordingLogger() })
    const poolA = poolOver(bundleA, spares)
    const poolB = poolOver(bundleB, spares)
    try {
      await spares.ready()
      const a = valueOf(await poolA.invoke({ entrypoint: 'functions/where.ts', input: {}, meta: metaFor() }))
      await spares.ready()
      const [idlePid] = spares.idle()
      assert.ok(idlePid !== undefined)
      const b = valueOf(await poolB.invoke({ entrypoint: 'functions/where.ts', input: {}, meta: metaFor() }))
      assert.equal(b.pid, idlePid)
      assert.notEqual(a.cwd, b.cwd)
      const probe = valueOf(await poolA.invoke({
        entrypoint: 'functions/probe.ts',
        input: { paths: ['.', b.cwd as string, bundleA, bundleB, workersDir] },
        meta: metaFor(),
      }))
      assert.deepEqual(probe, {
        reads: ['allowed', 'NotCapable', 'NotCapable', 'NotCapable', 'NotCapable'],
        parent: 'NotCapable',
        env: 'NotCapable',
        write: 'NotCapable',
        loopback: 'NotCapable',
      })
    } finally {
      await poolA.close()
      await poolB.close()
      await spares.close()
    }
  })

  test('a worker from a spare keeps the V8 heap limit and the resident-memory watch', async () => {
    const spares = createSpareWorkers({ count: 1, directory: workersDir, sandbox: sandbox(), logger: recordingLogger() })
    try {
      await spares.ready()
      const heapPool = poolOver(bundleA, spares)
      try {
        const [sparePid] = spares.idle()
        const result = await heapPool.invoke({ entrypoint: 'functions/heap.ts', input: {}, meta: metaFor() })
        assert.equal(result.ok, false)
        assert.equal(!result.ok && result.error.kind === 'crashed' ? result.error.reason : undefined, 'memory_exceeded')
        await exited(sparePid as number)
      } finally {
        await heapPool.close()
      }
      if (existsSync('/proc/self/status')) {
        await spares.ready()
        const [sparePid] = spares.idle()
        const residentPool = poolOver(bundleA, spares, 128)
        try {
          const result = await residentPool.invoke({ entrypoint: 'functions/buffers.ts', input: {}, meta: metaFor() })
          assert.equal(!result.ok && result.error.kind === 'crashed' ? result.error.reason : undefined, 'memory_exceeded')
          assert.match(!result.ok ? result.error.message : '', /resident memory/)
          await exited(sparePid as number)
        } finally {
          await residentPool.close()
        }
      }
    } finally {
      await spares.close()
    }
  })

  test('a pool refuses spares started under another sandbox', async () => {
    const spares = createSpareWorkers({ count: 0, directory: workersDir, sandbox: poolSandbox({ sdkEntry: SDK_ENTRY, denoDir, maxHeapMb: 128 }), logger: recordingLogger() })
    try {
      assert.throws(() => poolOver(bundleA, spares), /spare workers must run under the pool's own sandbox/)
    } finally {
      await spares.close()
    }
  })

  test('a spare that ends untaken is replaced only when a pool next asks for one', async () => {
    const logger = recordingLogger()
    const spares = createSpareWorkers({ count: 1, directory: workersDir, sandbox: sandbox(), logger })
    try {
      await spares.ready()
      const [sparePid] = spares.idle()
      process.kill(sparePid as number, 'SIGKILL')
      await exited(sparePid as number)
      await spares.ready()
      // Logged once the child's output is drained after its exit (up to half a second later).
      await eventually(async () => logger.lines.some((line) => line.message === 'spare functions worker ended before it was taken'),
        'the ended spare was logged')
      assert.deepEqual(spares.idle(), [])
      const pool = poolOver(bundleA, spares)
      try {
        const value = valueOf(await pool.invoke({ entrypoint: 'functions/where.ts', input: {}, meta: metaFor() }))
        assert.equal(value.data, 'release A')
      } finally {
        await pool.close()
      }
    } finally {
      await spares.close()
    }
  })

  test('directories are removed once their worker has exited, and closing ends the idle spares', async () => {
    const spares = createSpareWorkers({ count: 1, directory: workersDir, sandbox: sandbox(), logger: recordingLogger() })
    await spares.ready()
    const pool = poolOver(bundleA, spares)
    const value = valueOf(await pool.invoke({ entrypoint: 'functions/where.ts', input: {}, meta: metaFor() }))
    assert.ok(existsSync(join(value.cwd as string, 'data.txt')))
    await pool.close()
    await exited(value.pid as number)
    await spares.ready()
    const [idlePid] = spares.idle()
    await spares.close()
    await exited(idlePid as number)
    // The directory goes after the process's exit is seen (the same turn, or the next).
    await eventually(async () => !existsSync(value.cwd as string), 'the worker directory was removed')
    const hostDirectory = dirname(value.cwd as string)
    await eventually(async () => readdirSync(hostDirectory).length === 0, 'every worker directory was removed')
  })
})

describe('FUNCTION_SPARE_WORKERS', () => {
  test('defaults to one spare, takes 0 to keep none, and refuses anything but a whole number', () => {
    assert.equal(loadConfig({}).functionSpareWorkers, 1)
    assert.equal(loadConfig({ FUNCTION_SPARE_WORKERS: '0' }).functionSpareWorkers, 0)
    assert.equal(loadConfig({ FUNCTION_SPARE_WORKERS: '3' }).functionSpareWorkers, 3)
    for (const raw of ['-1', '1.5', 'two']) {
      assert.throws(() => loadConfig({ FUNCTION_SPARE_WORKERS: raw }), (error: unknown) => error instanceof ConfigError && /FUNCTION_SPARE_WORKERS/.test(error.message))
    }
  })
})
