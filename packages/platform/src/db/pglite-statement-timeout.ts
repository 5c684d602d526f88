/**
 * A statement timeout for PGlite. PGlite runs Postgres in this thread, so Postgres' own
 * `statement_timeout` never fires there: its timer is a JavaScript callback, and a running
 * statement keeps the event loop from calling it. One app's statement that sleeps or loops
 * would hold the one session, and with it every request of every app, for as long as it runs.
 *
 * Here Postgres runs on a shared memory (its WebAssembly binaries are declared so when they
 * load, `wasm-shared-memory.ts`) and a watchdog thread times each guarded statement. When one
 * outlasts its time, the watchdog raises what Postgres' cancel signal handler raises:
 * `QueryCancelPending` and `InterruptPending`, and `MyLatch`, which PGlite's sleep polls. At
 * its next interrupt check (every loop iteration, row and PL/pgSQL statement) the statement
 * fails with 57014, as on PostgreSQL, and the session carries on. PL/pgSQL can catch that
 * (`exception when query_canceled`): a statement still running `graceMs` after its cancel gets
 * `ProcDiePending`, which nothing catches. That ends Postgres' backend; the caller must open
 * the database again (`pglite.ts` does, from the same data).
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Worker } from 'node:worker_threads'
import type { Extension, PGlite } from '@electric-sql/pglite'
import { importedMemoryLimits, shareImportedMemory } from './wasm-shared-memory.ts'

/** What became of a guarded statement. `ended`: the backend is gone; open the database again. */
export type GuardOutcome = 'finished' | 'cancelled' | 'ended'

/** The error of a statement stopped by the timeout: PostgreSQL's, code and message. */
export class StatementTimeoutError extends Error {
  override name = 'StatementTimeoutError'
  readonly code = '57014'
  readonly severity = 'ERROR'
  constructor(options: { cause?: unknown } = {}) {
    super('canceling statement due to statement timeout', options)
  }
}

export interface StatementTimer {
  /** Starts timing the statement about to run; `disarm` when it returns or throws. */
  arm(timeoutMs: number): void
  disarm(): GuardOutcome
  close(): Promise<void>
}

export interface StatementTimeout {
  /** Give it to `PGlite.create` among the extensions (the name is yours to choose). */
  extension: Extension
  /** Starts the watchdog for the instance `extension` was given to. */
  attach(pg: PGlite): StatementTimer
}

/** Postgres' interrupt flags and latch pointer: exported data symbols of its binary. */
const SYMBOLS = ['_InterruptPending', '_QueryCancelPending', '_ProcDiePending', '_MyLatch'] as const
/** Where PGlite's file system keeps Postgres' loadable libraries (plpgsql, extensions). */
const LIBRARY_DIR = '/pglite/lib'

let sharedModule: Promise<{ module: WebAssembly.Module; maxPages: number }> | null = null

/** PGlite's Postgres compiled once per process with its memory declared shared. */
function sharedPostgres(): Promise<{ module: WebAssembly.Module; maxPages: number }> {
  sharedModule ??= (async () => {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite')
    const original = new Uint8Array(readFileSync(join(dirname(entry), 'pglite.wasm')))
    // PGlite creates its memory with a maximum of 2 GiB, and its binary declares the same.
    const maxPages = importedMemoryLimits(original)?.max ?? 32768
    const module = await WebAssembly.compile(shareImportedMemory(original, maxPages) as Uint8Array<ArrayBuffer>)
    return { module, maxPages }
  })()
  sharedModule.catch(() => {
    sharedModule = null
  })
  return sharedModule
}

interface EmscriptenFs {
  readdir(path: string): string[]
  stat(path: string): { mode: number }
  isDir(mode: number): boolean
  readFile(path: string): Uint8Array
  writeFile(path: string, data: Uint8Array): void
  createPreloadedFile: (parent: string, name: string, data: unknown, ...rest: unknown[]) => unknown
}

