/**
 * `ctx.files` as the platform answers it (functions/host.ts, case 'files'). Bytes cross the
 * worker pipe as Uint8Array inside JSON lines (functions/protocol.ts), and a context call
 * carries at most 1 MiB of JSON, so the worker sends a file of up to the pipe's inline size in
 * one call and a larger one in pieces of the pipe's piece size (functions/worker/worker.ts):
 *
 *   upload(file) / replace(ref, file) -> ref    one call, data inline
 *   upload.begin({ name, contentType, size, replaces? }) -> { uploadId }
 *   upload.chunk(uploadId, bytes)               in order; each resolves once storage took it
 *   upload.finish(uploadId) -> ref              the file is committed
 *   download(ref) -> info and data (inline), or info and `data: null` past the inline size
 *   download.chunk(ref, { generation, offset, length }) -> bytes
 *
 * So the platform never holds more than a piece or two of a file (and one S3 part) in
 * memory, whatever its size. An upload session belongs to the invocation that began it; one
 * left unfinished for UPLOAD_IDLE_MS is aborted and leaves nothing behind.
 */
import { randomUUID } from 'node:crypto'
import { ServiceError } from '../lib/errors.ts'
import { checkContentType, checkFileName, type FileCaller, type FileInfo, type ManagedFiles } from './files.ts'

/**
 * How the Functions pipe carries file bytes: its sizes are the worker protocol's
 * (functions/protocol.ts FILE_INLINE_BYTES and FILE_PIECE_BYTES), handed in by the
 * composition root, since the Functions host stands above files.
 */
export interface FilePipeSizes {
  /** A file up to this size crosses the pipe in one call. */
  readonly inlineBytes: number
  /** Larger files cross in pieces of at most this size. */
  readonly pieceBytes: number
}
/** An upload session without a piece this long is aborted. */
export const UPLOAD_IDLE_MS = 60 * 1000

/** A `ctx.files` call with the invocation as the host knows it. */
export interface FilesContextCall {
  readonly caller: FileCaller | null
  /** The invocation (its upload sessions are its own). */
  readonly invocation: object
  readonly method: string
  readonly args: readonly unknown[]
}

interface UploadSession {
  readonly invocation: object
  readonly push: (chunk: Uint8Array) => Promise<void>
  readonly end: () => void
  readonly fail: (error: Error) => void
  readonly done: Promise<FileInfo>
  expected: number
  received: number
  timer: ReturnType<typeof setTimeout> | undefined
}

function bad(message: string, field: string): ServiceError {
  return new ServiceError('FILE_INVALID', message, { details: { field } })
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
}

/** The bytes of `data`: a Uint8Array from the worker, or a string stored as UTF-8. */
function bytesOf(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data
  if (typeof data === 'string') return new TextEncoder().encode(data)
  throw bad('File data must be bytes (Uint8Array, ArrayBuffer or Blob) or a string', 'data')
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes
}

/**
 * A queue the upload session's pieces go through to storage: `push` resolves once the
 * storage writer has taken the piece (one piece in flight: backpressure on the worker).
 */
function pieceQueue(): { iterable: AsyncIterable<Uint8Array>; push: (chunk: Uint8Array) => Promise<void>; end: () => void; fail: (error: Error) => void } {
  let waiting: { chunk: Uint8Array; taken: () => void; dropped: (error: Error) => void } | null = null
  let wake: (() => void) | null = null
  let ended = false
  let failure: Error | null = null
  const poke = () => {
    const w = wake
    wake = null
    w?.()
  }
  return {
    iterable: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          if (failure !== null) throw failure
          if (waiting !== null) {
            const piece = waiting
            waiting = null
            piece.taken()
            yield piece.chunk
            continue
          }
          if (ended) return
          await new Promise<void>((resolve) => (wake = resolve))
        }
      },
    },
    push(chunk) {
      if (failure !== null) return Promise.reject(failure)
      if (ended) return Promise.reject(new ServiceError('FILE_UPLOAD_NOT_FOUND', 'This upload already ended'))
      if (waiting !== null) return Promise.reject(new ServiceError('FILE_UPLOAD_NOT_FOUND', 'Send the pieces of an upload one at a time, in order'))
      return new Promise<void>((taken, dropped) => {
        waiting = { chunk, taken, dropped }
        poke()
      })
    },
    end() {
      ended = true
      poke()
    },
    fail(error) {
      failure = error
      waiting?.dropped(error)
      waiting = null
      poke()
    },
  }
}

/**
 * @example
 * const files = createFilesContext(managed, { pipe: { inlineBytes: FILE_INLINE_BYTES, pieceBytes: FILE_PIECE_BYTES } })
 * await files.answer({ caller, invocation: meta, method: 'upload', args: [{ data, name, contentType }] })
 */
