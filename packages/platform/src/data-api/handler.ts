/**
 * `{app_url}/rest/v1`: the PostgREST-compatible data API of an app's production namespace.
 * Admission has already happened at the edge. Each request runs in one transaction as the
 * namespace's user role with `request.jwt.claims` for the caller (a signed-in person, the
 * owner behind an app access token, or anonymous); row-level security decides the rest.
 * Reads (GET/HEAD, and calls of functions that are not volatile) run in a read-only
 * transaction, as in PostgREST. Anonymous callers may read (public apps' deliberately public
 * policies) but never write: writes, and calls of volatile functions, are refused here,
 * before any SQL runs.
 */
import type { Db } from '../db/db.ts'
import { findNamespace, type Namespace } from '../namespaces/namespaces.ts'
import type { AppTransaction, CallerGate, NamespaceSql } from '../namespaces/namespace-sql.ts'
import { ServiceError } from '../lib/errors.ts'
import type { App } from '../apps/apps.ts'
import type { User } from '../identity/index.ts'
import { contentRange, readRange } from './content-range.ts'
import { PostgrestError, toPostgrestError } from './errors.ts'
import { negotiate, type MediaType } from './media-types.ts'
import type { PostgrestErrorBody } from './parse-errors.ts'
import type { Preferences } from './query-ast.ts'
import { parseMutationParams, parsePrefer, parseReadRequest } from './query-parser.ts'
import type { Schema, SchemaCache } from './schema.ts'
import { buildCall, buildRead, buildWrite, chooseFunction, ESTIMATE_EXACT_BELOW, type Statement } from './sql.ts'

export interface DataCaller {
  user: User | null
  /** How the edge identified the caller; a session cookie must send JSON with a JSON type. */
  via?: 'anonymous' | 'session' | 'access_token' | 'app_token'
  /**
   * A caller the edge has not checked against the database (a bearer token, a session
   * cookie): the data statement checks it in its first CTE (one statement in all), and a
   * request that fails before its statement runs checks it on its own, so a refused caller
   * always gets the refusal.
   */
  gate?: CallerGate
  /**
   * With a session cookie's gate: the caller resolved without the gate, for when the gate
   * answers SVA02 (the session's access must be refreshed first, through the central auth,
   * outside any statement) or SVA01 (no live session: a stale cookie reads as anonymous, it
   * is not refused). Throws the edge's refusal for a private app. The gate raises before any
   * app code runs, so the statement is then run again, as the resolved caller.
   */
  resolve?: () => Promise<Pick<DataCaller, 'user' | 'via'>>
}

export interface DataApiDeps {
  db: Db
  schemas: SchemaCache
  /** Runs the statements as the namespace's user role (login pool or wrapper). */
  sql: NamespaceSql
}

function sqlState(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
}

/** The gate's refusals (migration 0027) as the edge answers them; null for any other error. */
function gateRefusal(error: unknown): ServiceError | null {
  const code = sqlState(error)
  if (code === 'SVA01') return new ServiceError('AUTH_REQUIRED', error instanceof Error ? error.message : 'the access token is not valid for this app')
  if (code === 'SVA03') return new ServiceError('ACCESS_DENIED', 'your account has no access to this app')
  return null
}

const MAX_BODY_BYTES = 10 * 1024 * 1024

/** What one statement answers: `{ body, count, rows, keys, inserted }` (see sql.ts). */
interface Result {
  /** The body's JSON text when the statement was built with `bodyText`. */
  body: unknown
  count: number | null
  /** Rows the statement produced (reads and calls). */
  rows?: number
  keys?: Record<string, unknown>[] | null
  inserted?: number | null
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  })
}

function errorResponse(status: number, body: PostgrestErrorBody, headers: Record<string, string> = {}): Response {
  // PostgREST asks for credentials on every 401.
  return json(status, body, status === 401 ? { 'www-authenticate': 'Bearer', ...headers } : headers)
}

function anonymousWrite(): PostgrestError {
  return new PostgrestError('42501', 401, 'Writes need a signed-in user: anonymous callers can only read',
    { hint: 'Sign in first; the browser SDK does this for you' })
}

