/**
 * `POST {app_url}/_service/functions/<name>`: the JSON body (at most 1 MiB) is the input,
 * and the Function's value is the JSON response body. Errors use the platform's shape
 * `{ error: { code, message, details? } }` with the typed status; failures that are not a
 * typed ServiceError are generic in production and detailed in development.
 */
import type { Context } from 'hono'
import type { App } from '../apps/apps.ts'
import { functionAccess, notFound, type CallerVia } from './access.ts'
import { failureResponse } from './failures.ts'
import type { FunctionHost, InvocationUser } from './host.ts'

export const MAX_INPUT_BYTES = 1024 * 1024

export interface FunctionCallDeps {
  readonly host: FunctionHost
  readonly production: boolean
  readonly appOrigin: (app: App) => string
}

export interface FunctionCaller {
  readonly user: InvocationUser | null
  readonly via: CallerVia
}

function errorJson(c: Context, status: number, error: { code: string; message: string; details?: unknown }): Response {
  return c.json({ error }, status as 400)
}

/**
 * Handles one Function call for the app and caller the edge found.
 *
 * @example
 * edge.post('/_service/functions/:name', (c) => callFunction(deps, c, { app: c.var.app, caller: c.var.caller, name: c.req.param('name') }))
 */
export async function callFunction(deps: FunctionCallDeps, c: Context, target: { app: App; caller: FunctionCaller; name: string }): Promise<Response> {
  const { app, caller, name } = target
  if (c.req.method !== 'POST') return errorJson(c, 405, { code: 'METHOD_NOT_ALLOWED', message: 'call a Function with POST' })
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
    appOrigin: deps.appOrigin(app),
  }, name)
  if (!verdict.allowed) return errorJson(c, verdict.status, { code: verdict.code, message: verdict.message })

  const input = await readInput(c.req.raw)
  if (!input.ok) return errorJson(c, input.status, input.error)
  const result = await deps.host.run(fn, { input: input.value, user: caller.user })
  if (result.ok) {
    return new Response(JSON.stringify(result.value ?? null), { status: 200, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } })
  }
  const { status, body } = failureResponse(result.error, { environment: deps.production ? 'production' : 'development' })
  return c.json(body, status as 400, { 'cache-control': 'no-store' })
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
