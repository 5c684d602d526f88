/**
 * A warm pool of sandboxed Deno workers for one app release and namespace (the caller
 * creates one pool per pair). `invoke` runs a Function and resolves with its result or a
 * typed failure; it never rejects.
 *
 * Scheduling: an invocation goes to the least busy live worker below the per-worker
 * concurrency limit (workers are async, so one worker runs many invocations); when every
 * worker is busy and the pool is below `size`, another worker starts, and past that the
 * invocation queues. Workers start on demand (or with `warm`), and a worker that dies is
 * replaced when there is work for it, so a Deno that cannot start is never restarted in
 * a loop. A pool given `spares` takes a started Deno process from them when one is there
 * (spare-workers.ts) and links its release's files into that process's own directory, so
 * its first invocation does not wait for Deno to start.
 *
 * Capabilities: each invocation gets a random token. A context call from a worker reaches
 * `onContextCall` only when its token belongs to a live invocation of that same worker
 * and names that invocation's id; the call then carries the pool's own record of the
 * invocation (`meta`), never identity from the message. The token dies when the
 * invocation ends, and the call's `signal` aborts then.
 *
 * Timeouts cover the wait in the queue and the run. An invocation past its timeout fails
 * with `timeout`; if it was running, its worker is killed (a Function may be stuck in a
 * loop), which fails the worker's other invocations with `crashed`, marked with the reason
 * `worker_replaced_for_timeout_of_another_invocation` (bystanders: the jobs dispatcher
 * returns such an attempt to waiting without counting it; HTTP callers get their 502). One
 * still queued at its timeout never started: its `timeout` carries the reason `not_started`
 * (failures.ts), so the dispatcher does not count that attempt either; HTTP callers get the
 * 504 of any timeout.
 *
 * Memory: every worker runs under a V8 heap limit (`maxHeapMb`) and, on Linux, a watch of
 * its resident memory (`memoryBudgetMb`, memory-watch.ts), which also counts ArrayBuffers
 * and native memory that the heap limit does not. A worker over either ends (Deno ends
 * itself at the heap limit, reporting it on stderr; the watch kills it), and its in-flight
 * invocations fail with `crashed` and the reason `memory_exceeded` (FUNCTION_MEMORY_EXCEEDED).
 *
 * Byte results (`bytes: true`, for HTTP callers; see protocol.ts): `invoke` resolves at
 * the worker's `head` with a `ReadableStream` whose every read pulls one piece from the
 * worker, so the worker produces only as fast as the HTTP response is read (at most
 * BYTE_RESULT_BUFFER pieces wait here). The invocation stays running (capability,
 * concurrency slot and timeout) until the stream ends; a timeout or crash then errors the
 * stream, and cancelling the stream cancels the Function's.
 *
 * The worker is untrusted (Function code runs in it and can write to its stdout, see
 * protocol.ts). Every message is checked against the pool's own state, and any message the
 * protocol does not allow ends the worker, failing its invocations as `crashed`: a second
 * `ready`, a `result`, `loaded`, `head` or `chunk` for no invocation or load of it (except
 * the one answer that may cross a byte result's `cancel`), a `head` not asked for, a
 * `chunk` when no pull is outstanding or over BYTE_CHUNK_BYTES, a `result` of a byte result
 * that answers no pull. Message sizes are capped per type before parsing
 * (worker-process.ts), and the pool stops reading a worker while its open context calls
 * hold more than OPEN_CALLS_MAX calls or OPEN_CALL_CHARS_MAX characters.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdirSync, readdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../lib/logger.ts'
import { decodeBytes, encodeBytes } from './bytes.ts'
import { resolveDenoBinary } from './deno-binary.ts'
import { entrypointProblem } from './entrypoint.ts'
import type { FunctionFailure, FunctionResult } from './failures.ts'
import {
  BYTE_CHUNK_BYTES,
  MAX_FAILURE_MESSAGE_CHARS,
  MAX_FAILURE_STACK_CHARS,
  serviceErrorProblem,
  type CallMessage,
  type ChunkMessage,
  type HeadMessage,
  type ResultMessage,
  type WireCallError,
  type WireFailure,
  type WireHttpRoute,
  type WireIntegration,
  type WireMeta,
  type WorkerMessage,
} from './protocol.ts'
import { createMemoryWatch } from './memory-watch.ts'
import { workerCommand } from './sandbox.ts'
import { placeBundle, sandboxKey, type SpareWorkers, type WorkerSandbox } from './spare-workers.ts'
import { startWorkerProcess, type WorkerProcess } from './worker-process.ts'

/**
 * Who and what an invocation is for. The worker sees the spec 2.10 fields; a caller may
 * add its own (database identity, app and namespace ids), which stay in the platform and
 * reach `onContextCall` with every call.
 */
export interface InvocationMeta {
  readonly requestId: string
  readonly environment: 'production' | 'development'
  readonly user: { readonly id: string } | null
  readonly job: { readonly id: string; readonly queue: string; readonly attempt: number } | null
  readonly http: WireHttpRoute | null
  readonly integration?: WireIntegration | null
}