function notSingular(rows: number): PostgrestError {
  return new PostgrestError('PGRST116', 406, 'JSON object requested, multiple (or no) rows returned', {
    details: `The result contains ${rows} rows`,
  })
}

/**
 * `Preference-Applied`, listing the honoured preferences in PostgREST's order; `allowed` says
 * which a request kind can honour.
 */
function preferenceApplied(prefer: Preferences, allowed: { resolution?: boolean; missing?: boolean; return?: boolean; maxAffected?: boolean }): Record<string, string> {
  const values = [
    allowed.resolution && prefer.resolution ? `resolution=${prefer.resolution}` : null,
    allowed.missing && prefer.missing ? `missing=${prefer.missing}` : null,
    allowed.return && prefer.return ? `return=${prefer.return}` : null,
    prefer.count ? `count=${prefer.count}` : null,
    prefer.handling ? `handling=${prefer.handling}` : null,
    allowed.maxAffected && prefer.handling === 'strict' && prefer.maxAffected !== undefined ? `max-affected=${prefer.maxAffected}` : null,
  ].filter((v) => v !== null)
  return values.length > 0 ? { 'preference-applied': values.join(', ') } : {}
}

/** `count=exact|estimated` report a total on writes; planned does not (as in PostgREST). */
function countsWrites(prefer: Preferences): boolean {
  return prefer.count === 'exact' || prefer.count === 'estimated'
}

const JSON_TYPE = /^application\/(json|vnd\.pgrst\.object\+json|vnd\.pgrst\.array\+json)\s*(;|$)/i

async function readBody(request: Request, caller: DataCaller): Promise<unknown> {
  const type = request.headers.get('content-type')
  // A JSON content type cannot be sent cross-origin without a CORS preflight, so a session
  // cookie is only honoured with one (PostgREST defaults a missing type to JSON).
  if (type !== null ? !JSON_TYPE.test(type) : caller.via === 'session') {
    throw new PostgrestError('PGRST107', 415, `Content-Type not acceptable: ${type ?? '(none)'}`, {
      hint: 'Send the body as application/json',
    })
  }
  const text = await request.text()
  if (text.length > MAX_BODY_BYTES) throw new PostgrestError('PGRST413', 413, 'The request body is too large')
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text)
  } catch {
    throw new PostgrestError('PGRST102', 400, 'Empty or invalid json')
  }
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    throw new PostgrestError('PGRST125', 404, 'Invalid path specified in request URL')
  }
}

function checkProfile(request: Request, namespace: Namespace): void {
  const name = request.method === 'GET' || request.method === 'HEAD' ? 'accept-profile' : 'content-profile'
  const profile = request.headers.get(name)
  // `public` is what supabase-js and PostgREST clients assume; the schema's own name works too.
  if (profile === null || profile === 'public' || profile === namespace.schemaName) return
  throw new PostgrestError('PGRST106', 406, 'The schema must be one of the following: public')
}

/** Who a request is from, as it becomes known. */
interface Call {
  caller: DataCaller
  /** The caller is known: its gate answered, or it was resolved without one (or had none). */
  settled: boolean
  /** The request writes (or calls a volatile function): an anonymous caller is refused. */
  writes: boolean
}

interface Context {
  app: App
  call: Call
  request: Request
  namespace: Namespace
  schema: Schema
  prefer: Preferences
  media: MediaType
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

  function claimsOf(ctx: Context): Record<string, unknown> {
    const user = ctx.call.caller.user
    return user
      ? { sub: user.id, role: 'authenticated', email: user.email, aud: ctx.app.id }
      : { role: 'anon', aud: ctx.app.id }
  }

  /** The planner's row estimate for `countSource`, explained as the caller in this transaction. */
  async function plannedRows(tx: AppTransaction, statement: Statement): Promise<number> {
    const plan = await tx.explain(statement.countSource!, statement.params)
    const rows = (plan as { Plan?: { 'Plan Rows'?: unknown } }[] | null)?.[0]?.Plan?.['Plan Rows']
    return typeof rows === 'number' ? Math.round(rows) : 0
  }

