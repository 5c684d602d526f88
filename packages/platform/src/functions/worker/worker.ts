/**
 * The Functions worker: a long-lived Deno process that runs one app release's Functions.
 * The platform starts it with `deno run` under a sandbox (read the bundle and the SDK
 * only; no write, env, subprocess, FFI or sys; outbound network except denied addresses)
 * and talks to it over stdin and stdout in newline-delimited JSON (see ../protocol.ts).
 *
 * Each `invoke` imports the Function module once (later invokes reuse it), builds a
 * context whose platform-backed members (data, files, ai, email, notifications, jobs,
 * integrations, integration, secrets, log) send `call` messages back to the platform with
 * the invocation's capability, runs `runFunction` and answers with one `result`. Many
 * invocations may be in flight at once. When an invocation ends its capability is dropped:
 * a context kept past the end (in a module global, a timer) refuses every call.
 *
 * Before any Function loads, the worker takes stdin and stdout for itself, hides them
 * and `Deno.exit` from Function code, sends `console.*` to stderr, and keeps unhandled
 * rejections and uncaught errors from ending the process (they are reported on stderr).
 * It reads the platform's `hello` before anything else and starts each line it writes with
 * its nonce, through functions bound at startup, so Function code (which can still reach
 * fd 1 through `node:fs`, and can patch globals) cannot frame a message of its own: a
 * line without the nonce ends the worker. Code that runs here uses web-standard and Deno
 * APIs only.
 *
 * Usage (the platform's pool does this): deno run <sandbox flags> worker.ts <bundle dir URL>
 */

import {
  ServiceError,
  isServiceError,
  isServiceFunction,
  runFunction,
  type AiClient,
  type DataClient,
  type EmailClient,
  type FilesClient,
  type HttpRoute,
  type IntegrationInvocation,
  type IntegrationsClient,
  type InvocationContext,
  type JobsClient,
  type Logger,
  type NotificationsClient,
  type ReadonlyQuery,
  type SecretsClient,
  type ServiceFunction,
} from '@service/server'
import { entrypointProblem } from '../entrypoint.ts'
import {
  BYTE_CHUNK_BYTES,
  BYTES_TAG,
  FILE_INLINE_BYTES,
  FILE_PIECE_BYTES,
  MAX_CALL_CHARS,
  MAX_FAILURE_MESSAGE_CHARS,
  MAX_FAILURE_STACK_CHARS,
  MAX_RESULT_CHARS,
  WORKER_MESSAGE_LIMITS,
  serviceErrorProblem,
  type InvokeMessage,
  type LoadMessage,
  type PlatformMessage,
  type ReplyMessage,
  type WireCallError,
  type WireFailure,
  type WireHttpRoute,
  type WireIntegration,
  type WireMeta,
  type WorkerMessage,
} from '../protocol.ts'

/**
 * The part of the Deno namespace this file uses. Declared here (it shadows the global in
 * `deno check`) so the root `tsc`, which has no Deno types, checks this file as well.
 */
interface DenoApi {
  readonly args: readonly string[]
  readonly pid: number
  readonly version: { readonly deno: string }
  readonly stdin: { readonly readable: ReadableStream<Uint8Array<ArrayBuffer>> }
  readonly stdout: { readonly writable: WritableStream<Uint8Array> }
  exit(code?: number): never
  inspect(value: unknown, options?: object): string
}
declare const Deno: DenoApi

/** Uint8Array's base64 methods (TC39 proposal, shipped in Deno's V8). */
type Base64Bytes = Uint8Array & { toBase64(): string }
type Base64Constructor = { fromBase64(text: string): Uint8Array }

// ---- Take the process's channels before any Function code runs ----

const bundleUrl = new URL(Deno.args[0] ?? '')
if (!bundleUrl.href.endsWith('/')) bundleUrl.pathname += '/'
const exitProcess = Deno.exit.bind(Deno)
const output = Deno.stdout.writable.getWriter()
const input = Deno.stdin.readable
const encoder = new TextEncoder()
const diagnostic = console.error.bind(console)
// Bound now, before Function code can replace a global or a prototype method on the way out.
const stringify = JSON.stringify
const parse = JSON.parse
const encode = encoder.encode.bind(encoder)
const writeOutput = output.write.bind(output)
/** The platform's per-worker secret, from its `hello`; every line we write starts with it. */
let nonce = ''

hideFromFunctions()
routeConsoleToStderr()
globalThis.addEventListener('unhandledrejection', (event) => {
  event.preventDefault()
  diagnostic('[functions worker] unhandled promise rejection in a Function:', (event as PromiseRejectionEvent).reason)
})
globalThis.addEventListener('error', (event) => {
  event.preventDefault()
  diagnostic('[functions worker] uncaught error in a Function:', (event as ErrorEvent).error)
})