/** A context operation a running Function asked for, with the invocation it belongs to. */
export interface ContextCall<Meta extends InvocationMeta = InvocationMeta> {
  /** `data`, `files`, `ai`, `email`, `notifications`, `jobs`, `integrations`, `integration`, `secrets` or `log`. */
  readonly member: string
  /** Dotted after a sub-client: `table.getById` (args start with the table name), `use.call` (with the slot). */
  readonly method: string
  /** JSON values, with byte arrays as Uint8Array. */
  readonly args: readonly unknown[]
  /** The pool's record of the invocation, as given to `invoke`. */
  readonly meta: Meta
  readonly entrypoint: string
  readonly invocationId: string
  /** Aborts when the invocation ends (result, timeout or crash). */
  readonly signal: AbortSignal
}

export interface FunctionPoolOptions<Meta extends InvocationMeta = InvocationMeta> {
  /** The app release's bundle directory: the worker's cwd and the only app files it can read. */
  readonly bundleDir: string
  /** Absolute path of `@service/server`'s entry, packages/server-sdk/src/index.ts. */
  readonly sdkEntry: string
  /** Most worker processes at once. */
  readonly size: number
  /** Most invocations in flight on one worker; more queue. Default 16. */
  readonly concurrency?: number
  /** Default invocation timeout in milliseconds (queue wait included). Default 30 000. */
  readonly timeoutMs?: number
  /** Addresses to open for tests on loopback; see sandbox.ts for the forms Deno accepts. */
  readonly allowNet?: readonly string[]
  /** Addresses to refuse besides private ranges: the platform's own `host:port`, its host names. */
  readonly denyNet?: readonly string[]
  /** Deno's cache directory (transpiled modules, V8 code cache); created if missing. */
  readonly denoDir: string
  /** The Deno binary; the workspace's `deno` npm package when left out. */
  readonly denoPath?: string
  /**
   * V8 heap limit per worker in MiB (`--max-old-space-size`); a worker that reaches it ends
   * and its invocations fail as `memory_exceeded`. Default 256; 0 leaves V8's own limit.
   */
  readonly maxHeapMb?: number
  /**
   * Resident memory per worker in MiB (heap, ArrayBuffers and native memory together),
   * sampled from /proc on Linux (memory-watch.ts); a worker over it is killed and its
   * invocations fail as `memory_exceeded`. Default 512; 0 turns the watch off.
   */
  readonly memoryBudgetMb?: number
  /** How often a busy worker's resident memory is sampled. Default 100 ms (1 s while idle). */
  readonly memorySampleMs?: number
  /**
   * Started Deno processes to take a worker from before starting one (spare-workers.ts):
   * the release's files are placed in the spare's own directory and the worker runs there.
   * They must run under this pool's sandbox (`poolSandbox`).
   */
  readonly spares?: SpareWorkers
  /** Answers a context call; a thrown error with `code` and `status` reaches the Function as a ServiceError. */
  onContextCall(call: ContextCall<Meta>): Promise<unknown>
  readonly logger: Logger
}

/**
 * The sandbox a pool with these options starts its workers under, for the spare workers it
 * may take (spare-workers.ts).
 *
 * @example
 * const spares = createSpareWorkers({ count: 1, directory, logger, sandbox: poolSandbox({ sdkEntry, denoDir }) })
 */
export function poolSandbox(options: Pick<FunctionPoolOptions, 'sdkEntry' | 'denoDir' | 'denoPath' | 'allowNet' | 'denyNet' | 'maxHeapMb'>): WorkerSandbox {
  const maxHeapMb = options.maxHeapMb ?? DEFAULT_MAX_HEAP_MB
  return {
    sdkEntry: options.sdkEntry,
    denoDir: options.denoDir,
    denoPath: options.denoPath ?? resolveDenoBinary(),
    ...(options.allowNet === undefined ? {} : { allowNet: options.allowNet }),
    ...(options.denyNet === undefined ? {} : { denyNet: options.denyNet }),
    ...(maxHeapMb === 0 ? {} : { maxHeapMb }),
  }
}

export interface InvokeRequest<Meta extends InvocationMeta = InvocationMeta> {
  /** Bundle-relative module path, such as `functions/create-task.ts`. */
  readonly entrypoint: string
  /** The raw input; the Function's schema parses it. */
  readonly input: unknown
  readonly meta: Meta
  /** Overrides the pool's default timeout. */
  readonly timeoutMs?: number
  /** The caller takes a byte result (an HTTP call): the Function may return a Response, a ReadableStream or bytes. */
  readonly bytes?: boolean
}

/** Bytes a Function returned for an HTTP caller; headers are as the Function set them (unfiltered). */
export interface ByteResult {
  readonly status: number
  readonly headers: ReadonlyArray<readonly [string, string]>
  /** Read it to the end or cancel it: the invocation runs until then. */
  readonly body: ReadableStream<Uint8Array>
}

/** A FunctionResult, or (for `bytes: true` requests) bytes, with `value` null. */
export type InvokeResult = FunctionResult | { readonly ok: true; readonly value: null; readonly bytes: ByteResult }