  /**
   * Runs a statement. Most requests are ONE round trip: the statement runs on its own
   * (autocommit), setting its claims, and read-only for a read, in its own first CTE. An
   * explicit transaction is used only when something must happen between the statement and
   * the commit: a planned or estimated count (a second statement in the same snapshot), or a
   * check that must roll a write back (a single object that is not one row, too many rows
   * affected), as PostgREST does.
   */
  async function execute(ctx: Context, statement: Statement, options: { readOnly: boolean; check?: (result: Result) => void }): Promise<Result> {
    try {
      return await executeOnce(ctx, statement, options)
    } catch (error) {
      if (!(await resolveCaller(ctx.call, error))) throw error
      if (writesAnonymously(ctx.call)) throw anonymousWrite()
      return executeOnce(ctx, statement, options)
    }
  }

  async function executeOnce(ctx: Context, statement: Statement, options: { readOnly: boolean; check?: (result: Result) => void }): Promise<Result> {
    const estimates = statement.countSource !== undefined && (ctx.prefer.count === 'planned' || ctx.prefer.count === 'estimated')
    const rollbackCheck = !options.readOnly && (ctx.media.single || ctx.prefer.maxAffected !== undefined)
    const target = { namespace: ctx.namespace, role: 'user' as const }
    const gate = ctx.call.caller.gate
    const run = gate ? { claims: null, readOnly: options.readOnly, gate } : { claims: claimsOf(ctx), readOnly: options.readOnly }
    if (!estimates && !rollbackCheck) {
      const result = (await deps.sql.statement(target, statement, { ...run, separateClaims: ctx.schema.partitioned })) as Result
      options.check?.(result)
      return result
    }
    return deps.sql.transaction(target, run, async (tx) => {
      const result = (await tx.statement(statement)) as Result
      if (estimates) {
        if (ctx.prefer.count === 'planned') {
          result.count = await plannedRows(tx, statement)
        } else if (result.count !== null && result.count >= ESTIMATE_EXACT_BELOW) {
          result.count = Math.max(result.count, await plannedRows(tx, statement))
        }
      }
      options.check?.(result)
      return result
    })
  }

  /** Marks the request as one that writes, and refuses it to an anonymous caller before any SQL runs. */
  function refuseAnonymousWrite(call: Call) {
    call.writes = true
    if (writesAnonymously(call)) throw anonymousWrite()
  }

  /**
   * Resolves a caller without its gate (`DataCaller.resolve`) when the gate answered SVA01 or
   * SVA02 and the caller can be resolved so; false when not. The resolver's refusals (a
   * private app) are thrown as they are.
   */
  async function resolveCaller(call: Call, error: unknown): Promise<boolean> {
    const { resolve } = call.caller
    const code = sqlState(error)
    if (!call.caller.gate || !resolve || (code !== 'SVA01' && code !== 'SVA02')) return false
    call.settled = true
    call.caller = await resolve()
    return true
  }

  /** A write by a caller who turned out anonymous: refused, as it would have been before any SQL ran. */
  function writesAnonymously(call: Call): boolean {
    return call.writes && !call.caller.user && !call.caller.gate
  }

  function singleCheck(ctx: Context, rowsOf: (result: Result) => number): (result: Result) => void {
    return (result) => {
      if (ctx.media.single && rowsOf(result) !== 1) throw notSingular(rowsOf(result))
    }
  }

  /**
   * A response of rows (a table, a view, a function's rows) with its window and count, from a
   * statement built with the media type's `BodyShape`: its body is sent as PostgreSQL wrote it.
   */
  function rowsResponse(ctx: Context, result: Result, offset: number): Response {
    const { status, header } = readRange({ offset, rows: result.rows ?? 0, total: result.count })
    const headers = { 'content-range': header, ...preferenceApplied(ctx.prefer, {}) }
    if (status === 416) {
      throw new PostgrestError('PGRST103', 416, 'Requested range not satisfiable', {
        details: `An offset of ${offset} was requested, but there are only ${result.count ?? 0} rows.`,
        headers,
      })
    }
    return textResponse(ctx, ctx.media.single ? 200 : status, result, headers)
  }

