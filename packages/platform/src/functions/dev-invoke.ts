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
 * runs a `user` or `public` Function as the owner, signed in; `anonymous` without a user.
 *
 * The answer is 200 whenever the Function ran: `{ ok: true, value, requestId, logs }` or
 * `{ ok: false, status, error, requestId, logs }`, with `logs` the invocation's stored
 * `ctx.log` lines (secret values redacted), oldest first.
 */
import { randomUUID } from 'node:crypto'
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import { appForRole, type OwnerEnv } from '../identity/index.ts'
import { readObject } from '../http/json.ts'
import { activeReleaseOf, checkDevName } from '../namespaces/dev-names.ts'
import { refuseOAuthFunction } from '../integrations/oauth/index.ts'
import { devProviderRun, type DevProviderRunDeps } from '../integrations/dev/index.ts'
import { listFunctionLogs, MAX_LOG_PAGE } from './context-log.ts'
import { failureResponse } from './failures.ts'
import type { FunctionHost } from './host.ts'
import { MAX_INPUT_BYTES } from './routes.ts'

const FIELDS = new Set(['input', 'as'])

/** `integrations`: how a provider's operation, sync and webhook Functions get their test connection (without it, they run as plain Functions). */
export function devInvokeRoutes(deps: { db: Db; host: () => FunctionHost; integrations?: Omit<DevProviderRunDeps, 'db'> }) {
  const routes = new Hono<OwnerEnv>()
  routes.post('/:appId/dev/:devName/functions/:name/invoke', async (c) => {
    // Running the namespace's code is changing it: Edit (decisions.md, "Development mode for integrations").
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId'), 'edit')
    const devName = checkDevName(c.req.param('devName'))
    const name = c.req.param('name')
    const body = await readObject(c, MAX_INPUT_BYTES + 1024)
    const unknown = Object.keys(body).find((key) => !FIELDS.has(key))
    if (unknown !== undefined) throw new ServiceError('VALIDATION_FAILED', `unknown field ${unknown.slice(0, 64)}; the body is {"input", "as"}`)
    const as = body.as ?? 'owner'
    if (as !== 'owner' && as !== 'anonymous') throw new ServiceError('VALIDATION_FAILED', 'as is "owner" or "anonymous"', { details: { field: 'as' } })

    const host = deps.host()
    const fn = await host.resolveDev(app, devName, name)
    if (fn === null) {
      if ((await activeReleaseOf(deps.db, app.id, devName)) === null) {
        throw new ServiceError('DEV_NAMESPACE_NOT_FOUND', `the development namespace ${devName} has no release; deploy to it with: service deploy <dir> --dev ${devName}`)
      }
      throw new ServiceError('FUNCTION_NOT_FOUND', `the development namespace ${devName} has no Function ${name.slice(0, 64)}`)
    }
    await refuseOAuthFunction(deps.db, { releaseId: fn.releaseId, functionName: name })
    const requestId = randomUUID()
    // An integration's operation, sync or webhook Function runs on the namespace's test connection (integrations/dev).
    const integration = deps.integrations === undefined ? null
      : await devProviderRun({ db: deps.db, ...deps.integrations }, { actor: c.var.user, app, devName, releaseId: fn.releaseId, functionName: name, requestId })
    // An integration invocation is a system one, as in production.
    const user = as === 'owner' && integration === null ? { id: c.var.user.id, email: c.var.user.email } : null
    // No input is {}; an explicit null reaches the Function's schema as null.
    const result = await host.run(fn, { input: 'input' in body ? body.input : {}, user, requestId, awaitLogs: true, ...(integration === null ? {} : { integration }) })
    const page = await listFunctionLogs(deps.db, { appId: app.id, devName, requestId, limit: MAX_LOG_PAGE })
    const logs = [...page.lines].reverse()
    // Without `bytes: true` the host answers a plain result (a byte-returning Function's value is null).
    if (result.ok) return c.json({ ok: true, value: result.value, requestId, logs })
    const { status, body: failure } = failureResponse(result.error, { environment: 'development' })
    return c.json({ ok: false, status, error: failure.error, requestId, logs })
  })
  return routes
}