/**
 * The error a byte result's stream ends with when the invocation breaks off after the first
 * byte. Its message names only the failure's kind, and `failure` is not enumerable, because
 * the HTTP server logs stream errors as they are and the Function's message may hold data.
 */
export class ByteResultError extends Error {
  override readonly name = 'ByteResultError'
  declare readonly failure: FunctionFailure
  constructor(failure: FunctionFailure) {
    super(`a Function's byte stream broke off after its first byte (${failure.kind})`)
    Object.defineProperty(this, 'failure', { value: failure, enumerable: false })
  }
}

export type WarmResult =
  | { readonly entrypoint: string; readonly ok: true }
  | { readonly entrypoint: string; readonly ok: false; readonly error: FunctionFailure }

export interface FunctionPool<Meta extends InvocationMeta = InvocationMeta> {
  /** Runs a Function; resolves with its value or a typed failure, never rejects. */
  invoke(request: InvokeRequest<Meta>): Promise<InvokeResult>
  /** Starts every worker and imports `entrypoints` in each; reports each module's import. */
  warm(entrypoints?: readonly string[]): Promise<WarmResult[]>
  /** Kills every worker; running and queued invocations fail with `crashed`. */
  close(): Promise<void>
}

const DEFAULT_CONCURRENCY = 16
const DEFAULT_TIMEOUT_MS = 30_000
/** Per-worker memory defaults (the platform's FUNCTION_HEAP_MB and FUNCTION_MEMORY_MB, docs/operations.md). */
export const DEFAULT_MAX_HEAP_MB = 256
export const DEFAULT_MEMORY_BUDGET_MB = 512
/**
 * What Deno (V8) writes to stderr when a worker reaches its heap limit, just before it ends
 * itself with SIGTRAP: `# Fatal JavaScript out of memory: Reached heap limit` (checked with
 * Deno 2.9.5), or `Fatal process out of memory` for a failed native allocation. Function code
 * can write the same text, but that only relabels its own worker's crash.
 */
const OUT_OF_MEMORY_LINE = /Fatal (?:JavaScript|process) out of memory/
const ERROR_CODE = /^[A-Z][A-Z0-9_]*$/
/** Pieces of a byte result read ahead of its reader (each at most BYTE_CHUNK_BYTES). */
const BYTE_RESULT_BUFFER = 4
/** Longest base64 text of one chunk. */
const MAX_CHUNK_BASE64 = Math.ceil(BYTE_CHUNK_BYTES / 3) * 4
/** Context calls of one worker being answered at once, and their characters, before the pool stops reading it. */
const OPEN_CALLS_MAX = 256
const OPEN_CALL_CHARS_MAX = 16 * 1024 * 1024
/** Byte results cancelled while a pull was out, whose one late answer is still allowed (bounded). */
const MAX_LINGERING = 1024

interface Invocation<Meta extends InvocationMeta> {
  readonly id: string
  readonly request: InvokeRequest<Meta>
  readonly resolve: (result: InvokeResult) => void
  state: 'queued' | 'running' | 'done'
  timer: ReturnType<typeof setTimeout> | undefined
  worker: Worker<Meta> | undefined
  capability: string | undefined
  /** Made on the first context call (most invocations make none; an abort costs a DOMException). */
  abort: AbortController | undefined
  /** Set at `head` when the Function returned bytes. */
  bytes: ByteSink | undefined
}

interface ByteSink {
  controller: ReadableStreamDefaultController<Uint8Array> | undefined
  /** Settles the stream's pending `pull` when a piece (or the end) arrives. */
  waiting: (() => void) | undefined
  cancelled: boolean
}

interface Worker<Meta extends InvocationMeta> {
  readonly serial: number
  readonly process: WorkerProcess
  /** Running invocations by id, and the same by capability. */
  readonly running: Map<string, Invocation<Meta>>
  readonly capabilities: Map<string, Invocation<Meta>>
  readonly loads: Map<string, (failure: FunctionFailure | null) => void>
  /** Resolves true on `ready`, false if the worker ends first. */
  readonly ready: Promise<boolean>
  readonly markReady: (ready: boolean) => void
  /** Whether `ready` came (a second one breaks the protocol). */
  readied: boolean
  /** Ids of byte results cancelled with a pull out: the worker may still answer that pull once. */
  readonly lingering: Set<string>
  /** Context calls received and not yet answered, and their size in characters. */
  openCalls: number
  openCallChars: number
  alive: boolean
  /** Set when the worker is killed because one of its invocations timed out: the others are bystanders. */
  killedForTimeout?: boolean
  /** Set, with what was seen, when the worker went over its resident memory budget or its heap limit. */
  memoryExceeded?: string
}

/**
 * Creates the pool; no process starts until `invoke` or `warm`.
 *
 * @example
 * const pool = createFunctionPool({ bundleDir, sdkEntry, size: 2, denoDir, logger, onContextCall: (call) => runtime.handle(call) })
 * const result = await pool.invoke({ entrypoint: 'functions/create-task.ts', input: { title: 'Milk' }, meta })
 * if (result.ok) return c.json(result.value)
 */
