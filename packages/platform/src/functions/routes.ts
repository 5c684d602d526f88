/**
 * Functions over HTTP, the two surfaces:
 * - `POST {app_url}/_service/functions/<name>` (the browser SDK): the JSON body (at most
 *   1 MiB) is the input. `ctx.http` is null: spec 2.10 fills it for route calls only.
 * - Function routes (schema 3, SDK 2.3.0): a request whose method and path match a route
 *   of the active release. GET and HEAD take `{}` as input (the body is not read); other
 *   methods take the JSON body. `ctx.http` carries the method, pathname, decoded path
 *   parameters and the query string. HEAD runs the handler and answers its status and
 *   headers without a body.
 * A returned JSON value is the response body (200, application/json). A Function may
 * instead return bytes (a `Response`, a `ReadableStream` or a `Uint8Array`): they stream to
 * the client as the Function produces them, with the Response's status and the headers in
 * RESPONSE_HEADERS, marked `x-service-stream: 1`. Errors use the platform's shape
 * `{ error: { code, message, details? } }` with the typed status; failures that are not a
 * typed ServiceError are generic in production and detailed in development. A caller with a
 * custom-domain session gets `ctx.data` for CUSTOM_DOMAIN_DATA_MS only (spec 5.5).
 */
import type { Context } from 'hono'
import type { App } from '../apps/apps.ts'
import { functionAccess, notFound, type CallerVia } from './access.ts'
import { CUSTOM_DOMAIN_DATA_MS } from './context-data.ts'
import { failureResponse } from './failures.ts'
import type { FunctionHost, InvocationUser, ResolvedFunction } from './host.ts'
import type { ByteResult, InvokeResult } from './pool.ts'
import type { WireHttpRoute } from './protocol.ts'
import { requestIdOf } from '../http/request-id.ts'

export const MAX_INPUT_BYTES = 1024 * 1024

/** Marks a byte result, so the browser SDK tells it from a JSON value or error. */
export const STREAM_HEADER = 'x-service-stream'

/**
 * The response headers a Function's `Response` may set; others are dropped. No
 * `set-cookie` (the app session cookie is the platform's), no hop-by-hop or length headers.
 */
const RESPONSE_HEADERS = new Set([
  'content-type', 'content-disposition', 'content-language', 'cache-control', 'etag', 'last-modified',
  'expires', 'vary', 'location', 'retry-after', 'link',
])

export interface FunctionCallDeps {
  readonly host: FunctionHost
  readonly production: boolean
}

export interface FunctionCaller {
  readonly user: InvocationUser | null
  readonly via: CallerVia
  /**
   * The custom domain the caller's browser session was brokered on: the invocation's `data`
   * then keeps its authorization for CUSTOM_DOMAIN_DATA_MS only (spec 5.5).
   */
  readonly customDomain?: string | null
}

/** `origin`: the app's origin on this request (its own, or the custom domain), for the Origin checks. */
interface CallTarget {
  readonly app: App
  readonly caller: FunctionCaller
  readonly origin: string
}

/** Every JSON answer of a Function surface (value or error): never sniffed as anything else. */
const JSON_HEADERS = { 'x-content-type-options': 'nosniff' } as const

function errorJson(c: Context, status: number, error: { code: string; message: string; details?: unknown }, headers: Record<string, string> = {}): Response {
  return c.json({ error }, status as 400, { ...JSON_HEADERS, ...headers })
}

/**
 * Handles one Function call for the app and caller the edge found.
 *
 * @example
 * edge.post('/_service/functions/:name', (c) => callFunction(deps, c, { app: c.var.app, caller: c.var.caller, name: c.req.param('name') }))
 */
export async function callFunction(deps: FunctionCallDeps, c: Context, target: CallTarget & { name: string }): Promise<Response> {
  const { app, caller, name } = target
  if (c.req.method !== 'POST') return errorJson(c, 405, { code: 'METHOD_NOT_ALLOWED', message: 'call a Function with POST' }, { allow: 'POST' })
  const fn = await deps.host.resolve(app, name)
  if (fn === null) {
    const { status, code, message } = notFound(name)
    return errorJson(c, status, { code, message })
  }
  const verdict = functionAccess({
    access: fn.declaration.access,
    signedIn: caller.user !== null,
    via: caller.via,
    origin: c.req.header('origin'),
    sdkHeader: c.req.header('x-service-sdk'),
    appOrigin: target.origin,
  }, name)
  if (!verdict.allowed) return errorJson(c, verdict.status, { code: verdict.code, message: verdict.message })

  const input = await readInput(c.req.raw)
  if (!input.ok) return errorJson(c, input.status, input.error)
  return await invoke(deps, c, { fn, input: input.value, caller, http: null })
}

/**
 * Runs the Function route the request matches, if any: null sends the request on to the
 * frontend. A path that routes only other methods answers 405 for a method the frontend
 * does not serve either (anything but GET and HEAD).
 *
 * @example
 * edge.all('*', async (c) => (await callRoute(deps, c, { app, caller })) ?? frontend.serve(...))
 */
