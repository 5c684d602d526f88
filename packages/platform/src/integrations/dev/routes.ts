/**
 * Development mode through the owner API (spec 4.5; the MCP tools later call the same
 * functions), mounted under /v1/apps. Every route needs Edit on the app and a development
 * namespace with a release:
 * - `GET /:appId/dev/:devName/integrations`: the namespace's settings;
 * - `PUT /:appId/dev/:devName/integrations/:integration/mode` `{ mode: 'live' | 'fake' }`
 *   (`set_dev_integration_mode`);
 * - `PUT /:appId/dev/:devName/integrations/:integration/test-connection` `{ connectionId }`
 *   and `DELETE` (`set_dev_integration_test_connection`; the app is the provider);
 * - `POST /:appId/dev/:devName/integrations/:integration/events` `{ type, id?, data? }`
 *   (`inject_dev_integration_event`).
 */
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import { readObject } from '../../http/json.ts'
import { checkDevName } from '../../namespaces/dev-names.ts'
import { appForRole, type OwnerEnv } from '../../identity/index.ts'
import type { FunctionHost } from '../../functions/index.ts'
import { listDevSettings, setDevMode, setDevTestConnection } from './dev-mode.ts'
import { injectDevEvent } from './inject.ts'

function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  const unknown = Object.keys(body).find((key) => !allowed.includes(key))
  if (unknown !== undefined) {
    throw new ServiceError('VALIDATION_FAILED', `unknown field ${unknown.slice(0, 64)}; the body is {${allowed.map((f) => `"${f}"`).join(', ')}}`,
      { details: { field: unknown.slice(0, 64) } })
  }
}

export function devIntegrationRoutes(deps: { db: Db; clock: Clock; host: () => FunctionHost }) {
  const routes = new Hono<OwnerEnv>()
  const target = async (c: { var: OwnerEnv['Variables']; req: { param(name: string): string } }) => ({
    app: await appForRole(deps.db, c.var.user, c.req.param('appId'), 'edit'),
    devName: checkDevName(c.req.param('devName')),
  })

  routes.get('/:appId/dev/:devName/integrations', async (c) => {
    const { app, devName } = await target(c)
    return c.json({ integrations: await listDevSettings(deps.db, { app, devName }) })
  })
  routes.put('/:appId/dev/:devName/integrations/:integration/mode', async (c) => {
    const { app, devName } = await target(c)
    const body = await readObject(c)
    onlyFields(body, ['mode'])
    const setting = await setDevMode(deps, { actor: c.var.user, app, devName, integration: c.req.param('integration'), mode: body.mode })
    return c.json({ integration: setting })
  })
  routes.put('/:appId/dev/:devName/integrations/:integration/test-connection', async (c) => {
    const { app, devName } = await target(c)
    const body = await readObject(c)
    onlyFields(body, ['connectionId'])
    if (typeof body.connectionId !== 'string') {
      throw new ServiceError('VALIDATION_FAILED', 'send connectionId, the id of a connection to this integration', { details: { field: 'connectionId' } })
    }
    const setting = await setDevTestConnection(deps, {
      actor: c.var.user, app, devName, integration: c.req.param('integration'), connectionId: body.connectionId,
    })
    return c.json({ integration: setting })
  })
  routes.delete('/:appId/dev/:devName/integrations/:integration/test-connection', async (c) => {
    const { app, devName } = await target(c)
    const setting = await setDevTestConnection(deps, { actor: c.var.user, app, devName, integration: c.req.param('integration'), connectionId: null })
    return c.json({ integration: setting })
  })
  routes.post('/:appId/dev/:devName/integrations/:integration/events', async (c) => {
    const { app, devName } = await target(c)
    const body = await readObject(c)
    onlyFields(body, ['type', 'id', 'data'])
    return c.json(await injectDevEvent(deps, { app, devName, integration: c.req.param('integration'), type: body.type, id: body.id, data: body.data }))
  })
  return routes
}
