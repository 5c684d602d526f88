/**
 * Spare Functions workers: Deno processes started ahead of need, so that the first
 * invocation of a new pool (a release just deployed, a pool reaped after idling, the first
 * call after a restart) does not wait for Deno to start. Starting Deno, loading the worker
 * and `@service/server` is most of a cold start (38.5 of 42 ms on a 2-core machine at load
 * average 5); importing and running the Function is the rest.
 *
 * A spare is a worker like any other, started under the same sandbox (sandbox.ts) before it
 * knows which app it will serve. Its readable app directory is one that does not hold
 * anything yet: `<directory>/<host>/<slot>/`, created empty for it and made its cwd. The pool
 * that takes it writes its release's files there (hard links to the release's bundle, or
 * copies) and then sends the first invocation, which imports the Function from that
 * directory. So a spare:
 *
 * - has served no app before it is taken, and serves exactly one pool after (it never comes
 *   back here; it ends with its pool, and its directory is removed once it has exited);
 * - can read only its own directory and the SDK, never another spare's or a release's;
 * - holds no secret: its environment is the sandbox's fixed three variables, and secrets
 *   reach a Function only through context calls of a live invocation.
 *
 * Slots are reused (the lowest free number), so Deno's cache of transpiled modules, which is
 * keyed by file path, holds at most one entry per file per slot instead of one per worker
 * ever started. A host's directory is named after its process id; directories of processes
 * that no longer run (a crash) are removed when a host starts, with their cache entries.
 *
 * A spare that ends before it is taken is not restarted until the next `take`, so a Deno
 * that cannot start is never restarted in a loop. Idle spares run no code: they cost their
 * resident memory (about 40 MiB each with Deno 2.9, bench/functions/pool.ts measures it)
 * and no CPU.
 */