export async function callRoute(deps: FunctionCallDeps, c: Context, target: CallTarget): Promise<Response | null> {
  const { app, caller } = target
  const method = c.req.method
  const url = new URL(c.req.url)
  const found = await deps.host.route(app, { method, pathname: url.pathname })
  if (!found.matched) {
    if (found.methods.length === 0 || method === 'GET' || method === 'HEAD') return null
    const allow = [...new Set([...found.methods, 'GET', 'HEAD'])].join(', ')
    return errorJson(c, 405, { code: 'METHOD_NOT_ALLOWED', message: `${url.pathname} answers ${allow}` }, { allow })
  }
  const head = method === 'HEAD'
  const verdict = functionAccess({
    access: found.fn.declaration.access,
    signedIn: caller.user !== null,
    via: caller.via,
    origin: c.req.header('origin'),
    sdkHeader: c.req.header('x-service-sdk'),
    appOrigin: target.origin,
    route: { method, fetchSite: c.req.header('sec-fetch-site') },
  }, found.fn.declaration.name)
  if (!verdict.allowed) return withoutBody(errorJson(c, verdict.status, { code: verdict.code, message: verdict.message }), head)

  let input: unknown = {}
  if (method !== 'GET' && !head) {
    const read = await readInput(c.req.raw)
    if (!read.ok) return errorJson(c, read.status, read.error)
    input = read.value
  }
  const http: WireHttpRoute = { method, pathname: url.pathname, params: found.params, query: url.search.slice(1) }
  return withoutBody(await invoke(deps, c, { fn: found.fn, input, caller, http }), head)
}

async function invoke(
  deps: FunctionCallDeps,
  c: Context,
  call: { fn: ResolvedFunction; input: unknown; caller: FunctionCaller; http: WireHttpRoute | null },
): Promise<Response> {
  // The request's own id (logged on its request line, sent back as x-request-id) is the
  // Function's ctx.requestId and tags its log lines, so one id follows the call everywhere.
  const requestId = requestIdOf(c.req.raw)
  const result: InvokeResult = await deps.host.run(call.fn, {
    input: call.input, user: call.caller.user, http: call.http, bytes: true,
    ...(requestId ? { requestId } : {}),
    ...(call.caller.customDomain ? { dataAuthorizationMs: CUSTOM_DOMAIN_DATA_MS } : {}),
  })
  if (result.ok) {
    if ('bytes' in result) return byteResponse(result.bytes)
    return new Response(JSON.stringify(result.value ?? null), {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...JSON_HEADERS },
    })
  }
  const { status, body } = failureResponse(result.error, { environment: deps.production ? 'production' : 'development' })
  return c.json(body, status as 400, { 'cache-control': 'no-store', ...JSON_HEADERS })
}

/**
 * A Function's bytes as the HTTP response, streamed as read; headers outside
 * RESPONSE_HEADERS, and values HTTP cannot carry (the worker is untrusted), are dropped.
 * If the response cannot be built the stream is cancelled, so the invocation ends now.
 */
function byteResponse(bytes: ByteResult): Response {
  try {
    const headers = new Headers({ [STREAM_HEADER]: '1', 'x-content-type-options': 'nosniff' })
    for (const [name, value] of bytes.headers) {
      if (!RESPONSE_HEADERS.has(name.toLowerCase())) continue
      try {
        headers.append(name, value)
      } catch {
        // A value with a control character, say: skipped like a header outside the list.
      }
    }
    if (!headers.has('cache-control')) headers.set('cache-control', 'no-store')
    const empty = bytes.status === 204 || bytes.status === 205 || bytes.status === 304
    if (empty) void bytes.body.cancel()
    return new Response(empty ? null : bytes.body, { status: bytes.status, headers })
  } catch (error) {
    void bytes.body.cancel().catch(() => {})
    throw error
  }
}

/** A HEAD answer: the same status and headers, no bytes (a byte result's stream is cancelled). */
async function withoutBodyAsync(response: Response): Promise<Response> {
  const headers = new Headers(response.headers)
  if (response.body !== null) {
    if (response.headers.has(STREAM_HEADER)) await response.body.cancel()
    else headers.set('content-length', String((await response.arrayBuffer()).byteLength))
  }
  return new Response(null, { status: response.status, headers })
}

function withoutBody(response: Response, head: boolean): Response | Promise<Response> {
  return head ? withoutBodyAsync(response) : response
}

type ReadInput =
  | { ok: true; value: unknown }
  | { ok: false; status: 400 | 413; error: { code: string; message: string } }

async function readInput(request: Request): Promise<ReadInput> {
  const tooLarge = { ok: false, status: 413, error: { code: 'BODY_TOO_LARGE', message: `a Function's input is at most ${MAX_INPUT_BYTES} bytes` } } as const
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > MAX_INPUT_BYTES) return tooLarge
  const chunks: Uint8Array[] = []
  let size = 0
  if (request.body !== null) {
    for await (const chunk of request.body) {
      size += chunk.byteLength
      if (size > MAX_INPUT_BYTES) return tooLarge
      chunks.push(chunk)
    }
  }
  const text = new TextDecoder().decode(Buffer.concat(chunks))
  if (text.trim() === '') return { ok: true, value: {} }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false, status: 400, error: { code: 'BAD_REQUEST', message: 'the body must be JSON (the Function input)' } }
  }
}
