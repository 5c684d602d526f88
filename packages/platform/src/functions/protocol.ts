/**
 * The wire protocol between the platform (Node) and a Functions worker (Deno), shared by
 * both sides (types, limits and one check). It runs over the worker's stdin (platform to
 * worker) and stdout (worker to platform) as newline-delimited JSON: one message per line,
 * UTF-8. `JSON.stringify` never emits a raw newline, so a line is always a whole message.
 * The worker's stderr carries diagnostics only (a Function's `console.*` output and the
 * worker's own warnings); the platform logs it and never parses it.
 *
 * The worker is untrusted: Function code runs in its isolate and can write to fd 1
 * (`node:fs`) or bend the worker's own serialisation. So the platform's first stdin line is
 * `hello` with a per-worker random `nonce`, read before any Function code loads, and every
 * worker line is `<nonce><json>`, with `"type"` the JSON's first key: the platform checks
 * the nonce and the type's size limit (WORKER_MESSAGE_LIMITS) before it parses anything,
 * and kills the worker on any line or message the protocol does not allow (see pool.ts).
 *
 * Platform to worker:
 *   hello   { type, nonce }                                      first line: frame every output line with nonce
 *   invoke  { type, id, capability, entrypoint, input, meta }   run a Function
 *   reply   { type, id, ok: true, value } | { type, id, ok: false, error }   answer a call
 *   load    { type, id, entrypoint }                             import only (warm-up)
 *   pull    { type, id }                                         send the next piece of a byte result
 *   cancel  { type, id }                                         the reader of a byte result went away
 * Worker to platform:
 *   ready   { type, pid, deno }                                  the worker is listening
 *   result  { type, id, ok: true, value } | { type, id, ok: false, error }   an invoke ended
 *   call    { type, id, invocationId, capability, member, method, args }   a context call
 *   loaded  { type, id, ok, error? }                             a load ended
 *   head    { type, id, status, headers }                        an invoke returned bytes (see below)
 *   chunk   { type, id, data }                                   one piece of them, answering a pull
 *
 * Ids: `invoke`/`result` and `load`/`loaded` share the platform's id; `call`/`reply`
 * share the worker's id. The `capability` of an invoke is a random token; the worker
 * puts it on every context call of that invocation and drops it when the invocation
 * ends. The platform answers a call only while the capability belongs to a live
 * invocation of that worker, and it takes the caller's identity from its own record of
 * the invocation, never from the message.
 *
 * Bytes (`files.upload` data, `files.download` results, image attachments) cannot travel
 * as JSON, so inside call `args` and reply `value`s a `Uint8Array` is sent as the
 * one-key object `{ "$service.bytes": "<base64>" }`. Function results are plain JSON.
 *
 * Byte results. An invoke with `bytes: true` (an HTTP call) lets a Function return bytes
 * instead of JSON: a `Response`, a `ReadableStream` of `Uint8Array` or string chunks, or a
 * `Uint8Array`. The worker reads the first piece before it answers, so a failure before
 * the first byte is an ordinary failed `result`. Then it sends `head`, and one `chunk`
 * (base64, at most BYTE_CHUNK_BYTES decoded) per `pull` from the platform, which pulls only
 * as fast as its reader reads: that is the backpressure. A `result` ends the byte result
 * (ok: the stream is complete; failed: it broke off). The invocation, its capability and
 * its timeout last until that `result`, or until the platform sends `cancel`.
 */

/** The key of the one-key object that carries bytes in call args and reply values. */
export const BYTES_TAG = '$service.bytes'

/** The route facts a route invocation carries; `query` is the query string without `?`. */
export interface WireHttpRoute {
  readonly method: string
  readonly pathname: string
  readonly params: Readonly<Record<string, string>>
  readonly query: string
}

/** What a provider Function's `integration` member says (spec 2.10); `emit` is added by the worker. */
export interface WireIntegration {
  readonly connectionId: string
  readonly trigger: 'operation' | 'sync' | 'webhook' | 'oauth'
  readonly operation?: string
  readonly consumerAppId?: string
}

/** The invocation facts the worker turns into the context's plain members. */
export interface WireMeta {
  readonly requestId: string
  readonly environment: 'production' | 'development'
  readonly user: { readonly id: string } | null
  readonly job: { readonly id: string; readonly queue: string; readonly attempt: number } | null
  readonly http: WireHttpRoute | null
  readonly integration: WireIntegration | null
}

export interface InvokeMessage {
  readonly type: 'invoke'
  readonly id: string
  readonly capability: string
  /** A path relative to the bundle directory, such as `functions/create-task.ts`. */
  readonly entrypoint: string
  readonly input: unknown
  readonly meta: WireMeta
  /** The caller takes a byte result (an HTTP call); otherwise returning bytes is an invalid return. */
  readonly bytes?: boolean
}

/**
 * Managed files cross the pipe inside context calls (files/context.ts): a file of up to
 * FILE_INLINE_BYTES in one call, a larger one in pieces of FILE_PIECE_BYTES (upload.chunk,
 * download.chunk), so no call or reply nears MAX_CALL_CHARS and the platform holds a piece
 * at a time.
 */
export const FILE_INLINE_BYTES = 256 * 1024
export const FILE_PIECE_BYTES = 512 * 1024