/** Function code must not write protocol frames or end the process by accident. */
function hideFromFunctions(): void {
  for (const name of ['stdin', 'stdout'] as const) {
    Object.defineProperty(Deno, name, { value: undefined, writable: false, configurable: false })
  }
  const refuseExit = () => {
    throw new Error('ending the process is not available to Functions; return a value or throw an error instead')
  }
  const fixed = { value: refuseExit, writable: false, configurable: false }
  Object.defineProperty(Deno, 'exit', fixed)
  Object.defineProperty(globalThis, 'close', fixed)
  // Deno's Node compatibility reaches the same exit and stdout through the `process`
  // global (the object `node:process` exports): refuse the exit, send stdout to stderr.
  const nodeProcess = (globalThis as { process?: { readonly stderr: unknown } }).process
  if (nodeProcess !== undefined) {
    Object.defineProperty(nodeProcess, 'exit', fixed)
    Object.defineProperty(nodeProcess, 'stdout', { get: () => nodeProcess.stderr, configurable: false })
  }
}

/** Deno's console writes log, info, debug, table, count and timers to stdout, which is the protocol. */
function routeConsoleToStderr(): void {
  const log = (...values: unknown[]) => diagnostic(...values)
  const counts = new Map<string, number>()
  const timers = new Map<string, number>()
  Object.assign(console, {
    log,
    info: log,
    debug: log,
    dirxml: log,
    dir: (value: unknown, options?: object) => diagnostic(Deno.inspect(value, options)),
    table: (data: unknown) => diagnostic(Deno.inspect(data)),
    count: (label = 'default') => {
      const count = (counts.get(label) ?? 0) + 1
      counts.set(label, count)
      diagnostic(`${label}: ${count}`)
    },
    countReset: (label = 'default') => counts.delete(label),
    time: (label = 'default') => timers.set(label, performance.now()),
    timeLog: (label = 'default', ...values: unknown[]) => {
      const started = timers.get(label)
      if (started !== undefined) diagnostic(`${label}: ${(performance.now() - started).toFixed(3)}ms`, ...values)
    },
    timeEnd: (label = 'default') => {
      const started = timers.get(label)
      timers.delete(label)
      if (started !== undefined) diagnostic(`${label}: ${(performance.now() - started).toFixed(3)}ms`)
    },
  })
}

// ---- Output ----

function send(message: WorkerMessage): void {
  sendJson(stringify(message))
}

/** Writes one message already serialised (the caller checked its size). */
function sendJson(json: string): void {
  writeOutput(encode(nonce + json + '\n')).catch(() => {
    // The platform closed our stdout: nobody can hear us any more.
    exitProcess(1)
  })
}

/** Sends a failed `result` or `loaded`, cut to the protocol's limits (details go first, if need be). */
function sendFailure(type: 'result' | 'loaded', id: string, error: WireFailure): void {
  const failure = boundedFailure(error)
  const json = stringify({ type, id, ok: false, error: failure })
  if (json.length <= WORKER_MESSAGE_LIMITS[type] || failure.kind !== 'service' || failure.details === undefined) {
    sendJson(json)
    return
  }
  diagnostic(`[functions worker] the details of ServiceError ${failure.code} were dropped: they are over ${WORKER_MESSAGE_LIMITS[type]} characters of JSON`)
  const { details: _dropped, ...withoutDetails } = failure
  send({ type, id, ok: false, error: withoutDetails })
}

function boundedFailure(failure: WireFailure): WireFailure {
  const message = failure.message.length > MAX_FAILURE_MESSAGE_CHARS ? `${failure.message.slice(0, MAX_FAILURE_MESSAGE_CHARS - 16)} [message cut]` : failure.message
  if (failure.kind === 'service' || failure.stack === undefined || failure.stack.length <= MAX_FAILURE_STACK_CHARS) return { ...failure, message }
  return { ...failure, message, stack: `${failure.stack.slice(0, MAX_FAILURE_STACK_CHARS - 16)} [stack cut]` }
}

// ---- Module cache ----

class ImportFailure extends Error {
  override readonly name = 'ImportFailure'
}

const modules = new Map<string, Promise<ServiceFunction<unknown, unknown>>>()

/** The Function defined by `entrypoint`, imported on first use and cached (a failed import is retried). */
function loadFunction(entrypoint: string): Promise<ServiceFunction<unknown, unknown>> {
  const cached = modules.get(entrypoint)
  if (cached) return cached
  const loading = importFunction(entrypoint)
  modules.set(entrypoint, loading)
  loading.catch(() => modules.delete(entrypoint))
  return loading
}

async function importFunction(entrypoint: string): Promise<ServiceFunction<unknown, unknown>> {
  const problem = entrypointProblem(entrypoint)
  if (problem) throw new ImportFailure(problem)
  const url = new URL(entrypoint, bundleUrl)
  if (!url.href.startsWith(bundleUrl.href)) throw new ImportFailure(`the entrypoint ${entrypoint} is outside the bundle`)
  let module: Record<string, unknown>
  try {
    module = (await import(url.href)) as Record<string, unknown>
  } catch (error) {
    throw new ImportFailure(`${entrypoint} failed to load: ${messageOf(error)}`, { cause: error })
  }
  if (!('default' in module)) {
    throw new ImportFailure(`${entrypoint} has no default export; write export default defineFunction({ input, handler })`)
  }
  if (!isServiceFunction(module['default'])) {
    throw new ImportFailure(`the default export of ${entrypoint} is not a defineFunction({ input, handler }) result`)
  }
  return module['default']
}