  /** The statement's body text (`bodyText`) as the response, none for HEAD. */
  function textResponse(ctx: Context, status: number, result: Result, headers: Record<string, string>): Response {
    const text = ctx.request.method === 'HEAD' || typeof result.body !== 'string' ? null : result.body
    return new Response(text, { status, headers: { ...headers, 'content-type': ctx.media.contentType } })
  }

  async function read(ctx: Context, resource: string, url: URL): Promise<Response> {
    const parsed = parseReadRequest(resource, url.searchParams, {
      range: ctx.request.headers.get('range'),
      rangeUnit: ctx.request.headers.get('range-unit'),
    })
    const statement = buildRead(ctx.schema, parsed, ctx.prefer, ctx.media)
    const result = await execute(ctx, statement, { readOnly: true, check: singleCheck(ctx, (r) => r.rows ?? 0) })
    return rowsResponse(ctx, result, parsed.offset)
  }

  async function write(ctx: Context, resource: string, url: URL): Promise<Response> {
    refuseAnonymousWrite(ctx.call)
    const method = ctx.request.method as 'POST' | 'PATCH' | 'DELETE'
    const parsed = parseMutationParams(resource, url.searchParams, { method })
    const payload = method === 'DELETE' ? null : await readBody(ctx.request, ctx.call.caller)
    const statement = buildWrite(ctx.schema, { request: parsed, prefer: ctx.prefer, body: payload, shape: ctx.media })
    const { prefer } = ctx
    const result = await execute(ctx, statement, {
      readOnly: false,
      check: (r) => {
        singleCheck(ctx, (x) => x.count ?? 0)(r)
        if (method !== 'POST' && prefer.handling === 'strict' && prefer.maxAffected !== undefined && (r.count ?? 0) > prefer.maxAffected) {
          throw new PostgrestError('PGRST124', 400, 'Query result exceeds max-affected preference constraint', {
            details: `The query affects ${r.count ?? 0} rows`,
          })
        }
      },
    })
    const count = result.count ?? 0
    const total = countsWrites(prefer) ? count : null
    const headers: Record<string, string> = {}
    let status: number
    if (method === 'POST') {
      const relation = ctx.schema.relations.get(resource)
      const upsert = parsed.onConflict !== undefined || (relation?.primaryKey.length ?? 0) > 0
      headers['content-range'] = contentRange(1, 0, total)
      Object.assign(headers, preferenceApplied(prefer, { resolution: upsert, missing: true, return: true }))
      status = prefer.resolution === 'merge-duplicates' && result.inserted === 0 ? 200 : 201
      const key = result.keys?.length === 1 ? result.keys[0] : undefined
      if (prefer.return === 'headers-only' && key) {
        const query = Object.entries(key)
          .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v === null ? 'is.null' : `eq.${String(v)}`)}`).join('&')
        headers.location = `/${resource}?${query}`
      }
    } else {
      headers['content-range'] = method === 'PATCH' ? contentRange(0, count - 1, total) : contentRange(1, 0, total)
      Object.assign(headers, preferenceApplied(prefer, { missing: method === 'PATCH', return: true, maxAffected: true }))
      status = prefer.return === 'representation' ? 200 : 204
    }
    if (prefer.return === 'representation') return textResponse(ctx, status, result, headers)
    return new Response(null, { status, headers })
  }

  async function rpc(ctx: Context, name: string, url: URL): Promise<Response> {
    const overloads = ctx.schema.functions.get(name) ?? []
    if (overloads.length === 0) chooseFunction(ctx.schema, name, new Set()) // PGRST202, before the parameters are read
    const argumentNames = new Set(overloads.flatMap((fn) => fn.arguments.map((a) => a.name)))
    const method = ctx.request.method
    const parsed = parseReadRequest(name, url.searchParams, { argumentNames })
    let args: Record<string, unknown>
    if (method === 'GET' || method === 'HEAD') {
      args = Object.fromEntries(parsed.rpcArguments.map((a) => [a.name, a.value]))
    } else if (method === 'POST') {
      const payload = await readBody(ctx.request, ctx.call.caller)
      if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
        throw new PostgrestError('PGRST102', 400, 'Empty or invalid json: function arguments are a JSON object')
      }
      args = payload as Record<string, unknown>
    } else {
      throw new PostgrestError('PGRST101', 405, 'Only GET, HEAD and POST are allowed for functions')
    }
    const fn = chooseFunction(ctx.schema, name, new Set(Object.keys(args)))
    // Volatile functions may write: never for anonymous callers, and read-only under GET.
    if (fn.volatility === 'volatile') refuseAnonymousWrite(ctx.call)
    const statement = buildCall(ctx.schema, fn, args, parsed, ctx.prefer, ctx.media)
    const returnsRows = fn.returnsSet
    const result = await execute(ctx, statement, {
      readOnly: method !== 'POST' || fn.volatility !== 'volatile',
      ...(returnsRows ? { check: singleCheck(ctx, (r) => r.rows ?? 0) } : {}),
    })
    if (fn.returnsVoid) return new Response(null, { status: 204, headers: { 'content-range': contentRange(0, 0, null) } })
    if (returnsRows && !fn.returnsScalar) return rowsResponse(ctx, result, parsed.offset)
    const rows = returnsRows ? result.rows ?? 0 : 1
    return textResponse(ctx, 200, result, { 'content-range': contentRange(0, rows - 1, null), ...preferenceApplied(ctx.prefer, {}) })
  }

  return {
    /** Answers one request under `/rest/v1/`. */
    async handle(app: App, sent: DataCaller, request: Request): Promise<Response> {
      const call: Call = { caller: sent, settled: !sent.gate, writes: false }
      const gate: CallerGate | undefined = sent.gate && {
        check: sent.gate.check,
        args: sent.gate.args,
        passed: (answer) => {
          call.settled = true
          sent.gate?.passed?.(answer)
        },
      }
      if (gate) call.caller = { ...sent, gate }
      try {
        if (!app.activeReleaseId) throw new PostgrestError('PGRST002', 503, `${app.slug} has no release yet`)
        const url = new URL(request.url)
        const path = url.pathname.replace(/^\/rest\/v1\/?/, '')
        const segments = path.split('/').map(decodeSegment)
        const media = negotiate(request.headers.get('accept'))
        const prefer = parsePrefer(request.headers.get('prefer'))
        const namespace = await namespaceOf(app)
        checkProfile(request, namespace)
        const schema = await deps.schemas.get(deps.db, { schemaName: namespace.schemaName, releaseId: app.activeReleaseId })
        const ctx: Context = { app, call, request, namespace, schema, prefer, media }
        if (segments.length === 2 && segments[0] === 'rpc' && segments[1]) return await rpc(ctx, segments[1], url)
        if (segments.length !== 1 || !segments[0]) {
          throw new PostgrestError('PGRST125', 404, `Invalid path specified in request URL: ${url.pathname}`)
        }
        const method = request.method
        if (method === 'GET' || method === 'HEAD') return await read(ctx, segments[0], url)
        if (method === 'POST' || method === 'PATCH' || method === 'DELETE') return await write(ctx, segments[0], url)
        throw new PostgrestError('PGRST117', 405, `Unsupported HTTP method: ${method}`)
      } catch (caught) {
        let error = caught
        if (call.caller.gate) {
          const refused = gateRefusal(error)
          if (refused) throw refused
          // Failed before the gate answered (a bad query, no such table): the caller first.
          if (!call.settled) {
            try {
              await deps.sql.checkCaller(call.caller.gate)
            } catch (checkError) {
              if (!(await resolveCaller(call, checkError))) throw gateRefusal(checkError) ?? checkError
              if (writesAnonymously(call)) error = anonymousWrite()
            }
          }
        }
        const described = toPostgrestError(error, call.caller.user !== null || call.caller.gate !== undefined)
        if (described) return errorResponse(described.status, described.body, error instanceof PostgrestError ? error.headers : {})
        throw error
      }
    },
  }
}