export function createFunctionPool<Meta extends InvocationMeta = InvocationMeta>(options: FunctionPoolOptions<Meta>): FunctionPool<Meta> {
  if (!Number.isInteger(options.size) || options.size < 1) throw new TypeError('a function pool needs size >= 1')
  for (const name of ['maxHeapMb', 'memoryBudgetMb'] as const) {
    const value = options[name]
    if (value !== undefined && (!Number.isInteger(value) || value < 0)) throw new TypeError(`a function pool's ${name} must be a whole number of MiB (0: none)`)
  }
  if (options.memorySampleMs !== undefined && !(options.memorySampleMs > 0)) throw new TypeError(`a function pool's memorySampleMs must be positive`)
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
  const defaultTimeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const logger = options.logger
  const bundleDir = realpathSync(options.bundleDir)
  assertNoSymlinks(bundleDir)
  mkdirSync(options.denoDir, { recursive: true })
  const denoPath = options.denoPath ?? resolveDenoBinary()
  const maxHeapMb = options.maxHeapMb ?? DEFAULT_MAX_HEAP_MB
  const spares = options.spares
  if (spares !== undefined && spares.key !== sandboxKey(poolSandbox({ ...options, denoPath }))) {
    throw new TypeError(`a function pool's spare workers must run under the pool's own sandbox (poolSandbox)`)
  }
  const command = workerCommand({
    bundleDir,
    sdkEntry: realpathSync(options.sdkEntry),
    workerScript: realpathSync(fileURLToPath(new URL('./worker/worker.ts', import.meta.url))),
    denoDir: options.denoDir,
    ...(options.allowNet === undefined ? {} : { allowNet: options.allowNet }),
    ...(options.denyNet === undefined ? {} : { denyNet: options.denyNet }),
    ...(maxHeapMb === 0 ? {} : { maxHeapMb }),
  })

  const workers: Worker<Meta>[] = []
  let queue: Invocation<Meta>[] = []
  let workerSerial = 0
  let loadSerial = 0
  let closed = false
  let pumpScheduled = false

  const memoryBudgetMb = options.memoryBudgetMb ?? DEFAULT_MEMORY_BUDGET_MB
  const memoryWatch = memoryBudgetMb === 0
    ? { wake() {}, stop() {} }
    : createMemoryWatch({
      budgetMb: memoryBudgetMb,
      ...(options.memorySampleMs === undefined ? {} : { busyIntervalMs: options.memorySampleMs }),
      workers: () => workers,
      pid: (worker) => worker.process.pid,
      busy: (worker) => worker.running.size > 0 || worker.loads.size > 0,
      over: (worker, residentBytes) => {
        if (!worker.alive) return
        const seen = `its resident memory reached ${Math.round(residentBytes / 1048576)} MiB, over the budget of ${memoryBudgetMb} MiB`
        worker.memoryExceeded = seen
        worker.process.kill(`the worker went over its memory budget: ${seen}`)
      },
    })

  // A release has a fixed set of entrypoints; remember the verdicts (bounded, in case callers pass anything).
  const entrypointVerdicts = new Map<string, string | null>()
  function checkEntrypoint(entrypoint: string): string | null {
    const known = entrypointVerdicts.get(entrypoint)
    if (known !== undefined) return known
    const problem = entrypointProblem(entrypoint)
    if (entrypointVerdicts.size < 1024) entrypointVerdicts.set(entrypoint, problem)
    return problem
  }

  function spawnWorker(): Worker<Meta> {
    workerSerial += 1
    const serial = workerSerial
    let record: Worker<Meta> | undefined
    let markReady: (ready: boolean) => void = () => {}
    const ready = new Promise<boolean>((resolve) => {
      markReady = resolve
    })
    const handlers = {
      onMessage: (message: WorkerMessage, hasBytes: boolean, chars: number) => {
        if (record?.alive) onMessage(record, message, hasBytes, chars)
      },
      onStderr: (line: string) => {
        if (record !== undefined && record.memoryExceeded === undefined && OUT_OF_MEMORY_LINE.test(line)) {
          record.memoryExceeded = maxHeapMb === 0 ? 'V8 ran out of memory' : `its JavaScript heap reached the limit of ${maxHeapMb} MiB`
        }
        logger.info('function output', { worker: serial, pid: child.pid, line })
      },
      onEnd: (reason: string) => {
        if (record) workerEnded(record, reason)
      },
    }
    const spare = takeSpare()
    const child = spare?.process ?? startWorkerProcess({ denoPath, args: command.args, env: command.env, cwd: bundleDir, ...handlers })
    spare?.attach(handlers)
    record = {
      serial,
      process: child,
      running: new Map(),
      capabilities: new Map(),
      loads: new Map(),
      ready,
      markReady,
      readied: false,
      lingering: new Set(),
      openCalls: 0,
      openCallChars: 0,
      alive: true,
    }
    workers.push(record)
    memoryWatch.wake()
    if (spare?.readied === true) {
      record.readied = true
      markReady(true)
    }
    logger.info('functions worker started', { worker: serial, pid: child.pid, bundleDir, ...(spare === undefined ? {} : { spare: spare.directory }) })
    return record
  }

  /** A spare worker with this release's files in its directory, or undefined (then a worker starts here). */
  function takeSpare(): ReturnType<SpareWorkers['take']> {
    const spare = spares?.take()
    if (spare === undefined) return undefined
    try {
      placeBundle(bundleDir, spare.directory)
      return spare
    } catch (error) {
      logger.warn('functions: could not place the release in a spare worker', { error: messageOf(error) })
      spare.process.kill('its release could not be placed')
      return undefined
    }
  }

  function workerEnded(worker: Worker<Meta>, reason: string): void {
    if (!worker.alive) return
    worker.alive = false
    workers.splice(workers.indexOf(worker), 1)
    worker.markReady(false)
    if (!closed) logger.warn('functions worker ended', { worker: worker.serial, pid: worker.process.pid, reason })
    const crashed: FunctionFailure = worker.killedForTimeout === true
      ? { kind: 'crashed', message: `the Functions worker ended: ${reason}`, reason: 'worker_replaced_for_timeout_of_another_invocation' }
      : worker.memoryExceeded !== undefined
      ? { kind: 'crashed', message: `the Functions worker went over its memory limit: ${worker.memoryExceeded}`, reason: 'memory_exceeded' }
      : { kind: 'crashed', message: `the Functions worker ended: ${reason}` }
    for (const invocation of [...worker.running.values()]) finish(invocation, failed(crashed))
    for (const settle of worker.loads.values()) settle(crashed.reason === 'memory_exceeded' ? crashed : { kind: 'crashed', message: `the Functions worker ended: ${reason}` })
    worker.loads.clear()
    schedulePump()
  }

  /** The worker for the next invocation, starting one when all are busy; undefined means queue. */
  function pickWorker(): Worker<Meta> | undefined {
    let best: Worker<Meta> | undefined
    for (const worker of workers) {
      if (worker.alive && worker.running.size < concurrency && (best === undefined || worker.running.size < best.running.size)) best = worker
    }
    if (best !== undefined && best.running.size === 0) return best
    if (workers.length < options.size) {
      const fresh = spawnWorker()
      return best ?? fresh
    }
    return best
  }

  function schedulePump(): void {
    if (pumpScheduled) return
    pumpScheduled = true
    queueMicrotask(() => {
      pumpScheduled = false
      pump()
    })
  }

  function pump(): void {
    while (!closed && queue.length > 0) {
      const worker = pickWorker()
      if (worker === undefined) return
      const invocation = queue.shift()
      if (invocation !== undefined) start(invocation, worker)
    }
  }

  function start(invocation: Invocation<Meta>, worker: Worker<Meta>): void {
    const capability = newCapability()
    invocation.state = 'running'
    invocation.worker = worker
    invocation.capability = capability
    worker.running.set(invocation.id, invocation)
    worker.capabilities.set(capability, invocation)
    memoryWatch.wake()
    try {
      worker.process.send({
        type: 'invoke',
        id: invocation.id,
        capability,
        entrypoint: invocation.request.entrypoint,
        input: invocation.request.input,
        meta: wireMeta(invocation.request.meta),
        ...(invocation.request.bytes === true ? { bytes: true } : {}),
      })
    } catch (error) {
      finish(invocation, failed({ kind: 'unknown', message: `the invocation could not be sent to the worker: ${messageOf(error)}` }))
    }
  }

  function finish(invocation: Invocation<Meta>, result: FunctionResult): void {
    if (invocation.state === 'done') return
    const wasRunning = invocation.state === 'running'
    invocation.state = 'done'
    clearTimeout(invocation.timer)
    const worker = invocation.worker
    if (worker !== undefined) {
      worker.running.delete(invocation.id)
      if (invocation.capability !== undefined) worker.capabilities.delete(invocation.capability)
    }
    invocation.abort?.abort()
    if (invocation.bytes !== undefined) {
      if (!result.ok && !invocation.bytes.cancelled) reportBrokenBytes(invocation, result.error)
      endBytes(invocation.bytes, result)
    }
    invocation.resolve(result)
    if (wasRunning) schedulePump()
  }

  /**
   * A byte result that broke off after its first byte: the HTTP client sees only a cut
   * body, so the reason goes to the platform log (the host's logger redacts the app's
   * secret values) and, as a `log.error` of the invocation, to the Function's logs.
   */
  function reportBrokenBytes(invocation: Invocation<Meta>, failure: FunctionFailure): void {
    const message = `the byte stream broke off after its first byte (${failure.kind}): ${failure.message.slice(0, MAX_FAILURE_MESSAGE_CHARS)}`
    logger.warn('functions: a byte result broke off', { entrypoint: invocation.request.entrypoint, requestId: invocation.request.meta.requestId, kind: failure.kind, message })
    const call: ContextCall<Meta> = {
      member: 'log',
      method: 'error',
      args: [message],
      meta: invocation.request.meta,
      entrypoint: invocation.request.entrypoint,
      invocationId: invocation.id,
      signal: new AbortController().signal,
    }
    Promise.resolve()
      .then(() => options.onContextCall(call))
      .catch((error: unknown) => logger.warn('functions: storing why a byte result broke off failed', { error: messageOf(error) }))
  }

  /** Ends a worker that sent what the protocol does not allow (Function code may have written it). */
  function violation(worker: Worker<Meta>, what: string): void {
    worker.process.kill(`the worker broke the protocol: ${what}`)
  }

  /** Closes (or, on a failure, errors) a byte result's stream when its invocation ends. */
  function endBytes(sink: ByteSink, result: FunctionResult): void {
    if (!sink.cancelled && sink.controller !== undefined) {
      try {
        if (result.ok) sink.controller.close()
        else sink.controller.error(new ByteResultError(result.error))
      } catch {
        // Already closed by its reader.
      }
    }
    sink.waiting?.()
    sink.waiting = undefined
  }

  function onHead(worker: Worker<Meta>, message: HeadMessage): void {
    const invocation = worker.running.get(message.id)
    if (invocation === undefined || invocation.bytes !== undefined || invocation.request.bytes !== true) {
      violation(worker, 'a byte result nobody asked for')
      return
    }
    const sink: ByteSink = { controller: undefined, waiting: undefined, cancelled: false }
    invocation.bytes = sink
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        sink.controller = controller
      },
      pull() {
        if (invocation.state === 'done') return
        return new Promise<void>((resolve) => {
          sink.waiting = resolve
          worker.process.send({ type: 'pull', id: invocation.id })
        })
      },
      cancel() {
        sink.cancelled = true
        if (invocation.state === 'done') return
        worker.process.send({ type: 'cancel', id: invocation.id })
        if (sink.waiting !== undefined) {
          // The worker may have answered the pull before it read the cancel.
          if (worker.lingering.size >= MAX_LINGERING) worker.lingering.delete(worker.lingering.values().next().value!)
          worker.lingering.add(invocation.id)
        }
        finish(invocation, { ok: true, value: null })
      },
    }, { highWaterMark: BYTE_RESULT_BUFFER })
    const headers = Array.isArray(message.headers)
      ? message.headers.filter((entry): entry is [string, string] => Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'string')
      : []
    const status = Number.isInteger(message.status) && message.status >= 200 && message.status <= 599 ? message.status : 200
    invocation.resolve({ ok: true, value: null, bytes: { status, headers, body } })
  }

  function onChunk(worker: Worker<Meta>, message: ChunkMessage): void {
    const invocation = worker.running.get(message.id)
    if (invocation === undefined) {
      if (!worker.lingering.delete(message.id)) violation(worker, 'a chunk for no running invocation')
      return // the answer to a pull that crossed its byte result's cancel
    }
    const sink = invocation.bytes
    if (sink === undefined || sink.waiting === undefined) {
      violation(worker, 'a chunk nobody pulled')
      return
    }
    const data = message.data
    if (typeof data !== 'string' || data.length === 0 || data.length > MAX_CHUNK_BASE64) {
      violation(worker, 'a chunk that is not 1 to 64 KiB of base64')
      return
    }
    const bytes = Buffer.from(data, 'base64')
    if (bytes.byteLength === 0 || bytes.byteLength > BYTE_CHUNK_BYTES) {
      violation(worker, 'a chunk that is not 1 to 64 KiB of base64')
      return
    }
    if (!sink.cancelled) sink.controller?.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    sink.waiting()
    sink.waiting = undefined
  }

  function onResult(worker: Worker<Meta>, message: ResultMessage): void {
    const invocation = worker.running.get(message.id)
    if (invocation === undefined) {
      if (!worker.lingering.delete(message.id)) violation(worker, 'a result for no running invocation')
      return
    }
    if (invocation.bytes !== undefined && invocation.bytes.waiting === undefined) {
      violation(worker, 'the end of a byte result nobody pulled')
      return
    }
    finish(invocation, message.ok === true ? { ok: true, value: message.value } : failed(checkedFailure(message.error)))
  }

  function timeOut(invocation: Invocation<Meta>, timeoutMs: number): void {
    if (invocation.state === 'queued') {
      queue = queue.filter((queued) => queued !== invocation)
      // No Function code ran: callers that count attempts give this one back (failures.ts, attemptNotSpent).
      finish(invocation, failed({ kind: 'timeout', message: `the invocation waited ${timeoutMs} ms for a free worker`, reason: 'not_started' }))
      return
    }
    const worker = invocation.worker
    finish(invocation, failed({ kind: 'timeout', message: `the Function did not finish within ${timeoutMs} ms` }))
    if (worker?.alive) {
      worker.killedForTimeout = true
      worker.process.kill(`an invocation of ${invocation.request.entrypoint} timed out after ${timeoutMs} ms`)
    }
  }

  function onMessage(worker: Worker<Meta>, message: WorkerMessage, hasBytes: boolean, chars: number): void {
    switch (message.type) {
      case 'ready':
        if (worker.readied) violation(worker, 'a second ready')
        worker.readied = true
        worker.markReady(true)
        return
      case 'result':
        onResult(worker, message)
        return
      case 'call':
        handleCall(worker, message, hasBytes, chars)
        return
      case 'loaded': {
        const settle = worker.loads.get(message.id)
        if (settle === undefined) {
          violation(worker, 'a loaded for no load')
          return
        }
        worker.loads.delete(message.id)
        settle(message.ok === true ? null : checkedFailure(message.error))
        return
      }
      case 'head':
        onHead(worker, message)
        return
      case 'chunk':
        onChunk(worker, message)
        return
    }
  }

  function handleCall(worker: Worker<Meta>, message: CallMessage, hasBytes: boolean, chars: number): void {
    const invocation = typeof message.capability === 'string' ? worker.capabilities.get(message.capability) : undefined
    const wellFormed = typeof message.member === 'string' && typeof message.method === 'string' && Array.isArray(message.args)
    if (invocation === undefined || invocation.id !== message.invocationId || !wellFormed) {
      logger.warn('functions: refused a context call without a live capability', {
        worker: worker.serial,
        member: String(message.member).slice(0, 64),
        method: String(message.method).slice(0, 64),
      })
      reply(worker, message, { ok: false, error: { message: 'The context call was refused: its invocation has ended or its capability is not valid' } })
      return
    }
    const call: ContextCall<Meta> = {
      member: message.member,
      method: message.method,
      args: hasBytes ? (decodeBytes(message.args) as unknown[]) : message.args,
      meta: invocation.request.meta,
      entrypoint: invocation.request.entrypoint,
      invocationId: invocation.id,
      signal: (invocation.abort ??= new AbortController()).signal,
    }
    let answer: Promise<unknown>
    try {
      answer = Promise.resolve(options.onContextCall(call))
    } catch (error) {
      answer = Promise.reject(error)
    }
    openCall(worker, chars)
    answer
      .then(
        (value) => reply(worker, message, { ok: true, value: encodeBytes(value) }),
        (error: unknown) => reply(worker, message, { ok: false, error: callError(error, message) }),
      )
      .finally(() => openCall(worker, -chars))
  }

  /** Counts a call in (`chars` > 0) or out; the worker is not read while its open calls are over budget. */
  function openCall(worker: Worker<Meta>, chars: number): void {
    worker.openCalls += Math.sign(chars)
    worker.openCallChars += chars
    worker.process.hold(worker.openCalls > OPEN_CALLS_MAX || worker.openCallChars > OPEN_CALL_CHARS_MAX)
  }

  function reply(worker: Worker<Meta>, call: CallMessage, answer: { ok: true; value: unknown } | { ok: false; error: WireCallError }): void {
    if (!worker.alive) return
    try {
      worker.process.send({ type: 'reply', id: call.id, ...answer })
    } catch (error) {
      // The value is not JSON (a BigInt from the database, say): the Function gets a failure, not a hang.
      logger.error('functions: a context call reply is not JSON', { member: call.member, method: call.method, error: messageOf(error) })
      worker.process.send({ type: 'reply', id: call.id, ok: false, error: { message: `The platform could not complete ${call.member}.${call.method}` } })
    }
  }

  function callError(error: unknown, call: CallMessage): WireCallError {
    if (typeof error === 'object' && error !== null) {
      const { code, status, message, details } = error as Record<string, unknown>
      if (typeof code === 'string' && ERROR_CODE.test(code) && typeof status === 'number' && status >= 400 && status <= 599 && typeof message === 'string') {
        return details === undefined ? { code, status, message } : { code, status, message, details }
      }
    }
    logger.error('functions: a context call failed', { member: call.member, method: call.method, error: messageOf(error) })
    return { message: `The platform could not complete ${call.member}.${call.method}` }
  }

  async function warmWorker(worker: Worker<Meta>, entrypoints: readonly string[]): Promise<WarmResult[]> {
    const started = await Promise.race([worker.ready, delay(defaultTimeoutMs).then(() => false)])
    if (!started) {
      if (worker.alive) worker.process.kill('the worker did not start in time')
      return entrypoints.map((entrypoint) => ({ entrypoint, ok: false, error: { kind: 'crashed', message: 'the Functions worker did not start' } }))
    }
    return await Promise.all(entrypoints.map((entrypoint) => loadIn(worker, entrypoint)))
  }

  function loadIn(worker: Worker<Meta>, entrypoint: string): Promise<WarmResult> {
    const problem = entrypointProblem(entrypoint)
    if (problem !== null) return Promise.resolve({ entrypoint, ok: false, error: { kind: 'import', message: problem } })
    if (!worker.alive) return Promise.resolve({ entrypoint, ok: false, error: { kind: 'crashed', message: 'the Functions worker ended' } })
    loadSerial += 1
    const id = `load-${loadSerial}`
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        worker.loads.delete(id)
        resolve({ entrypoint, ok: false, error: { kind: 'timeout', message: `${entrypoint} did not load within ${defaultTimeoutMs} ms` } })
        if (worker.alive) worker.process.kill(`loading ${entrypoint} timed out`)
      }, defaultTimeoutMs)
      worker.loads.set(id, (failure) => {
        clearTimeout(timer)
        resolve(failure === null ? { entrypoint, ok: true } : { entrypoint, ok: false, error: failure })
      })
      worker.process.send({ type: 'load', id, entrypoint })
    })
  }

  return {
    invoke(request) {
      if (closed) return Promise.resolve(failed({ kind: 'crashed', message: 'the function pool is closed' }))
      const problem = checkEntrypoint(request.entrypoint)
      if (problem !== null) return Promise.resolve(failed({ kind: 'import', message: problem }))
      const timeoutMs = request.timeoutMs ?? defaultTimeoutMs
      return new Promise<InvokeResult>((resolve) => {
        const invocation: Invocation<Meta> = {
          id: randomUUID(),
          request,
          resolve,
          state: 'queued',
          timer: undefined,
          worker: undefined,
          capability: undefined,
          abort: undefined,
          bytes: undefined,
        }
        invocation.timer = setTimeout(() => timeOut(invocation, timeoutMs), timeoutMs)
        queue.push(invocation)
        pump()
      })
    },

    async warm(entrypoints = []) {
      if (closed) throw new Error('the function pool is closed')
      while (workers.length < options.size) spawnWorker()
      const perWorker = await Promise.all(workers.map((worker) => warmWorker(worker, entrypoints)))
      // Every worker runs the same bundle; report the first failure seen for each module.
      return entrypoints.map((entrypoint, index) => {
        const outcomes = perWorker.map((results) => results[index]).filter((result) => result !== undefined)
        return outcomes.find((result) => !result.ok) ?? outcomes[0] ?? { entrypoint, ok: false, error: { kind: 'crashed', message: 'no worker started' } }
      })
    },

    async close() {
      closed = true
      memoryWatch.stop()
      for (const invocation of queue) finish(invocation, failed({ kind: 'crashed', message: 'the function pool closed' }))
      queue = []
      const exits = workers.map((worker) => worker.process.exited)
      for (const worker of [...workers]) worker.process.kill('the function pool closed')
      await Promise.all(exits)
    },
  }
}

