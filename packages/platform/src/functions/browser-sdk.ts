/**
 * The browser SDK as an app release serves it at `{app_url}/_service/sdk.js`: the SDK with
 * the names of the release's browser-callable Functions (access `public` or `user`) written
 * in, so `service.functions.call` and `stream` refuse any other name, a `system` Function's
 * or an unknown one, before a request is sent (spec 4.2). The list carries no `system` name:
 * the platform answers a system Function exactly like an unknown name, so a page learns
 * nothing about them from the script either.
 *
 * A release's declarations never change, so each release's script is built once (one read)
 * and kept, a bounded number of releases at a time. Its ETag names the release and the SDK
 * source, so a browser revalidating (`cache-control: no-cache`) gets a 304 until a deploy, or
 * a platform upgrade that changes the SDK, and then the new script.
 */
import { renderBrowserSdk } from '@service/browser-sdk'
import type { Queryable } from '../db/db.ts'
import { sha256Hex } from '../lib/crypto.ts'
import { scriptJson } from '../lib/html.ts'
import type { FunctionDeclaration } from '../manifest/index.ts'

/** Releases whose scripts are kept; an evicted one is built again on its next request. */
const MAX_CACHED_RELEASES = 256

const HEADERS = {
  'content-type': 'text/javascript; charset=utf-8',
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
} as const

interface Script {
  readonly source: string
  readonly etag: string
}

export interface BrowserSdkScripts {
  /**
   * The SDK for an app whose active release is `releaseId` (null before the first deploy: no
   * Function is callable), or 304 when `request` already holds it.
   */
  serve(releaseId: string | null, request: Request): Promise<Response>
}

/**
 * @example
 * const sdk = createBrowserSdkScripts({ db })
 * edge.get('/_service/sdk.js', (c) => sdk.serve(c.var.app.activeReleaseId, c.req.raw))
 */
export function createBrowserSdkScripts(deps: { db: Queryable }): BrowserSdkScripts {
  const scripts = new Map<string, Promise<Script>>()

  function build(releaseId: string | null, names: readonly string[]): Script {
    const source = renderBrowserSdk({ callableFunctions: scriptJson(names) })
    // The digest changes with the SDK's own source, so an upgraded platform is not answered 304.
    return { source, etag: `"${releaseId ?? 'none'}.${sha256Hex(source).slice(0, 16)}"` }
  }

  function scriptFor(releaseId: string | null): Promise<Script> {
    const key = releaseId ?? ''
    let entry = scripts.get(key)
    if (entry === undefined) {
      if (scripts.size >= MAX_CACHED_RELEASES) scripts.delete(scripts.keys().next().value!)
      entry = (releaseId === null ? Promise.resolve([]) : callableFunctions(deps.db, releaseId))
        .then((names) => build(releaseId, names))
      entry.catch(() => scripts.delete(key))
      scripts.set(key, entry)
    }
    return entry
  }

  return {
    async serve(releaseId, request) {
      const script = await scriptFor(releaseId)
      const headers = { ...HEADERS, etag: script.etag }
      if (holds(request.headers.get('if-none-match'), script.etag)) return new Response(null, { status: 304, headers })
      return new Response(script.source, { headers })
    },
  }
}

/** The names of a release's Functions a browser may call, sorted. */
export async function callableFunctions(db: Queryable, releaseId: string): Promise<string[]> {
  const rows = await db.query<{ functions: FunctionDeclaration[] | null }>(
    `select manifest -> 'functions' as functions from platform.releases where id = $1`, [releaseId])
  return (rows[0]?.functions ?? [])
    .filter((declaration) => declaration.access !== 'system')
    .map((declaration) => declaration.name)
    .sort()
}

/** Whether an `If-None-Match` header names `etag` (weak comparison, as RFC 9110 asks for GET). */
function holds(header: string | null, etag: string): boolean {
  if (header === null) return false
  return header.split(',').some((tag) => {
    const trimmed = tag.trim()
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag
  })
}