/** Declares every library already in the file system shared (those of PGlite's own bundle). */
function shareLibraries(fs: EmscriptenFs, dir: string): void {
  for (const name of fs.readdir(dir)) {
    if (name === '.' || name === '..') continue
    const path = `${dir}/${name}`
    if (fs.isDir(fs.stat(path).mode)) shareLibraries(fs, path)
    else if (name.endsWith('.so')) {
      const bytes = fs.readFile(path)
      const shared = shareImportedMemory(bytes)
      if (shared !== bytes) fs.writeFile(path, shared)
    }
  }
}

/** Extension libraries (pgvector) arrive later, through preloading: declared shared on the way in. */
function shareLibrariesOnPreload(fs: EmscriptenFs): void {
  const preload = fs.createPreloadedFile
  fs.createPreloadedFile = (parent, name, data, ...rest) =>
    preload.call(fs, parent, name, name.endsWith('.so') && data instanceof Uint8Array ? shareImportedMemory(data) : data, ...rest)
}

// The watchdog, in its own thread (plain JavaScript: it must not need a loader). Control word:
// a generation number times 8 plus a phase; every change is a compare-and-swap, so the watchdog
// never fires for a statement the main thread has already disarmed. Arming wakes nobody (a
// wake-up per statement cost about 40 µs): the watchdog looks every POLL_MS, and once it sees
// a statement armed it sleeps until that statement's deadline, counted from when it was armed.
const POLL_MS = 50
const WATCHDOG = `
const { workerData } = require('node:worker_threads')
const control = new Int32Array(workerData.control, 0, 2)
const armedAt = new Float64Array(workerData.control, 8, 1)
const POLL_MS = ${POLL_MS}
const now = () => performance.timeOrigin + performance.now()
const heap = new Int32Array(workerData.memory)
const { interruptPending, queryCancelPending, procDiePending, myLatch, graceMs } = workerData
const PHASE = 7, ARMED = 1, FIRING = 2, CANCELLED = 3, DYING = 4, DIED = 5, CLOSED = 6
function raise(flag) {
  Atomics.store(heap, flag >> 2, 1)
  Atomics.store(heap, interruptPending >> 2, 1)
  const latch = Atomics.load(heap, myLatch >> 2)
  if (latch > 0 && latch % 4 === 0 && latch < heap.byteLength) Atomics.store(heap, latch >> 2, 1)
}
for (;;) {
  const word = Atomics.load(control, 0)
  const phase = word & PHASE
  if (phase === CLOSED) break
  if (phase !== ARMED) { Atomics.wait(control, 0, word, POLL_MS); continue }
  // Written before the word: a stale pair only fails the compare-and-swap below.
  const left = armedAt[0] + Atomics.load(control, 1) - now()
  if (left > 0) { Atomics.wait(control, 0, word, Math.min(left, POLL_MS)); continue }
  const base = word & ~PHASE
  if (Atomics.compareExchange(control, 0, word, base | FIRING) !== word) continue
  raise(queryCancelPending)
  Atomics.store(control, 0, base | CANCELLED)
  const graceEnd = performance.now() + graceMs
  let still = true
  while (still) {
    const wait = graceEnd - performance.now()
    if (wait <= 0) break
    Atomics.wait(control, 0, base | CANCELLED, wait)
    still = Atomics.load(control, 0) === (base | CANCELLED)
  }
  if (!still || Atomics.compareExchange(control, 0, base | CANCELLED, base | DYING) !== (base | CANCELLED)) continue
  raise(procDiePending)
  Atomics.store(control, 0, base | DIED)
}
`

const PHASE = 7
const IDLE = 0
const ARMED = 1
const CANCELLED = 3
const DIED = 5
const CLOSED = 6

/**
 * A statement timeout for one PGlite instance.
 *
 * @example
 *   const timeout = statementTimeout({ graceMs: 1000 })
 *   const pg = await PGlite.create({ extensions: { timeout: timeout.extension } })
 *   const timer = timeout.attach(pg)
 *   timer.arm(5000)
 *   try { await pg.query('select slow()') } finally { if (timer.disarm() === 'ended') reopen() }
 */