/**
 * Deno follows a symlink inside an allowed directory without checking its target (checked
 * with 2.9.6: `--allow-read=<bundle>` reads `<bundle>/link` -> /etc/hostname), so a bundle
 * with a symlink would open the host's files to its Functions. Deploy writes regular files
 * only; this refuses anything else before a worker can start.
 */
function assertNoSymlinks(directory: string): void {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    if (entry.isSymbolicLink()) throw new Error(`the bundle holds a symbolic link at ${path}; Functions could read its target`)
    if (entry.isDirectory()) assertNoSymlinks(path)
    else if (!entry.isFile()) throw new Error(`the bundle holds ${path}, which is not a regular file or directory`)
  }
}

/** The fields of `meta` the worker turns into the context; the caller's extra fields stay here. */
function wireMeta(meta: InvocationMeta): WireMeta {
  return {
    requestId: meta.requestId,
    environment: meta.environment,
    user: meta.user,
    job: meta.job,
    http: meta.http,
    integration: meta.integration ?? null,
  }
}

const CAPABILITY_BYTES = 24
let entropy = Buffer.alloc(0)
let entropyOffset = 0

/**
 * A fresh 192-bit capability token. Random bytes are drawn 6 KiB at a time, because a
 * `randomBytes` call per invocation was a visible share of a warm invocation's cost.
 */