// ---- Invocations ----

/** One invocation's hold on the platform: its id and capability, until it ends. */
interface Invocation {
  readonly id: string
  readonly capability: string
  ended: boolean
}

async function runInvocation(message: InvokeMessage): Promise<void> {
  const invocation: Invocation = { id: message.id, capability: message.capability, ended: false }
  let definition: ServiceFunction<unknown, unknown>
  try {
    definition = await loadFunction(message.entrypoint)
  } catch (error) {
    invocation.ended = true
    sendFailure('result', message.id, importFailure(error))
    return
  }
  let value: unknown
  try {
    value = await runFunction(definition, message.input, contextFor(invocation, message.meta))
  } catch (error) {
    invocation.ended = true
    sendFailure('result', message.id, thrownFailure(error))
    return
  }
  try {
    await answerValue(invocation, message, value)
  } catch (error) {
    // A getter or toJSON of the value threw (or recursed without end): still one answer.
    invocation.ended = true
    sendFailure('result', message.id, { kind: 'invalid_return', message: `the returned value could not be checked: ${messageOf(error)}` })
  }
}

/** Sends what a Function returned: a byte result's head, or its JSON value, or why it cannot be sent. */
async function answerValue(invocation: Invocation, message: InvokeMessage, value: unknown): Promise<void> {
  if (isByteResult(value)) {
    if (message.bytes === true) {
      await startByteResult(invocation, value)
      return
    }
    invocation.ended = true
    cancelQuietly(value)
    send({
      type: 'result',
      id: message.id,
      ok: false,
      error: { kind: 'invalid_return', message: `the Function returned ${byteResultName(value)}; bytes reach HTTP callers only, other invocations take JSON` },
    })
    return
  }
  invocation.ended = true
  const returned = value === undefined ? null : value
  const problem = jsonProblem(returned, 'the returned value', [])
  if (problem) {
    sendFailure('result', message.id, { kind: 'invalid_return', message: `${problem}; a Function returns JSON` })
    return
  }
  const json = stringify({ type: 'result', id: message.id, ok: true, value: returned })
  if (json.length > MAX_RESULT_CHARS) {
    const problem = `the returned value is ${json.length} characters of JSON, over the ${MAX_RESULT_CHARS} a Function may return; return bytes (a ReadableStream or a Response) to stream more to an HTTP caller`
    send({ type: 'result', id: message.id, ok: false, error: { kind: 'invalid_return', message: problem } })
    return
  }
  sendJson(json)
}

async function runLoad(message: LoadMessage): Promise<void> {
  try {
    await loadFunction(message.entrypoint)
    send({ type: 'loaded', id: message.id, ok: true })
  } catch (error) {
    sendFailure('loaded', message.id, importFailure(error))
  }
}

function importFailure(error: unknown): WireFailure {
  // The stack of the module's own failure helps; the worker's stack for "no default export" does not.
  const origin = error instanceof ImportFailure ? error.cause : error
  const stack = origin instanceof Error ? origin.stack : undefined
  return stack === undefined ? { kind: 'import', message: messageOf(error) } : { kind: 'import', message: messageOf(error), stack }
}

function thrownFailure(error: unknown): WireFailure {
  if (isServiceError(error)) {
    // Read once: a thrown plain object may have getters. isServiceError checks only the brand and types.
    const { code, status, details } = error
    const message = error.message.length > MAX_FAILURE_MESSAGE_CHARS ? `${error.message.slice(0, MAX_FAILURE_MESSAGE_CHARS - 16)} [message cut]` : error.message
    const invalid = serviceErrorProblem({ code, status, message })
    if (invalid !== null) return { kind: 'unknown', message: `the Function threw a ServiceError that is not a valid error response: ${invalid}` }
    const failure = { kind: 'service' as const, code, message, status }
    if (details === undefined) return failure
    const problem = jsonProblem(details, 'details', [])
    if (problem === null) return { ...failure, details }
    diagnostic(`[functions worker] the details of ServiceError ${code} were dropped: ${problem}`)
    return failure
  }
  const stack = error instanceof Error ? error.stack : undefined
  return stack === undefined ? { kind: 'unknown', message: messageOf(error) } : { kind: 'unknown', message: messageOf(error), stack }
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message
  try {
    return `a non-Error value was thrown: ${String(error)}`
  } catch {
    return 'a non-Error value was thrown'
  }
}

/**
 * Why `value` would not survive JSON unchanged, or null. Stricter than JSON.stringify,
 * which silently drops functions and turns NaN into null: a Function's result reaches
 * its caller exactly as returned, or the invocation fails with `invalid_return`.
 */