export function statementTimeout(options: { graceMs: number }): StatementTimeout {
  let memory: WebAssembly.Memory | null = null
  const extension: Extension = {
    name: 'statement-timeout',
    async setup(_pg, emscriptenOpts: Record<string, unknown> & { wasmMemory: WebAssembly.Memory; preRun?: unknown[]; postRun?: unknown[] }) {
      const { module, maxPages } = await sharedPostgres()
      memory = new WebAssembly.Memory({ initial: emscriptenOpts.wasmMemory.buffer.byteLength / 65536, maximum: maxPages, shared: true })
      return {
        emscriptenOpts: {
          ...emscriptenOpts,
          wasmMemory: memory,
          preRun: [...(emscriptenOpts.preRun ?? []), (mod: { FS: EmscriptenFs }) => shareLibrariesOnPreload(mod.FS)],
          postRun: [...(emscriptenOpts.postRun ?? []), (mod: { FS: EmscriptenFs }) => shareLibraries(mod.FS, LIBRARY_DIR)],
          // Synchronous, so that a failure rejects PGlite.create instead of leaving it waiting.
          instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance, module: WebAssembly.Module) => void) {
            done(new WebAssembly.Instance(module, imports), module)
            return {}
          },
        },
      }
    },
  }

  function attach(pg: PGlite): StatementTimer {
    if (!memory || !(memory.buffer instanceof SharedArrayBuffer)) throw new Error('the statement timeout extension was not set up for this PGlite')
    const exported = pg.Module as unknown as Record<string, unknown>
    const addresses = SYMBOLS.map((name) => exported[name])
    if (!addresses.every((a): a is number => typeof a === 'number' && a > 0 && a % 4 === 0)) {
      throw new Error(`this PGlite does not export ${SYMBOLS.join(', ')}; the statement timeout cannot work`)
    }
    const [interruptPending, queryCancelPending, procDiePending, myLatch] = addresses as [number, number, number, number]
    const heap = new Int32Array(memory.buffer)
    const shared = new SharedArrayBuffer(16)
    const control = new Int32Array(shared, 0, 2)
    const armedAt = new Float64Array(shared, 8, 1)
    const worker = new Worker(WATCHDOG, {
      eval: true,
      workerData: { control: shared, memory: memory.buffer, interruptPending, queryCancelPending, procDiePending, myLatch, graceMs: options.graceMs },
    })
    worker.unref()
    let generation = 0
    let armed = IDLE

    const clearFlags = () => {
      Atomics.store(heap, queryCancelPending >> 2, 0)
      Atomics.store(heap, procDiePending >> 2, 0)
      Atomics.store(heap, interruptPending >> 2, 0)
    }

    return {
      arm(timeoutMs) {
        generation = (generation + 1) & 0x0fffffff
        armed = (generation << 3) | ARMED
        armedAt[0] = performance.timeOrigin + performance.now()
        Atomics.store(control, 1, Math.max(1, Math.round(timeoutMs)))
        Atomics.store(control, 0, armed)
      },
      disarm() {
        const idle = armed & ~PHASE
        for (;;) {
          const word = Atomics.compareExchange(control, 0, armed, idle)
          if (word === armed) return 'finished'
          const phase = word & PHASE
          // The statement may have returned before Postgres saw the flags: they must not
          // cancel the next statement, which may be the platform's own.
          if (phase === CANCELLED && Atomics.compareExchange(control, 0, word, idle) === word) {
            clearFlags()
            return 'cancelled'
          }
          if (phase === DIED) {
            clearFlags()
            Atomics.store(control, 0, idle)
            return 'ended'
          }
          // Not armed (disarmed twice, or closed): nothing to undo.
          if (phase === IDLE || phase === CLOSED || (word & ~PHASE) !== idle) return 'finished'
          // FIRING or DYING: the watchdog is writing the flags this instant.
        }
      },
      async close() {
        Atomics.store(control, 0, CLOSED)
        Atomics.notify(control, 0)
        await worker.terminate()
      },
    }
  }

  return { extension, attach }
}
