/**
 * The browser SDK's `service.data.search(name, options)` (issue 16): `POST
 * /_service/search/<name>` on the app origin with the options as the JSON body, answering
 * `{ hits }` or the search's error. It runs the app's active release's declared search under
 * the caller's own identity, as a `public` Function invoked by the same caller would (the
 * namespace's user role with the person's claims, or anonymous), so RLS decides what is
 * read. Same-origin SDK calls only (the `x-service-sdk: 1` header, like service.files).
 */
import type { Db } from '../db/db.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import type { NamespaceSql } from '../namespaces/namespace-sql.ts'
import { ServiceError } from '../lib/errors.ts'
import { runSearch } from './run.ts'

export interface SearchRequestTarget {
  readonly appId: string
  readonly releaseId: string | null
  /** The app's origin on this request (same-origin check). */
  readonly origin: string
  readonly user: { readonly id: string; readonly email?: string | null } | null
  readonly name: string
}

/** Largest request body: the options with a vector of 16,000 float32 values as JSON text. */
const MAX_BODY_BYTES = 512 * 1024

/**
 * @example
 * edge.post('/_service/search/:name', (c) => search(c.req.raw, { appId, releaseId, origin, user, name }))
 */
export function searchRoutes(deps: { db: Db; sql?: NamespaceSql }): (request: Request, target: SearchRequestTarget) => Promise<Response> {
  return async (request, target) => {
    const sent = request.headers.get('origin')
    if ((sent && sent !== target.origin) || request.headers.get('x-service-sdk') !== '1') {
      throw new ServiceError('FORBIDDEN', 'search answers same-origin SDK calls only (service.data.search)')
    }
    if (request.method !== 'POST') throw new ServiceError('METHOD_NOT_ALLOWED', 'search with POST /_service/search/<name>')
    if (target.releaseId === null) throw new ServiceError('APP_NOT_DEPLOYED', 'this app has no release yet')
    const namespace = await findNamespace(deps.db, target.appId)
    if (namespace === null) throw new ServiceError('APP_NOT_DEPLOYED', 'this app has no release yet')
    const text = await request.text()
    if (new TextEncoder().encode(text).length > MAX_BODY_BYTES) {
      throw new ServiceError('SEARCH_INPUT_INVALID', `the search options are over ${MAX_BODY_BYTES} bytes`, { details: { search: target.name.slice(0, 64), field: 'options' } })
    }
    let options: unknown
    try {
      options = JSON.parse(text)
    } catch {
      throw new ServiceError('SEARCH_INPUT_INVALID', 'the search options must be a JSON object', { details: { search: target.name.slice(0, 64), field: 'options' } })
    }
    const aud = target.appId
    const user = target.user
    const result = await runSearch({
      db: deps.db, ...(deps.sql ? { sql: deps.sql } : {}),
      namespace, releaseId: target.releaseId,
      identity: {
        role: 'user',
        claims: user ? { sub: user.id, role: 'authenticated', aud, ...(user.email ? { email: user.email } : {}) } : { role: 'anon', aud },
        canWrite: false,
      },
      args: [target.name, options],
    })
    return Response.json(result, { headers: { 'cache-control': 'no-store' } })
  }
}