function jsonProblem(value: unknown, path: string, ancestors: object[], viaToJSON = false): string | null {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return null
    case 'number':
      return Number.isFinite(value) ? null : `${path} is ${value}, which JSON cannot carry`
    case 'bigint':
      return `${path} is a BigInt; return it as a string or a number`
    case 'function':
      return `${path} is a function`
    case 'symbol':
      return `${path} is a symbol`
    case 'undefined':
      return `${path} is undefined`
    case 'object':
      break
  }
  if (value === null) return null
  const object = value as object
  if (ancestors.includes(object)) return `${path} refers back to an enclosing object (a cycle)`
  const toJSON = (object as { toJSON?: unknown }).toJSON
  // JSON.stringify calls toJSON once and takes what it returns as is (even the object itself).
  if (typeof toJSON === 'function' && !viaToJSON) return jsonProblem(toJSON.call(object), path, ancestors, true)
  ancestors.push(object)
  try {
    if (Array.isArray(object)) {
      for (let index = 0; index < object.length; index += 1) {
        const problem = jsonProblem(object[index], `${path}[${index}]`, ancestors)
        if (problem) return problem
      }
      return null
    }
    const prototype: unknown = Object.getPrototypeOf(object)
    if (prototype !== null && Object.getPrototypeOf(prototype) !== null) {
      const name = (object as { constructor?: { name?: unknown } }).constructor?.name
      return `${path} is ${typeof name === 'string' && name ? `a ${name}` : 'a class instance'}, not a plain object`
    }
    for (const [key, entry] of Object.entries(object)) {
      if (entry === undefined) continue // JSON leaves the key out, as `{ a: undefined }` means
      const problem = jsonProblem(entry, `${path}.${key}`, ancestors)
      if (problem) return problem
    }
    return null
  } finally {
    ancestors.pop()
  }
}

// ---- Byte results (see ../protocol.ts) ----

type ByteResultValue = Response | ReadableStream<unknown> | ArrayBufferView | ArrayBuffer

/** A byte result being sent: what is left of the current piece, and the Function's reader. */
interface ByteStream {
  readonly invocation: Invocation
  readonly reader: ReadableStreamDefaultReader<unknown> | null
  pending: Uint8Array
  finished: boolean
  /** Pulls run one after another (the platform sends one at a time; this keeps it so). */
  queue: Promise<void>
}

const byteStreams = new Map<string, ByteStream>()

function isByteResult(value: unknown): value is ByteResultValue {
  return value instanceof Response || value instanceof ReadableStream || ArrayBuffer.isView(value) || value instanceof ArrayBuffer
}

function byteResultName(value: ByteResultValue): string {
  if (value instanceof Response) return 'a Response'
  if (value instanceof ReadableStream) return 'a ReadableStream'
  return 'bytes'
}

function cancelQuietly(value: ByteResultValue): void {
  const body = value instanceof Response ? value.body : value instanceof ReadableStream ? value : null
  body?.cancel().catch(() => {})
}

/** A chunk that is neither bytes nor text. */
class ChunkTypeError extends TypeError {
  override readonly name = 'ChunkTypeError'
}

/** Why reading a returned stream failed: a chunk of the wrong type, or what the stream threw. */
function streamFailure(error: unknown): WireFailure {
  return error instanceof ChunkTypeError ? { kind: 'invalid_return', message: error.message } : thrownFailure(error)
}

/** A chunk of a Function's stream as bytes: Uint8Array (or another view, or ArrayBuffer) or a string (UTF-8). */
function chunkBytes(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk
  if (typeof chunk === 'string') return encoder.encode(chunk)
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk)
  throw new ChunkTypeError(`a chunk of the returned stream is ${chunk === null ? 'null' : typeof chunk}; a byte stream carries Uint8Array or string chunks`)
}

/** Reads until there is a byte to send or the stream ends; true when there is one. */
async function fill(stream: ByteStream): Promise<boolean> {
  while (stream.pending.byteLength === 0) {
    if (stream.finished || stream.reader === null) return false
    const { value, done } = await stream.reader.read()
    if (done) stream.finished = true
    else stream.pending = chunkBytes(value)
  }
  return true
}

/**
 * Answers an invoke whose Function returned bytes: reads the first piece (a failure here is
 * an ordinary failed result), then sends the head. Pieces follow one per `pull`.
 */
async function startByteResult(invocation: Invocation, value: ByteResultValue): Promise<void> {
  let status = 200
  const headers: Array<[string, string]> = []
  let body: ReadableStream<unknown> | null
  if (value instanceof Response) {
    if (value.type === 'error' || value.status < 200) {
      invocation.ended = true
      send({ type: 'result', id: invocation.id, ok: false, error: { kind: 'invalid_return', message: 'the Function returned a network-error Response' } })
      return
    }
    status = value.status
    for (const [name, headerValue] of value.headers) headers.push([name, headerValue])
    body = value.body
  } else if (value instanceof ReadableStream) {
    body = value
  } else {
    const bytes = chunkBytes(value)
    body = new ReadableStream({ start: (controller) => { controller.enqueue(bytes); controller.close() } })
  }
  const stream: ByteStream = { invocation, reader: body?.getReader() ?? null, pending: new Uint8Array(0), finished: false, queue: Promise.resolve() }
  let firstIsText = false
  try {
    if (stream.reader !== null && !stream.finished) {
      const { value: first, done } = await stream.reader.read()
      if (done) stream.finished = true
      else {
        firstIsText = typeof first === 'string'
        stream.pending = chunkBytes(first)
      }
      await fill(stream)
    }
  } catch (error) {
    invocation.ended = true
    stream.reader?.cancel().catch(() => {})
    sendFailure('result', invocation.id, streamFailure(error))
    return
  }
  if (!headers.some(([name]) => name === 'content-type')) {
    headers.push(['content-type', firstIsText ? 'text/plain; charset=utf-8' : 'application/octet-stream'])
  }
  const head = stringify({ type: 'head', id: invocation.id, status, headers })
  if (head.length > WORKER_MESSAGE_LIMITS.head) {
    invocation.ended = true
    stream.reader?.cancel().catch(() => {})
    send({ type: 'result', id: invocation.id, ok: false, error: { kind: 'invalid_return', message: `the returned Response's headers are over ${WORKER_MESSAGE_LIMITS.head} characters` } })
    return
  }
  byteStreams.set(invocation.id, stream)
  sendJson(head)
}

