/**
 * The browser SDK's `service.files` (upload, download, info) on the app origin, for the
 * signed-in person's own files under the same rules as `ctx.files` (files.ts): a browser
 * acts as its person, never as the app, so it reads and writes only that person's uploads,
 * and an anonymous browser nothing (uploads AUTH_REQUIRED, reads FILE_NOT_FOUND).
 *
 *   POST /_service/files               body: the bytes; content-type: the file's; x-file-name: its name (URI-encoded)
 *   GET  /_service/files/<ref>         the bytes (streamed), as an attachment
 *   GET  /_service/files/<idOrRef>/info
 *
 * Every request needs the SDK's `x-service-sdk: 1` header (and a same-origin Origin when one
 * is sent): a page cannot be navigated to an uploaded file, so an uploaded HTML file never
 * runs as the app. Bodies stream to storage and back; nothing holds a whole file.
 */
import { ServiceError } from '../lib/errors.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import type { Db } from '../db/db.ts'
import type { FileCaller, ManagedFiles } from './files.ts'

export interface FilesRequestTarget {
  readonly appId: string
  /** The app's origin on this request (same-origin check). */
  readonly origin: string
  readonly userId: string | null
}

async function* bodyChunks(body: ReadableStream<Uint8Array> | null): AsyncIterable<Uint8Array> {
  if (body === null) return
  const reader = body.getReader()
  try {
    for (;;) {
      const step = await reader.read()
      if (step.done) return
      yield step.value
    }
  } finally {
    reader.releaseLock()
  }
}

function streamOf(chunks: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const step = await iterator.next()
      if (step.done) controller.close()
      else controller.enqueue(step.value)
    },
    async cancel() {
      await iterator.return?.()
    },
  }, { highWaterMark: 0 })
}

/**
 * @example
 * const handle = filesRoutes({ db, files })
 * edge.all('/_service/files/*', (c) => handle(c.req.raw, { appId: app.id, origin, userId: caller.user?.id ?? null }))
 */
export function filesRoutes(deps: { db: Db; files: ManagedFiles }): (request: Request, target: FilesRequestTarget) => Promise<Response> {
  return async (request, target) => {
    const sent = request.headers.get('origin')
    if ((sent && sent !== target.origin) || request.headers.get('x-service-sdk') !== '1') {
      throw new ServiceError('FORBIDDEN', 'files answer same-origin SDK calls only (service.files)')
    }
    const namespace = await findNamespace(deps.db, target.appId)
    if (namespace === null) throw new ServiceError('APP_NOT_DEPLOYED', 'this app has no release yet')
    const caller: FileCaller = { appId: target.appId, namespaceId: namespace.id, userId: target.userId, system: false, jobId: null }
    const path = new URL(request.url).pathname.slice('/_service/files'.length)
    const noStore = { 'cache-control': 'no-store' }
    if (path === '' || path === '/') {
      if (request.method !== 'POST') throw new ServiceError('METHOD_NOT_ALLOWED', 'upload with POST /_service/files')
      const length = Number(request.headers.get('content-length') ?? 'NaN')
      if (Number.isFinite(length) && length > deps.files.maxFileBytes) {
        throw new ServiceError('FILE_TOO_LARGE', `A file is at most ${deps.files.maxFileBytes} bytes (FILES_MAX_FILE_MB)`, { details: { limit: deps.files.maxFileBytes } })
      }
      let name: string
      try {
        name = decodeURIComponent(request.headers.get('x-file-name') ?? '')
      } catch {
        throw new ServiceError('FILE_INVALID', 'x-file-name must be the file name, URI-encoded', { details: { field: 'name' } })
      }
      const info = await deps.files.upload(caller, {
        name, contentType: request.headers.get('content-type') ?? 'application/octet-stream', chunks: bodyChunks(request.body),
      })
      return Response.json(info, { status: 201, headers: noStore })
    }
    const match = /^\/([^/]+)(\/info)?$/.exec(path)
    if (match === null) throw new ServiceError('NOT_FOUND', 'no such files endpoint')
    if (request.method !== 'GET' && request.method !== 'HEAD') throw new ServiceError('METHOD_NOT_ALLOWED', 'files are read with GET')
    const idOrRef = decodeURIComponent(match[1]!)
    if (match[2] !== undefined) return Response.json(await deps.files.info(caller, idOrRef), { headers: noStore })
    const opened = await deps.files.open(caller, idOrRef)
    const headers = {
      ...noStore,
      'content-type': opened.info.contentType,
      'content-length': String(opened.info.size),
      'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(opened.info.name)}`,
      'x-content-type-options': 'nosniff',
      'content-security-policy': "sandbox; default-src 'none'",
      'x-file-info': encodeURIComponent(JSON.stringify(opened.info)),
    }
    if (request.method === 'HEAD') return new Response(null, { headers })
    return new Response(streamOf(await opened.read()), { headers })
  }
}
