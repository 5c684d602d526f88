/**
 * `{app_url}/rest/v1`: the PostgREST-compatible data API of an app's production namespace.
 * Admission has already happened at the edge. Each request runs as the namespace's user role
 * with `request.jwt.claims` for the caller (a signed-in person, the owner behind an app
 * access token, or anonymous); row-level security decides the rest. Anonymous callers may
 * read (public apps' deliberately public policies) but never write: writes are refused here,
 * before any SQL runs.
 */
import type { Db } from '../db/db.ts'
import { findNamespace, runAsRole, type Namespace } from '../deploy/namespaces.ts'
import type { App } from '../apps/apps.ts'
import type { User } from '../identity/users.ts'
import { PostgrestError, toPostgrestError } from './errors.ts'
import type { PostgrestErrorBody } from './parse-errors.ts'
import type { Preferences, ReadRequest } from './query-ast.ts'
import { parseMutationParams, parsePrefer, parseReadRequest } from './query-parser.ts'
import type { Schema, SchemaCache } from './schema.ts'
import { buildCall, buildRead, buildWrite, chooseFunction, type Statement } from './sql.ts'

export interface DataCaller {
  user: User | null
}

export interface DataApiDeps {
  db: Db
  schemas: SchemaCache
}

const SINGLE_OBJECT = 'application/vnd.pgrst.object+json'
const MAX_BODY_BYTES = 10 * 1024 * 1024

interface Result {
  body: unknown
  count: number | null
  keys?: Record<string, unknown>[] | null
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  })
}

function errorResponse(status: number, body: PostgrestErrorBody): Response {
  return json(status, body)
}

async function readBody(request: Request): Promise<unknown> {
  const text = await request.text()
  if (text.length > MAX_BODY_BYTES) throw new PostgrestError('PGRST413', 413, 'The request body is too large')
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text)
  } catch {
    throw new PostgrestError('PGRST102', 400, 'Empty or invalid json')
  }
}