/** Sends the next piece of a byte result, or ends it. */
function pullByteResult(id: string): void {
  const stream = byteStreams.get(id)
  if (stream === undefined) return
  stream.queue = stream.queue.then(async () => {
    if (stream.invocation.ended) return
    let more: boolean
    try {
      more = await fill(stream)
    } catch (error) {
      if (byteStreams.get(id) !== stream) return
      endByteResult(stream)
      sendFailure('result', id, streamFailure(error))
      return
    }
    if (byteStreams.get(id) !== stream) return // cancelled while reading: the platform has let it go
    if (!more) {
      endByteResult(stream)
      send({ type: 'result', id, ok: true, value: null })
      return
    }
    const piece = stream.pending.subarray(0, BYTE_CHUNK_BYTES)
    stream.pending = stream.pending.subarray(piece.byteLength)
    send({ type: 'chunk', id, data: (piece as Base64Bytes).toBase64() })
  })
}

function cancelByteResult(id: string): void {
  const stream = byteStreams.get(id)
  if (stream === undefined) return
  endByteResult(stream)
  stream.reader?.cancel().catch(() => {})
}

function endByteResult(stream: ByteStream): void {
  stream.invocation.ended = true
  byteStreams.delete(stream.invocation.id)
}

// ---- The context ----

/** A context call made after its invocation ended: the worker refuses it without asking the platform. */
class ContextExpiredError extends Error {
  override readonly name = 'ContextExpiredError'
}

interface PendingCall {
  resolve(value: unknown): void
  reject(error: unknown): void
}

const pendingCalls = new Map<string, PendingCall>()
let callSequence = 0

/** Sends a context call for `invocation` and resolves with the platform's reply. */
async function callPlatform(invocation: Invocation, member: string, method: string, args: readonly unknown[]): Promise<unknown> {
  if (invocation.ended) {
    throw new ContextExpiredError(
      `${member}.${method} was called after its invocation ended; a context is valid only until its handler returns`,
    )
  }
  const encoded = await encodeBytes(args)
  if (invocation.ended) {
    throw new ContextExpiredError(`${member}.${method} was called after its invocation ended`)
  }
  callSequence += 1
  const id = `c${callSequence}`
  const frame = (callArgs: unknown) => stringify({ type: 'call', id, invocationId: invocation.id, capability: invocation.capability, member, method, args: callArgs })
  let json = frame(encoded)
  if (json.length > MAX_CALL_CHARS && member === 'log') {
    // As context-log.ts would store it: the message cut to 4 KiB, fields over the limit replaced by their size.
    const [message] = args
    json = frame([typeof message === 'string' ? message.slice(0, 4096) : '[a log message too large to send]', { truncated: true, size: json.length }])
  }
  if (json.length > MAX_CALL_CHARS) {
    throw new ServiceError('BODY_TOO_LARGE', `${member}.${method} carries ${json.length} characters of JSON; a context call carries at most ${MAX_CALL_CHARS}`, { status: 413 })
  }
  return await new Promise((resolve, reject) => {
    pendingCalls.set(id, { resolve, reject })
    sendJson(json)
  })
}

function settleCall(message: ReplyMessage, hasBytes: boolean): void {
  const pending = pendingCalls.get(message.id)
  if (!pending) return
  pendingCalls.delete(message.id)
  if (message.ok) pending.resolve(hasBytes ? decodeBytes(message.value) : message.value)
  else pending.reject(callError(message.error))
}

/** A typed platform refusal becomes a ServiceError a Function can catch and switch on. */
function callError(error: WireCallError): Error {
  if (typeof error.code === 'string' && typeof error.status === 'number') {
    try {
      const details = error.details
      const isObject = typeof details === 'object' && details !== null && !Array.isArray(details)
      return new ServiceError(error.code, error.message, isObject ? { status: error.status, details: details as Record<string, unknown> } : { status: error.status })
    } catch {
      // Not a valid ServiceError (code or status out of range): report it plainly.
    }
  }
  return new Error(typeof error.message === 'string' ? error.message : 'the platform refused the call')
}

