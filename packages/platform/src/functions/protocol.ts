/**
 * The wire protocol between the platform (Node) and a Functions worker (Deno), shared by
 * both sides as types only. It runs over the worker's stdin (platform to worker) and
 * stdout (worker to platform) as newline-delimited JSON: one message per line, UTF-8.
 * `JSON.stringify` never emits a raw newline, so a line is always a whole message. The
 * worker's stderr carries diagnostics only (a Function's `console.*` output and the
 * worker's own warnings); the platform logs it and never parses it.
 *
 * Platform to worker:
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

/** Most decoded bytes in one `chunk`; the worker splits larger pieces. */
export const BYTE_CHUNK_BYTES = 64 * 1024

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

export type PlatformMessage = InvokeMessage | LoadMessage | ReplyMessage | PullMessage | CancelMessage

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