export function createDataApi(deps: DataApiDeps) {
  const namespaces = new Map<string, Namespace>()

  async function namespaceOf(app: App): Promise<Namespace> {
    let namespace = namespaces.get(app.id)
    if (!namespace) {
      const found = await findNamespace(deps.db, app.id)
      if (!found) throw new PostgrestError('PGRST002', 503, `${app.slug} has no database yet; deploy it first`)
      namespace = found
      namespaces.set(app.id, namespace)
    }
    return namespace
  }

  async function run(namespace: Namespace, caller: DataCaller, app: App, statement: Statement): Promise<Result> {
    const claims = caller.user
      ? { sub: caller.user.id, role: 'authenticated', email: caller.user.email, aud: app.id }
      : { role: 'anon', aud: app.id }
    return (await runAsRole(deps.db, { namespace, role: 'user' }, statement.sql, { claims, params: statement.params })) as Result
  }

  function refuseAnonymousWrite(caller: DataCaller) {
    if (!caller.user) {
      throw new PostgrestError('42501', 401, 'Writes need a signed-in user: anonymous callers can only read',
        { hint: 'Sign in first; the browser SDK does this for you' })
    }
  }

  function readResponse(request: Request, parsed: ReadRequest, result: Result, method: string): Response {
    const rows = Array.isArray(result.body) ? result.body : []
    const first = parsed.offset
    const range = rows.length > 0 ? `${first}-${first + rows.length - 1}` : '*'
    const total = result.count === null ? '*' : String(result.count)
    const partial = result.count !== null && (first > 0 || first + rows.length < result.count)
    const headers = { 'content-range': `${range}/${total}` }
    if ((request.headers.get('accept') ?? '').includes(SINGLE_OBJECT)) {
      if (rows.length !== 1) {
        throw new PostgrestError('PGRST116', 406, 'JSON object requested, multiple (or no) rows returned', {
          details: `The result contains ${rows.length} rows`,
        })
      }
      return json(200, method === 'HEAD' ? undefined : rows[0], { ...headers, 'content-type': `${SINGLE_OBJECT}; charset=utf-8` })
    }
    return json(partial ? 206 : 200, method === 'HEAD' ? undefined : rows, headers)
  }

  async function read(ctx: Context, resource: string, url: URL): Promise<Response> {
    const parsed = parseReadRequest(resource, url.searchParams, {
      range: ctx.request.headers.get('range'),
      rangeUnit: ctx.request.headers.get('range-unit'),
    })
    const result = await run(ctx.namespace, ctx.caller, ctx.app, buildRead(ctx.schema, parsed, ctx.prefer))
    return readResponse(ctx.request, parsed, result, ctx.request.method)
  }

  async function write(ctx: Context, resource: string, url: URL): Promise<Response> {
    refuseAnonymousWrite(ctx.caller)
    const method = ctx.request.method as 'POST' | 'PATCH' | 'DELETE'
    const parsed = parseMutationParams(resource, url.searchParams, { method })
    const body = method === 'DELETE' ? null : await readBody(ctx.request)
    const result = await run(ctx.namespace, ctx.caller, ctx.app, buildWrite(ctx.schema, { request: parsed, prefer: ctx.prefer, body }))
    const count = result.count ?? 0
    const preferenceApplied: Record<string, string> = ctx.prefer.return ? { 'preference-applied': `return=${ctx.prefer.return}` } : {}
    const range = method === 'POST' ? '*/*' : count > 0 ? `0-${count - 1}/*` : '*/*'
    const headers: Record<string, string> = { 'content-range': range, ...preferenceApplied }
    if (method === 'POST' && result.keys?.length === 1) {
      const key = result.keys[0]!
      headers.location = `/${resource}?${Object.entries(key).map(([k, v]) => `${encodeURIComponent(k)}=eq.${encodeURIComponent(String(v))}`).join('&')}`
    }
    const created = method === 'POST' ? 201 : 200
    if (ctx.prefer.return === 'representation') {
      const rows = Array.isArray(result.body) ? result.body : []
      if ((ctx.request.headers.get('accept') ?? '').includes(SINGLE_OBJECT)) {
        if (rows.length !== 1) {
          throw new PostgrestError('PGRST116', 406, 'JSON object requested, multiple (or no) rows returned', { details: `The result contains ${rows.length} rows` })
        }
        return json(created, rows[0], { ...headers, 'content-type': `${SINGLE_OBJECT}; charset=utf-8` })
      }
      return json(created, rows, headers)
    }
    if (ctx.prefer.return === 'headers-only' && method === 'POST') return new Response(null, { status: 201, headers })
    return new Response(null, { status: method === 'POST' ? 201 : 204, headers })
  }

  async function rpc(ctx: Context, name: string, url: URL): Promise<Response> {
    const overloads = ctx.schema.functions.get(name) ?? []
    const argumentNames = new Set(overloads.flatMap((fn) => fn.arguments.map((a) => a.name)))
    const method = ctx.request.method
    const parsed = parseReadRequest(name, url.searchParams, { argumentNames })
    let args: Record<string, unknown>
    if (method === 'GET' || method === 'HEAD') {
      args = Object.fromEntries(parsed.rpcArguments.map((a) => [a.name, a.value]))
    } else if (method === 'POST') {
      const body = await readBody(ctx.request)
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw new PostgrestError('PGRST102', 400, 'Empty or invalid json: function arguments are a JSON object')
      }
      args = body as Record<string, unknown>
    } else {
      throw new PostgrestError('PGRST101', 405, 'Only GET and POST are allowed for functions')
    }
    const fn = chooseFunction(ctx.schema, name, new Set(Object.keys(args)))
    if (fn.volatility === 'volatile') {
      if (method !== 'POST') {
        throw new PostgrestError('25006', 405, `function ${name} changes data (it is volatile): call it with POST`)
      }
      refuseAnonymousWrite(ctx.caller)
    }
    const result = await run(ctx.namespace, ctx.caller, ctx.app, buildCall(ctx.schema, fn, args, parsed, ctx.prefer))
    if (fn.returnsSet && !fn.returnsScalar) return readResponse(ctx.request, parsed, result, method)
    return json(200, method === 'HEAD' ? undefined : result.body)
  }

  interface Context {
    app: App
    caller: DataCaller
    request: Request
    namespace: Namespace
    schema: Schema
    prefer: Preferences
  }

  return {
    /** Answers one request under `/rest/v1/`. */
    async handle(app: App, caller: DataCaller, request: Request): Promise<Response> {
      try {
        if (!app.activeReleaseId) throw new PostgrestError('PGRST002', 503, `${app.slug} has no release yet`)
        const url = new URL(request.url)
        const path = url.pathname.replace(/^\/rest\/v1\/?/, '')
        const segments = path.split('/').map((s) => decodeURIComponent(s))
        const namespace = await namespaceOf(app)
        const schema = await deps.schemas.get(deps.db, { schemaName: namespace.schemaName, releaseId: app.activeReleaseId })
        const ctx: Context = { app, caller, request, namespace, schema, prefer: parsePrefer(request.headers.get('prefer')) }
        if (segments.length === 2 && segments[0] === 'rpc' && segments[1]) return await rpc(ctx, segments[1], url)
        if (segments.length !== 1 || !segments[0]) {
          throw new PostgrestError('PGRST125', 404, `Invalid path specified in request URL: ${url.pathname}`)
        }
        const method = request.method
        if (method === 'GET' || method === 'HEAD') return await read(ctx, segments[0], url)
        if (method === 'POST' || method === 'PATCH' || method === 'DELETE') return await write(ctx, segments[0], url)
        throw new PostgrestError('PGRST117', 405, `Unsupported HTTP method: ${method}`)
      } catch (error) {
        const described = toPostgrestError(error, caller.user !== null)
        if (described) return errorResponse(described.status, described.body)
        throw error
      }
    },
  }
}
