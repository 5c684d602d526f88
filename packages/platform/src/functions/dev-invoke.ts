/**
 * Development invocation (spec 4.5 `invoke_dev_function`; the owner API now, the MCP tool
 * later): `POST /v1/apps/:appId/dev/:devName/functions/:name/invoke` with
 * `{ input?, as?: 'owner' | 'anonymous' }` runs the Function of the development
 * namespace's active release, in that namespace (its schema, secrets and logs), with
 * development error detail. Any access level may be invoked, `system` included (but not an
 * integration's OAuth exchange and refresh Functions: INTEGRATION_OAUTH_FUNCTION_NOT_INVOCABLE; its
 * operation, sync and webhook Functions run on the namespace's test connection, and without one
 * fail INTEGRATION_TEST_CONNECTION_REQUIRED, integrations/dev): the
 * owner drives it, as the platform drives cron and queues. `as: 'owner'` (the default)
 * runs a `user` or `public` Function as the owner, signed in; `anonymous` runs a `public`
 * one without a user, and refuses a `user` one with 401 AUTH_REQUIRED without running it,
 * as its HTTP surface does (spec 5.5: `user` Functions require a signed-in caller).
 *
 * The answer is 200 whenever the Function ran or was refused for its caller: `{ ok: true,
 * value, requestId, logs }` or `{ ok: false, status, error, requestId, logs }`, with `logs`
 * the invocation's stored `ctx.log` lines (secret values redacted), oldest first.
 */
import { randomUUID } from 'node:crypto'
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import type { App } from '../apps/apps.ts'
import { appForRole, type OwnerEnv, type User } from '../identity/index.ts'
import { readObject } from '../http/json.ts'
import { activeReleaseOf, checkDevName } from '../namespaces/dev-names.ts'
import { listFunctionLogs, MAX_LOG_PAGE } from './context-log.ts'
import { failureResponse } from './failures.ts'
import type { FunctionHost, IntegrationRunOptions } from './host.ts'
import { MAX_INPUT_BYTES } from './routes.ts'

const FIELDS = new Set(['input', 'as'])

/**
 * What integrations add to a development invocation (integrations/oauth and integrations/dev,
 * handed in by the composition root: integrations stand above the Functions host).
 */
export interface DevInvokeIntegrations {
  /** Refuses an integration's OAuth exchange or refresh Function (INTEGRATION_OAUTH_FUNCTION_NOT_INVOCABLE). */
  refuseOAuthFunction(input: { releaseId: string; functionName: string }): Promise<void>
  /**
   * How a provider's operation, sync or webhook Function runs on the namespace's test
   * connection (INTEGRATION_TEST_CONNECTION_REQUIRED without one); null for any other Function.
   */
  providerRun(input: {
    actor: User; app: App; devName: string; releaseId: string; functionName: string; requestId: string
  }): Promise<IntegrationRunOptions | null>
}

export interface DevInvokeDeps {
  db: Db
  host: () => FunctionHost
  /** Absent: every Function runs as a plain one. */
  integrations?: DevInvokeIntegrations
}

/** What a development invocation answers whenever the Function ran. */
export type DevInvocation =
  | { ok: true; value: unknown; requestId: string; logs: unknown[] }
  | { ok: false; status: number; error: unknown; requestId: string; logs: unknown[] }

/**
 * Runs the Function `name` of the development namespace `devName` for `user`, who needs Edit
 * on the app; the owner API route and the MCP tool `invoke_dev_function` both call it. No
 * `input` is `{}`; an explicit null reaches the Function's schema as null.
 *
 * @example
 * const result = await invokeDevFunction(deps, { user, appId: 'orders', devName: 'alice', name: 'hello', input: { name: 'Ada' } })
 */
export async function invokeDevFunction(
  deps: DevInvokeDeps,
  request: { user: User; appId: string; devName: string; name: string; input?: unknown; as?: unknown },
): Promise<DevInvocation> {
  // Running the namespace's code is changing it: Edit (decisions.md, "Development mode for integrations").
  const app = await appForRole(deps.db, request.user, request.appId, 'edit')
  const devName = checkDevName(request.devName)
  const name = request.name
  const as = request.as ?? 'owner'
  if (as !== 'owner' && as !== 'anonymous') throw new ServiceError('VALIDATION_FAILED', 'as is "owner" or "anonymous"', { details: { field: 'as' } })

  const host = deps.host()
  const fn = await host.resolveDev(app, devName, name)
  if (fn === null) {
    if ((await activeReleaseOf(deps.db, app.id, devName)) === null) {
      throw new ServiceError('DEV_NAMESPACE_NOT_FOUND', `the development namespace ${devName} has no release; deploy to it with: service deploy <dir> --dev ${devName}`)
    }
    throw new ServiceError('FUNCTION_NOT_FOUND', `the development namespace ${devName} has no Function ${name.slice(0, 64)}`)
  }
  await deps.integrations?.refuseOAuthFunction({ releaseId: fn.releaseId, functionName: name })
  const requestId = randomUUID()
  if (fn.declaration.access === 'user' && as === 'anonymous') {
    // As over HTTP (access.ts), with the same code; the handler never runs. Not
    // functionAccess itself: it also applies the browser's origin rules and hides system
    // Functions, which the owner may invoke here.
    const message = `${name} has access: user and needs a signed-in caller; invoke it as "owner"`
    return { ok: false, status: 401, error: { code: 'AUTH_REQUIRED', message }, requestId, logs: [] }
  }
  // An integration's operation, sync or webhook Function runs on the namespace's test connection (integrations/dev).
  const integration = await deps.integrations?.providerRun({ actor: request.user, app, devName, releaseId: fn.releaseId, functionName: name, requestId }) ?? null
  // An integration invocation is a system one, as in production.
  const user = as === 'owner' && integration === null ? { id: request.user.id, email: request.user.email } : null
  const result = await host.run(fn, { input: 'input' in request ? request.input : {}, user, requestId, awaitLogs: true, ...(integration === null ? {} : { integration }) })
  const page = await listFunctionLogs(deps.db, { appId: app.id, devName, requestId, limit: MAX_LOG_PAGE })
  const logs = [...page.lines].reverse()
  // Without `bytes: true` the host answers a plain result (a byte-returning Function's value is null).
  if (result.ok) return { ok: true, value: result.value, requestId, logs }
  const { status, body: failure } = failureResponse(result.error, { environment: 'development' })
  return { ok: false, status, error: failure.error, requestId, logs }
}

export function devInvokeRoutes(deps: DevInvokeDeps) {
  const routes = new Hono<OwnerEnv>()
  routes.post('/:appId/dev/:devName/functions/:name/invoke', async (c) => {
    const body = await readObject(c, MAX_INPUT_BYTES + 1024)
    const unknown = Object.keys(body).find((key) => !FIELDS.has(key))
    if (unknown !== undefined) throw new ServiceError('VALIDATION_FAILED', `unknown field ${unknown.slice(0, 64)}; the body is {"input", "as"}`)
    return c.json(await invokeDevFunction(deps, {
      user: c.var.user, appId: c.req.param('appId'), devName: c.req.param('devName'), name: c.req.param('name'),
      ...('input' in body ? { input: body.input } : {}), as: body.as,
    }))
  })
  return routes
}