/** Most decoded bytes in one `chunk`; the worker splits larger pieces. */
export const BYTE_CHUNK_BYTES = 64 * 1024

/** Most characters of a Function's JSON result (its `result` message); larger results stream as bytes. */
export const MAX_RESULT_CHARS = 8 * 1024 * 1024
/** Most characters of a context call (`call` message): a data row, a log line, a queue payload. */
export const MAX_CALL_CHARS = 1024 * 1024
/** A failure's message and stack are cut to these lengths by the worker (a longer one is a protocol violation). */
export const MAX_FAILURE_MESSAGE_CHARS = 4 * 1024
export const MAX_FAILURE_STACK_CHARS = 16 * 1024
/** Longest ServiceError code. */
export const MAX_ERROR_CODE_CHARS = 128

/**
 * The longest JSON text (in characters, the nonce not counted) of each worker message; a
 * longer line ends the worker before it is parsed. The worker keeps under them: it fails a
 * result that is too large as `invalid_return`, refuses a context call that is too large,
 * and cuts failure messages and stacks.
 */
export const WORKER_MESSAGE_LIMITS: Readonly<Record<WorkerMessage['type'], number>> = {
  ready: 1024,
  result: MAX_RESULT_CHARS,
  call: MAX_CALL_CHARS,
  loaded: 64 * 1024,
  head: 64 * 1024,
  chunk: Math.ceil(BYTE_CHUNK_BYTES / 3) * 4 + 1024,
}

const ERROR_CODE_PATTERN = /^[A-Z][A-Z0-9_]*$/

/**
 * Why a typed error (a thrown ServiceError, or a worker's report of one) cannot become an
 * HTTP error response, or null: the code is UPPER_SNAKE of at most MAX_ERROR_CODE_CHARS,
 * the status an integer 400 to 599, the message a string of at most MAX_FAILURE_MESSAGE_CHARS.
 */
export function serviceErrorProblem(error: { readonly code: unknown; readonly status: unknown; readonly message: unknown }): string | null {
  const { code, status, message } = error
  if (typeof code !== 'string' || code.length > MAX_ERROR_CODE_CHARS || !ERROR_CODE_PATTERN.test(code)) return 'its code is not UPPER_SNAKE_CASE of at most 128 characters'
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) return `its status ${String(status).slice(0, 32)} is not an HTTP error status (400 to 599)`
  if (typeof message !== 'string' || message.length > MAX_FAILURE_MESSAGE_CHARS) return 'its message is not a string of at most 4096 characters'
  return null
}

export interface LoadMessage {
  readonly type: 'load'
  readonly id: string
  readonly entrypoint: string
}

/** A failed context call as the worker sees it. With `code` and `status` it becomes a ServiceError. */
export interface WireCallError {
  readonly message: string
  readonly code?: string
  readonly status?: number
  readonly details?: unknown
}

export type ReplyMessage =
  | { readonly type: 'reply'; readonly id: string; readonly ok: true; readonly value: unknown }
  | { readonly type: 'reply'; readonly id: string; readonly ok: false; readonly error: WireCallError }

export interface PullMessage {
  readonly type: 'pull'
  readonly id: string
}

export interface CancelMessage {
  readonly type: 'cancel'
  readonly id: string
}

/** The platform's first line to a worker: the nonce that starts each of the worker's lines. */
export interface HelloMessage {
  readonly type: 'hello'
  readonly nonce: string
}

export type PlatformMessage = HelloMessage | InvokeMessage | LoadMessage | ReplyMessage | PullMessage | CancelMessage

/** Why a Function failed, as the worker reports it. */
export type WireFailure =
  | {
    readonly kind: 'service'
    readonly code: string
    readonly message: string
    readonly status: number
    readonly details?: unknown
  }
  | {
    readonly kind: 'import' | 'invalid_return' | 'unknown'
    readonly message: string
    readonly stack?: string
  }

export interface ReadyMessage {
  readonly type: 'ready'
  readonly pid: number
  readonly deno: string
}

export type ResultMessage =
  | { readonly type: 'result'; readonly id: string; readonly ok: true; readonly value: unknown }
  | { readonly type: 'result'; readonly id: string; readonly ok: false; readonly error: WireFailure }

export interface CallMessage {
  readonly type: 'call'
  readonly id: string
  readonly invocationId: string
  readonly capability: string
  /** A context member: `data`, `files`, `ai`, `email`, `notifications`, `jobs`, ... */
  readonly member: string
  /** The method, dotted after a sub-client: `table.getById` (args start with the table), `use.call`. */
  readonly method: string
  readonly args: readonly unknown[]
}

export type LoadedMessage =
  | { readonly type: 'loaded'; readonly id: string; readonly ok: true }
  | { readonly type: 'loaded'; readonly id: string; readonly ok: false; readonly error: WireFailure }

/** The start of a byte result: status and headers as the Function gave them (the platform filters them). */
export interface HeadMessage {
  readonly type: 'head'
  readonly id: string
  readonly status: number
  readonly headers: ReadonlyArray<readonly [string, string]>
}

export interface ChunkMessage {
  readonly type: 'chunk'
  readonly id: string
  /** Base64 of at most BYTE_CHUNK_BYTES bytes. */
  readonly data: string
}

export type WorkerMessage = ReadyMessage | ResultMessage | CallMessage | LoadedMessage | HeadMessage | ChunkMessage