function contextFor(invocation: Invocation, meta: WireMeta): InvocationContext {
  const call = (member: string, method: string, ...args: unknown[]) => callPlatform(invocation, member, method, args)
  const fireAndForget = (member: string, method: string, args: unknown[]) => {
    if (invocation.ended) {
      diagnostic(`[functions worker] ${member}.${method} after the invocation ended was dropped:`, ...args)
      return
    }
    callPlatform(invocation, member, method, args).catch((error: unknown) => {
      diagnostic(`[functions worker] ${member}.${method} failed:`, messageOf(error))
    })
  }

  const data = Object.freeze<DataClient>({
    table: (name: string) =>
      Object.freeze({
        getById: (id) => call('data', 'table.getById', name, id),
        updateById: (id, patch) => call('data', 'table.updateById', name, id, patch),
        create: (row) => call('data', 'table.create', name, row),
        list: (options) => call('data', 'table.list', name, options ?? {}),
      } as ReturnType<DataClient['table']>),
    search: (name, options) => call('data', 'search', name, options) as ReturnType<DataClient['search']>,
  })
  const files: FilesClient = Object.freeze({
    upload: (file) => sendFile(call, file, undefined),
    download: (ref) => receiveFile(call, ref),
    replace: (ref, file) => sendFile(call, file, ref),
    remove: (ref) => call('files', 'remove', ref),
    info: (idOrRef) => call('files', 'info', idOrRef),
  } as FilesClient)
  const staging = stagingTurns()
  const askAi = (method: string, options: unknown) => withStagedImages(call, staging, options, (sent) => call('ai', method, sent))
  const ai: AiClient = Object.freeze({
    generateText: (options) => askAi('generateText', options),
    // The platform reads the provider's stream; each pull asks it for the next piece.
    streamText: async (options) => textStream(await askAi('streamText', options), call),
    generateObject: async (options) => {
      const { schema, ...rest } = options
      const value = await askAi('generateObject', { ...rest, schema: schema.describe() })
      const parsed = schema.parse(value)
      if (!parsed.ok) {
        throw new ServiceError('AI_OUTPUT_INVALID', 'The AI model returned an object that does not match the schema', {
          status: 502,
          details: { issues: parsed.issues },
        })
      }
      return parsed.value
    },
    generateImage: (options) => call('ai', 'generateImage', options),
  } as AiClient)
  const email: EmailClient = Object.freeze({ send: (message) => call('email', 'send', message) } as EmailClient)
  const notifications: NotificationsClient = Object.freeze({
    send: (notification) => call('notifications', 'send', notification),
  } as NotificationsClient)
  const jobs: JobsClient = Object.freeze({
    enqueue: (queue, payload, options) => call('jobs', 'enqueue', queue, payload, options),
    get: (jobId) => call('jobs', 'get', jobId),
  } as JobsClient)
  const integrations: IntegrationsClient = Object.freeze({
    use: (slot: string) => Object.freeze({ call: (operation: string, operationInput: unknown) => call('integrations', 'use.call', slot, operation, operationInput) }),
  })
  const secrets: SecretsClient = Object.freeze({
    get: (name) => call('secrets', 'get', name),
    require: (name) => call('secrets', 'require', name),
  } as SecretsClient)
  const log = Object.freeze<Logger>({
    debug: (message, fields) => fireAndForget('log', 'debug', fields === undefined ? [message] : [message, fields]),
    info: (message, fields) => fireAndForget('log', 'info', fields === undefined ? [message] : [message, fields]),
    warn: (message, fields) => fireAndForget('log', 'warn', fields === undefined ? [message] : [message, fields]),
    error: (message, fields) => fireAndForget('log', 'error', fields === undefined ? [message] : [message, fields]),
  })

  return Object.freeze({
    http: meta.http === null ? null : httpRoute(meta.http),
    user: meta.user === null ? null : Object.freeze({ id: meta.user.id }),
    job: meta.job === null ? null : Object.freeze({ id: meta.job.id, queue: meta.job.queue, attempt: meta.job.attempt }),
    data,
    files,
    ai,
    email,
    notifications,
    jobs,
    integrations,
    secrets,
    log,
    requestId: meta.requestId,
    environment: meta.environment,
    integration: meta.integration === null ? null : integrationFor(meta.integration, call),
  })
}

type PlatformCall = (member: string, method: string, ...args: unknown[]) => Promise<unknown>

/**
 * `files.upload` and `files.replace`: up to FILE_INLINE_BYTES in one call, larger data in
 * FILE_PIECE_BYTES pieces, each sent once the platform has stored the one before.
 */
async function sendFile(call: PlatformCall, file: unknown, replaces: unknown): Promise<unknown> {
  const record = typeof file === 'object' && file !== null ? file as Record<string, unknown> : null
  const data = record?.data
  const bytes = data instanceof Blob ? new Uint8Array(await data.arrayBuffer())
    : data instanceof ArrayBuffer ? new Uint8Array(data)
    : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    : typeof data === 'string' ? new TextEncoder().encode(data)
    : null
  if (record === null || bytes === null || bytes.byteLength <= FILE_INLINE_BYTES) {
    // Small, or not bytes at all: the platform checks it and says what is wrong.
    return replaces === undefined ? await call('files', 'upload', file) : await call('files', 'replace', replaces, file)
  }
  const { uploadId } = await call('files', 'upload.begin', {
    name: record.name, size: bytes.byteLength,
    ...(record.contentType === undefined ? {} : { contentType: record.contentType }),
    ...(replaces === undefined ? {} : { replaces }),
  }) as { uploadId: string }
  for (let offset = 0; offset < bytes.byteLength; offset += FILE_PIECE_BYTES) {
    await call('files', 'upload.chunk', uploadId, bytes.subarray(offset, offset + FILE_PIECE_BYTES))
  }
  return await call('files', 'upload.finish', uploadId)
}

