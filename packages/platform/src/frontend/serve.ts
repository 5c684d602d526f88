/**
 * Serves an app's frontend (`public/` of its active release) at `{app_url}`, with an SPA
 * fallback to `public/index.html` for paths that look like pages. Releases are immutable, so
 * their files are cached by release id (bounded by bytes) and answered with strong ETags.
 */
import type { Db } from '../db/db.ts'
import { contentTypeFor } from './content-types.ts'

interface Entry {
  sha256: string
  size: number
}

const MAX_CACHED_BYTES = 64 * 1024 * 1024
const MAX_CACHED_FILE = 1024 * 1024

export interface Frontend {
  serve(releaseId: string, request: Request): Promise<Response>
}

export function createFrontend(deps: { db: Db }): Frontend {
  const listings = new Map<string, Map<string, Entry>>()
  const contents = new Map<string, Uint8Array<ArrayBuffer>>()
  let cachedBytes = 0

  async function listing(releaseId: string): Promise<Map<string, Entry>> {
    let files = listings.get(releaseId)
    if (!files) {
      const rows = await deps.db.query<{ path: string; sha256: string; size: number }>(
        `select path, sha256, size from platform.release_files where release_id = $1 and path like 'public/%'`,
        [releaseId])
      files = new Map(rows.map((row) => [row.path.slice('public/'.length), { sha256: row.sha256, size: row.size }]))
      if (listings.size > 500) listings.clear()
      listings.set(releaseId, files)
    }
    return files
  }

  async function content(releaseId: string, path: string, entry: Entry): Promise<Uint8Array<ArrayBuffer>> {
    const key = `${releaseId}:${path}`
    const cached = contents.get(key)
    if (cached) return cached
    const [row] = await deps.db.query<{ content: Uint8Array }>(
      'select content from platform.release_files where release_id = $1 and path = $2', [releaseId, `public/${path}`])
    const bytes = new Uint8Array(row!.content)
    if (entry.size <= MAX_CACHED_FILE) {
      if (cachedBytes + bytes.byteLength > MAX_CACHED_BYTES) {
        contents.clear()
        cachedBytes = 0
      }
      contents.set(key, bytes)
      cachedBytes += bytes.byteLength
    }
    return bytes
  }

  return {
    async serve(releaseId, request) {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return new Response(JSON.stringify({ error: { code: 'METHOD_NOT_ALLOWED', message: 'the frontend answers GET and HEAD' } }),
          { status: 405, headers: { 'content-type': 'application/json', allow: 'GET, HEAD' } })
      }
      const files = await listing(releaseId)
      let path: string
      try {
        path = decodeURIComponent(new URL(request.url).pathname).replace(/^\/+/, '')
      } catch {
        return notFound()
      }
      if (path === '' || path.endsWith('/')) path += 'index.html'
      let entry = files.get(path)
      if (!entry && !path.split('/').at(-1)!.includes('.')) {
        path = 'index.html' // SPA fallback: a page route the client-side router handles
        entry = files.get(path)
      }
      if (!entry) return notFound()
      const etag = `"${entry.sha256}"`
      const headers = new Headers({
        'content-type': contentTypeFor(path),
        etag,
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'strict-origin-when-cross-origin',
      })
      if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers })
      headers.set('content-length', String(entry.size))
      if (request.method === 'HEAD') return new Response(null, { status: 200, headers })
      return new Response(await content(releaseId, path, entry), { status: 200, headers })
    },
  }
}

function notFound(): Response {
  return new Response(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no such file in this app' } }),
    { status: 404, headers: { 'content-type': 'application/json' } })
}