export function createFilesContext(files: ManagedFiles, options: { pipe: FilePipeSizes; idleMs?: number }): { answer(call: FilesContextCall): Promise<unknown> } {
  const sessions = new Map<string, UploadSession>()
  const idleMs = options.idleMs ?? UPLOAD_IDLE_MS
  const { pipe } = options

  function session(call: FilesContextCall): { id: string; session: UploadSession } {
    const id = call.args[0]
    const found = typeof id === 'string' ? sessions.get(id) : undefined
    if (found === undefined || found.invocation !== call.invocation) {
      throw new ServiceError('FILE_UPLOAD_NOT_FOUND', 'No upload in progress by that id in this invocation (finished, aborted after a minute idle, or never begun)')
    }
    return { id: id as string, session: found }
  }

  function idle(id: string, current: UploadSession): void {
    clearTimeout(current.timer)
    current.timer = setTimeout(() => {
      sessions.delete(id)
      current.fail(new ServiceError('FILE_UPLOAD_NOT_FOUND', 'The upload was idle for a minute and was aborted'))
    }, idleMs)
    current.timer.unref()
  }

  function begin(caller: FileCaller, call: FilesContextCall): { uploadId: string } {
    const options = call.args[0]
    if (!isRecord(options)) throw bad('upload.begin takes { name, contentType, size }', 'options')
    const size = options.size
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) throw bad('size must be the whole number of bytes to come', 'size')
    if (size > files.maxFileBytes) {
      throw new ServiceError('FILE_TOO_LARGE', `A file is at most ${files.maxFileBytes} bytes (FILES_MAX_FILE_MB)`, { details: { limit: files.maxFileBytes, size } })
    }
    const name = checkFileName(options.name)
    const replaces = options.replaces
    const contentType = replaces === undefined || options.contentType !== undefined ? checkContentType(options.contentType) : undefined
    const queue = pieceQueue()
    const done = typeof replaces === 'string'
      ? files.replace(caller, replaces, { name, ...(contentType === undefined ? {} : { contentType }), chunks: queue.iterable })
      : files.upload(caller, { name, contentType: contentType!, chunks: queue.iterable })
    const uploadId = randomUUID()
    const created: UploadSession = {
      invocation: call.invocation, push: queue.push, end: queue.end, fail: queue.fail, done, expected: size, received: 0, timer: undefined,
    }
    // A failure before finish (a refusal, storage) ends the session; finish or the next piece reports it.
    done.catch((error: unknown) => {
      queue.fail(error instanceof Error ? error : new Error(String(error)))
    })
    sessions.set(uploadId, created)
    idle(uploadId, created)
    return { uploadId }
  }

  return {
    async answer(call) {
      const caller = call.caller
      if (caller === null) throw new ServiceError('APP_NOT_DEPLOYED', 'this app has no namespace yet')
      switch (call.method) {
        case 'upload': {
          const file = call.args[0]
          if (!isRecord(file)) throw bad('files.upload takes { data, name, contentType }', 'file')
          const bytes = bytesOf(file.data)
          return (await files.upload(caller, { name: file.name as string, contentType: file.contentType as string, chunks: once(bytes) })).ref
        }
        case 'replace': {
          const [ref, file] = call.args
          if (!isRecord(file)) throw bad('files.replace takes (ref, { data, name })', 'file')
          const bytes = bytesOf(file.data)
          return (await files.replace(caller, ref as string, {
            name: file.name as string, ...(file.contentType === undefined ? {} : { contentType: file.contentType as string }), chunks: once(bytes),
          })).ref
        }
        case 'upload.begin':
          return begin(caller, call)
        case 'upload.chunk': {
          const { id, session: current } = session(call)
          const bytes = call.args[1]
          if (!(bytes instanceof Uint8Array)) throw bad('upload.chunk takes bytes', 'data')
          current.received += bytes.byteLength
          if (current.received > current.expected) {
            sessions.delete(id)
            const error = bad(`The upload sent more than the ${current.expected} bytes it announced`, 'size')
            current.fail(error)
            throw error
          }
          // Idle means no call in progress: the clock stops while storage takes the piece (a
          // slow write is not idleness) and starts again when it has, whatever the outcome.
          clearTimeout(current.timer)
          try {
            await current.push(bytes)
          } finally {
            if (sessions.get(id) === current) idle(id, current)
          }
          return null
        }
        case 'upload.finish': {
          const { id, session: current } = session(call)
          sessions.delete(id)
          clearTimeout(current.timer)
          if (current.received !== current.expected) {
            const error = bad(`The upload announced ${current.expected} bytes and sent ${current.received}`, 'size')
            current.fail(error)
            throw error
          }
          current.end()
          return (await current.done).ref
        }
        case 'download': {
          const opened = await files.open(caller, call.args[0] as string)
          if (opened.info.size > pipe.inlineBytes) return { ...opened.info, data: null }
          return { ...opened.info, data: await collect(await opened.read()) }
        }
        case 'download.chunk': {
          const [ref, range] = call.args
          if (!isRecord(range)) throw bad('download.chunk takes (ref, { generation, offset, length })', 'range')
          const { generation, offset, length } = range
          if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0 ||
            typeof length !== 'number' || !Number.isInteger(length) || length < 1 || length > pipe.pieceBytes) {
            throw bad(`A piece is 1 to ${pipe.pieceBytes} bytes from a whole-number offset`, 'range')
          }
          const opened = await files.open(caller, ref as string)
          if (opened.info.generation !== generation) {
            throw new ServiceError('FILE_NOT_FOUND', 'The file was replaced while it was being downloaded; download it again')
          }
          const end = Math.min(opened.info.size, offset + length)
          if (offset >= end) return new Uint8Array(0)
          return await collect(await opened.read({ offset, length: end - offset }))
        }
        case 'remove':
          await files.remove(caller, call.args[0] as string)
          return null
        case 'info':
          return await files.info(caller, call.args[0] as string)
        default:
          throw new ServiceError('BAD_REQUEST', `ctx.files has no method ${call.method.slice(0, 64)}`)
      }
    },
  }
}

/** All of a reader's bytes in one array (only for pieces and small files). */
export async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  let size = 0
  for await (const chunk of chunks) {
    parts.push(chunk)
    size += chunk.byteLength
  }
  if (parts.length === 1) return parts[0]!
  const out = new Uint8Array(size)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.byteLength
  }
  return out
}