/** `files.download`: the info and the bytes, fetched in FILE_PIECE_BYTES pieces past FILE_INLINE_BYTES. */
async function receiveFile(call: PlatformCall, ref: unknown): Promise<unknown> {
  const head = await call('files', 'download', ref) as { size: number; generation: number; data: Uint8Array | null }
  if (head.data !== null) return head
  const data = new Uint8Array(head.size)
  for (let offset = 0; offset < head.size; offset += FILE_PIECE_BYTES) {
    const length = Math.min(FILE_PIECE_BYTES, head.size - offset)
    const piece = await call('files', 'download.chunk', ref, { generation: head.generation, offset, length }) as Uint8Array
    data.set(piece, offset)
  }
  return { ...head, data }
}

/**
 * Runs one piece of work at a time, in the order asked: an invocation's AI calls that stage
 * images take turns, so the images the platform holds staged for the invocation are those of
 * one call (within the spec's four images and 20 MiB), however many calls the Function makes
 * at once.
 */
function stagingTurns(): <T>(work: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve()
  return (work) => {
    const turn = last.then(work)
    last = turn.then(() => {}, () => {})
    return turn
  }
}

/** Bytes of an inline attachment's `data` (as encodeBytes would send them), or null for anything else. */
async function imageBytes(attachment: unknown): Promise<Uint8Array | null> {
  if (typeof attachment !== 'object' || attachment === null || (attachment as { type?: unknown }).type !== 'image') return null
  const data = (attachment as { data?: unknown }).data
  return data instanceof Blob ? new Uint8Array(await data.arrayBuffer())
    : data instanceof ArrayBuffer ? new Uint8Array(data)
    : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    : null
}

/**
 * `ctx.ai` text calls with inline images: the images fit in the call while together they
 * hold at most FILE_INLINE_BYTES (the size `ctx.files` sends in one call); past that each
 * further image is staged on the platform first, in FILE_PIECE_BYTES pieces
 * (`attachment.begin`, `attachment.chunk`, ai/staging.ts), and the call refers to it as
 * `{ type: 'image', staged: id, contentType }`. The platform checks every image before
 * storing a byte of it and gives the staged bytes back when the call ends; a call that fails
 * here gives them back itself (`attachment.release`).
 */
async function withStagedImages(call: PlatformCall, turn: ReturnType<typeof stagingTurns>, options: unknown, send: (options: unknown) => Promise<unknown>): Promise<unknown> {
  const attachments = typeof options === 'object' && options !== null ? (options as { attachments?: unknown }).attachments : undefined
  if (!Array.isArray(attachments)) return await send(options)
  const bytes = await Promise.all(attachments.map(imageBytes))
  let inlineBytes = 0
  for (const data of bytes) inlineBytes += data?.byteLength ?? 0
  let carried = 0
  const staged = bytes.map((data) => {
    if (data === null) return false
    if (carried + data.byteLength <= FILE_INLINE_BYTES) {
      carried += data.byteLength
      return false
    }
    return true
  })
  if (!staged.includes(true)) return await send(options)
  return await turn(async () => {
    const ids: string[] = []
    try {
      const sent: unknown[] = [...attachments]
      for (const [index, data] of bytes.entries()) {
        if (!staged[index] || data === null) continue
        const { contentType } = attachments[index] as { contentType?: unknown }
        const { id } = await call('ai', 'attachment.begin', { index, size: data.byteLength, contentType, count: attachments.length, inlineBytes }) as { id: string }
        ids.push(id)
        for (let offset = 0; offset < data.byteLength; offset += FILE_PIECE_BYTES) {
          await call('ai', 'attachment.chunk', id, data.subarray(offset, offset + FILE_PIECE_BYTES))
        }
        sent[index] = { type: 'image', staged: id, contentType }
      }
      return await send({ ...options as object, attachments: sent })
    } catch (error) {
      if (ids.length > 0) call('ai', 'attachment.release', ...ids).catch(() => {})
      throw error
    }
  })
}

function integrationFor(
  integration: WireIntegration,
  call: (member: string, method: string, ...args: unknown[]) => Promise<unknown>,
): IntegrationInvocation {
  const emit = (event: unknown) => call('integration', 'emit', event) as Promise<number>
  return Object.freeze({ ...integration, emit }) as IntegrationInvocation
}

function httpRoute(route: WireHttpRoute): HttpRoute {
  const search = new URLSearchParams(route.query)
  const query: ReadonlyQuery = Object.freeze({
    get: (name: string) => search.get(name),
    getAll: (name: string) => search.getAll(name),
    has: (name: string) => search.has(name),
    keys: () => search.keys(),
    entries: () => search.entries(),
    toString: () => search.toString(),
  })
  return Object.freeze({ method: route.method, pathname: route.pathname, params: Object.freeze({ ...route.params }), query })
}