function newCapability(): string {
  if (entropyOffset + CAPABILITY_BYTES > entropy.length) {
    entropy = randomBytes(CAPABILITY_BYTES * 256)
    entropyOffset = 0
  }
  const token = entropy.toString('base64url', entropyOffset, entropyOffset + CAPABILITY_BYTES)
  entropyOffset += CAPABILITY_BYTES
  return token
}

function failed(error: FunctionFailure): FunctionResult {
  return { ok: false, error }
}

const WORKER_FAILURE_KINDS = new Set(['service', 'import', 'invalid_return', 'unknown'])

/**
 * A failure as the worker reported it, rebuilt from checked fields (Function code can bend
 * what the worker sends): a `service` failure whose code, status or message could not be an
 * error response becomes an untyped `unknown` one.
 */
function checkedFailure(error: unknown): WireFailure {
  if (typeof error !== 'object' || error === null) return { kind: 'unknown', message: 'the worker reported a failure the protocol does not have' }
  const { kind, message, stack, code, status, details } = error as Record<string, unknown>
  if (typeof kind !== 'string' || !WORKER_FAILURE_KINDS.has(kind) || typeof message !== 'string' || message.length > MAX_FAILURE_MESSAGE_CHARS) {
    return { kind: 'unknown', message: 'the worker reported a failure the protocol does not have' }
  }
  if (kind === 'service') {
    const problem = serviceErrorProblem({ code, status, message })
    if (problem !== null) return { kind: 'unknown', message: `the Function threw a ServiceError that is not a valid error response: ${problem}` }
    const typed = { kind: 'service' as const, code: code as string, status: status as number, message }
    return typeof details === 'object' && details !== null && !Array.isArray(details) ? { ...typed, details } : typed
  }
  const plain = { kind: kind as 'import' | 'invalid_return' | 'unknown', message }
  return typeof stack === 'string' && stack.length <= MAX_FAILURE_STACK_CHARS ? { ...plain, stack } : plain
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}