import { existsSync, linkSync, copyFileSync, mkdirSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../lib/logger.ts'
import type { WorkerMessage } from './protocol.ts'
import { workerCommand } from './sandbox.ts'
import { startWorkerProcess, type WorkerProcess } from './worker-process.ts'

/** The sandbox a worker runs under, besides its app directory; a pool takes spares only with the same. */
export interface WorkerSandbox {
  /** Absolute path of `@service/server`'s entry. */
  readonly sdkEntry: string
  readonly denoDir: string
  readonly denoPath: string
  readonly allowNet?: readonly string[]
  readonly denyNet?: readonly string[]
  /** V8 heap limit in MiB; left out for V8's own. */
  readonly maxHeapMb?: number
}

export interface SpareWorkersOptions {
  /** Spares kept started; 0 keeps none. */
  readonly count: number
  /** Where spares' app directories are made (the host uses `<bundlesDir>/.workers`). */
  readonly directory: string
  readonly sandbox: WorkerSandbox
  readonly logger: Logger
}

/** What a pool hands a spare when it takes it: the same handlers `startWorkerProcess` takes. */
export interface WorkerHandlers {
  onMessage(message: WorkerMessage, hasBytes: boolean, chars: number): void
  onStderr(line: string): void
  onEnd(reason: string): void
}

export interface SpareWorker {
  /** The worker's own app directory (its cwd), empty until the taker writes the release's files. */
  readonly directory: string
  readonly process: WorkerProcess
  /** Whether the worker has sent `ready` (the taker must then not expect another). */
  readonly readied: boolean
  /** Routes the worker's messages, stderr and end to the taker from now on. */
  attach(handlers: WorkerHandlers): void
}

export interface SpareWorkers {
  /** The key of the sandbox the spares run under (`sandboxKey`). */
  readonly key: string
  /** A started spare (ready ones first), or undefined when none is; another starts in its place. */
  take(): SpareWorker | undefined
  /** Resolves when `count` spares have sent `ready` (or one of them ended, or the spares closed). For benchmarks and tests. */
  ready(): Promise<void>
  /** Process ids of the spares not taken yet. */
  idle(): number[]
  /** Ends the spares not taken; taken ones end with their pools. */
  close(): Promise<void>
}

/** Equal for two sandboxes exactly when their workers are started with the same flags. */
export function sandboxKey(sandbox: WorkerSandbox): string {
  return JSON.stringify([sandbox.sdkEntry, sandbox.denoDir, sandbox.denoPath, sandbox.allowNet ?? null, sandbox.denyNet ?? null, sandbox.maxHeapMb ?? null])
}

interface Spare {
  readonly slot: number
  readonly directory: string
  readonly process: WorkerProcess
  readied: boolean
  ended: boolean
  /** Set while the replacement of this taken spare waits (see `take`). */
  refill: ReturnType<typeof setTimeout> | undefined
  handlers: WorkerHandlers | undefined
}

/** Longest wait, after a spare is taken, before its replacement starts. */
const REFILL_DELAY_MS = 250
let hostSerial = 0
const WORKER_SCRIPT = fileURLToPath(new URL('./worker/worker.ts', import.meta.url))

/**
 * Starts `count` spares now and keeps that many started.
 *
 * @example
 * const spares = createSpareWorkers({ count: 1, directory: join(bundlesDir, '.workers'), sandbox, logger })
 * createFunctionPool({ ..., spares })
 */
export function createSpareWorkers(options: SpareWorkersOptions): SpareWorkers {
  if (!Number.isInteger(options.count) || options.count < 0) throw new TypeError('the spare worker count must be a whole number')
  const sandbox = options.sandbox
  const logger = options.logger
  mkdirSync(options.directory, { recursive: true })
  const root = realpathSync(options.directory)
  removeAbandoned(root, sandbox.denoDir, logger)
  hostSerial += 1
  const hostDirectory = join(root, `${process.pid}-${hostSerial}`)
  mkdirSync(hostDirectory, { recursive: true })
  const workerScript = realpathSync(WORKER_SCRIPT)
  const sdkEntry = realpathSync(sandbox.sdkEntry)

  const idle: Spare[] = []
  const slots = new Set<number>()
  let closed = false
  /** Set when a spare ended before it was taken: no new one starts until the next `take`. */
  let broken = false
  let waiters: Array<() => void> = []

  function settleWaiters(): void {
    if (!closed && !broken && idle.filter((spare) => spare.readied).length < options.count) return
    const settled = waiters
    waiters = []
    for (const settle of settled) settle()
  }

  function freeSlot(): number {
    let slot = 0
    while (slots.has(slot)) slot += 1
    return slot
  }

  /**
   * Starts the replacement of a taken spare, once, in a later turn of the event loop:
   * spawning a process blocks Node for milliseconds, which must not delay the answer that
   * the taken worker just gave.
   */
  function refill(spare: Spare): void {
    if (spare.refill === undefined) return
    clearTimeout(spare.refill)
    spare.refill = undefined
    setImmediate(fill)
  }

  function fill(): void {
    while (!closed && !broken && idle.length < options.count) {
      try {
        start()
      } catch (error) {
        // The directory could not be made: pools start their own workers until the next `take` tries again.
        logger.warn('could not start a spare functions worker', { error: (error as Error).message })
        broken = true
        settleWaiters()
      }
    }
  }

  function start(): void {
    const slot = freeSlot()
    const directory = join(hostDirectory, String(slot))
    // An earlier worker's directory is removed before its slot is freed; start empty regardless.
    rmSync(directory, { recursive: true, force: true })
    mkdirSync(directory)
    const command = workerCommand({
      bundleDir: directory,
      sdkEntry,
      workerScript,
      denoDir: sandbox.denoDir,
      ...(sandbox.allowNet === undefined ? {} : { allowNet: sandbox.allowNet }),
      ...(sandbox.denyNet === undefined ? {} : { denyNet: sandbox.denyNet }),
      ...(sandbox.maxHeapMb === undefined ? {} : { maxHeapMb: sandbox.maxHeapMb }),
    })
    let spare: Spare | undefined
    const child = startWorkerProcess({
      denoPath: sandbox.denoPath,
      args: command.args,
      env: command.env,
      cwd: directory,
      onMessage(message, hasBytes, chars) {
        if (spare === undefined) return
        if (spare.handlers !== undefined) {
          spare.handlers.onMessage(message, hasBytes, chars)
          if (message.type !== 'ready') refill(spare)
          return
        }
        // Nothing but `ready` can come before a spare is taken: no Function has loaded.
        if (message.type === 'ready' && !spare.readied) {
          spare.readied = true
          settleWaiters()
          return
        }
        spare.process.kill(`the spare worker broke the protocol: ${message.type} before it was taken`)
      },
      onStderr(line) {
        if (spare?.handlers !== undefined) spare.handlers.onStderr(line)
        else logger.info('spare functions worker output', { pid: spare?.process.pid, line })
      },
      onEnd(reason) {
        if (spare === undefined || spare.ended) return
        spare.ended = true
        if (spare.handlers !== undefined) {
          spare.handlers.onEnd(reason)
          refill(spare)
          return
        }
        const index = idle.indexOf(spare)
        if (index !== -1) idle.splice(index, 1)
        if (!closed) {
          logger.warn('spare functions worker ended before it was taken', { pid: spare.process.pid, reason })
          broken = true
          settleWaiters()
        }
      },
    })
    spare = { slot, directory, process: child, readied: false, ended: false, refill: undefined, handlers: undefined }
    slots.add(slot)
    idle.push(spare)
    const ownSpare = spare
    void child.exited.then(() => {
      // Only once the process is gone can no one read the directory: then the slot is free again.
      try {
        rmSync(ownSpare.directory, { recursive: true, force: true })
        slots.delete(ownSpare.slot)
      } catch (error) {
        logger.warn('could not remove a functions worker directory; its slot stays taken', { directory: ownSpare.directory, error: (error as Error).message })
      }
    })
    logger.info('spare functions worker started', { pid: child.pid, slot })
  }

  fill()

  return {
    key: sandboxKey(sandbox),
    take() {
      if (closed) return undefined
      if (idle.length === 0 && broken) {
        broken = false
        fill()
      }
      const index = idle.findIndex((spare) => spare.readied)
      const [spare] = idle.splice(index === -1 ? 0 : index, 1)
      if (spare === undefined) return undefined
      // The replacement starts once the taken worker has answered its first message (or after
      // REFILL_DELAY_MS): starting Deno beside the first invocation's import would slow it.
      spare.refill = setTimeout(() => refill(spare), REFILL_DELAY_MS)
      spare.refill.unref()
      return {
        directory: spare.directory,
        process: spare.process,
        readied: spare.readied,
        attach(handlers) {
          spare.handlers = handlers
        },
      }
    },
    ready() {
      return new Promise<void>((resolve) => {
        waiters.push(resolve)
        settleWaiters()
      })
    },
    idle: () => idle.flatMap((spare) => (spare.process.pid === undefined ? [] : [spare.process.pid])),
    async close() {
      closed = true
      const exits = idle.map((spare) => spare.process.exited)
      for (const spare of idle.splice(0)) spare.process.kill('the spare workers closed')
      settleWaiters()
      await Promise.all(exits)
    },
  }
}

/**
 * Places a release's files in a spare's empty directory: hard links (instant whatever the
 * bundle's size; nobody writes to either name) or, across file systems, copies.
 */
export function placeBundle(bundleDir: string, directory: string): void {
  for (const entry of readdirSync(bundleDir, { withFileTypes: true })) {
    const from = join(bundleDir, entry.name)
    const to = join(directory, entry.name)
    if (entry.isDirectory()) {
      mkdirSync(to)
      placeBundle(from, to)
    } else if (entry.isFile()) {
      try {
        linkSync(from, to)
      } catch {
        copyFileSync(from, to)
      }
    } else {
      throw new Error(`the bundle holds ${from}, which is not a regular file or directory`)
    }
  }
}

/** Removes the spare directories of processes that no longer run, and their entries in Deno's cache. */
function removeAbandoned(root: string, denoDir: string, logger: Logger): void {
  for (const name of readdirSync(root)) {
    const pid = Number(name.split('-')[0])
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || running(pid)) continue
    const directory = join(root, name)
    rmSync(directory, { recursive: true, force: true })
    // Deno keeps transpiled local modules under gen/file/<absolute path>.js.
    const generated = join(denoDir, 'gen', 'file', directory)
    if (existsSync(generated)) rmSync(generated, { recursive: true, force: true })
    logger.info('removed the spare worker directories of an ended process', { directory })
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