/**
 * `ctx.ai.streamText`'s stream: the reply holds the first piece and the platform's stream
 * id (null when that piece was all); each pull asks for the next piece (null at the end),
 * and cancelling the stream cancels the platform's.
 */
function textStream(
  reply: unknown,
  call: (member: string, method: string, ...args: unknown[]) => Promise<unknown>,
): ReadableStream<string> {
  const opened = reply as { stream: string | null; text: string }
  let first: string | null = opened.text
  let id = opened.stream
  return new ReadableStream<string>({
    async pull(controller) {
      if (first !== null) {
        const piece = first
        first = null
        if (piece.length > 0) controller.enqueue(piece)
        if (id === null) controller.close()
        return
      }
      if (id === null) return controller.close()
      const piece = await call('ai', 'streamText.next', id)
      if (typeof piece === 'string') return controller.enqueue(piece)
      id = null
      controller.close()
    },
    async cancel() {
      if (id === null) return
      const open = id
      id = null
      await call('ai', 'streamText.cancel', open).catch(() => {})
    },
  }, { highWaterMark: 0 })
}

// ---- Bytes in call args and replies ----

/** Copies `value` with every byte array (and Blob) replaced by `{ [BYTES_TAG]: base64 }`. */
async function encodeBytes(value: unknown): Promise<unknown> {
  const blobs: Array<{ blob: Blob; slot: Record<string, string> }> = []
  const encoded = encodeBytesSync(value, blobs, [])
  for (const { blob, slot } of blobs) {
    slot[BYTES_TAG] = (new Uint8Array(await blob.arrayBuffer()) as Base64Bytes).toBase64()
  }
  return encoded
}

function encodeBytesSync(value: unknown, blobs: Array<{ blob: Blob; slot: Record<string, string> }>, ancestors: object[]): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (value instanceof Uint8Array) return { [BYTES_TAG]: (value as Base64Bytes).toBase64() }
  if (value instanceof ArrayBuffer) return { [BYTES_TAG]: (new Uint8Array(value) as Base64Bytes).toBase64() }
  if (ArrayBuffer.isView(value)) {
    return { [BYTES_TAG]: (new Uint8Array(value.buffer, value.byteOffset, value.byteLength) as Base64Bytes).toBase64() }
  }
  if (value instanceof Blob) {
    const slot: Record<string, string> = {}
    blobs.push({ blob: value, slot })
    return slot
  }
  if (ancestors.includes(value)) throw new TypeError('a context call argument refers back to itself (a cycle)')
  ancestors.push(value)
  try {
    if (Array.isArray(value)) return value.map((entry) => encodeBytesSync(entry, blobs, ancestors))
    const prototype: unknown = Object.getPrototypeOf(value)
    if (prototype !== null && Object.getPrototypeOf(prototype) !== null) return value // Date, URL...: JSON decides
    const copy: Record<string, unknown> = {}
    for (const [key, entry] of Object.entries(value)) copy[key] = encodeBytesSync(entry, blobs, ancestors)
    return copy
  } finally {
    ancestors.pop()
  }
}

/** Replaces every `{ [BYTES_TAG]: base64 }` in a parsed reply with a Uint8Array. */
function decodeBytes(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) return value.map(decodeBytes)
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  const tagged = record[BYTES_TAG]
  if (keys.length === 1 && typeof tagged === 'string') return (Uint8Array as unknown as Base64Constructor).fromBase64(tagged)
  for (const key of keys) record[key] = decodeBytes(record[key])
  return record
}

// ---- Input ----

function handleLine(line: string): void {
  let message: PlatformMessage
  try {
    message = parse(line) as PlatformMessage
  } catch {
    diagnostic('[functions worker] ignored a line that is not JSON from the platform')
    return
  }
  if (nonce === '') {
    // The first line, before any Function code has loaded.
    const hello = message as { type?: unknown; nonce?: unknown }
    if (hello.type !== 'hello' || typeof hello.nonce !== 'string' || hello.nonce === '') {
      diagnostic('[functions worker] the platform did not start with hello')
      exitProcess(1)
      return
    }
    nonce = hello.nonce
    send({ type: 'ready', pid: Deno.pid, deno: Deno.version.deno })
    return
  }
  switch (message.type) {
    case 'invoke':
      void runInvocation(message)
      return
    case 'reply':
      settleCall(message, line.includes(BYTES_TAG))
      return
    case 'load':
      void runLoad(message)
      return
    case 'pull':
      pullByteResult(message.id)
      return
    case 'cancel':
      cancelByteResult(message.id)
      return
    default:
      diagnostic('[functions worker] ignored an unknown message from the platform')
  }
}

async function readInput(): Promise<void> {
  const reader = input.pipeThrough(new TextDecoderStream()).getReader()
  let pending = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    let start = 0
    let newline = value.indexOf('\n')
    while (newline !== -1) {
      const line = pending + value.slice(start, newline)
      pending = ''
      if (line.length > 0) handleLine(line)
      start = newline + 1
      newline = value.indexOf('\n', start)
    }
    pending += value.slice(start)
  }
}

await readInput()
// The platform closed stdin: it is done with this worker.
exitProcess(0)
