/**
 * The app integration API (owner tokens), mounted under /v1/apps:
 * - `GET /:appId/integrations`: the slots of the app's active release with their bindings;
 * - `PUT /:appId/integrations/:slot/binding` `{ connectionId }`: binds an `account: app` slot
 *   (a `calling_user` slot answers BINDING_NEEDS_PERSON: each person binds their own on a page);
 * - `DELETE /:appId/integrations/:slot/binding`: unbinds it.
 * Every route needs Edit on the app: an owner token of a person who may Edit the app is the
 * "exact-app owner agent" of spec 5.6 (decisions.md, "Bindings").
 */
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import { readObject } from '../../http/json.ts'
import { appForRole, type OwnerEnv } from '../../identity/index.ts'
import { appIntegrationSlots, bindSlot, unbindSlot, type Binding } from './bindings.ts'

function bindingView(binding: Binding) {
  return {
    id: binding.id, slot: binding.slot, connectionId: binding.connectionId, capabilities: binding.capabilities,
    createdBy: binding.createdBy, createdAt: binding.createdAt.toISOString(),
  }
}

export function bindingRoutes(deps: { db: Db; clock: Clock }) {
  const routes = new Hono<OwnerEnv>()
  routes.get('/:appId/integrations', async (c) => {
    return c.json({ slots: await appIntegrationSlots(deps, { user: c.var.user, appId: c.req.param('appId') }) })
  })
  routes.put('/:appId/integrations/:slot/binding', async (c) => {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId'), 'edit')
    const body = await readObject(c)
    if (typeof body.connectionId !== 'string') {
      throw new ServiceError('VALIDATION_FAILED', 'send connectionId, the id of the connection to bind', { details: { field: 'connectionId' } })
    }
    const binding = await bindSlot(deps, { actor: c.var.user, app, slot: c.req.param('slot'), connectionId: body.connectionId, via: 'api' })
    return c.json({ binding: bindingView(binding) })
  })
  routes.delete('/:appId/integrations/:slot/binding', async (c) => {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId'), 'edit')
    await unbindSlot(deps.db, { actor: c.var.user, app, slot: c.req.param('slot') })
    return c.body(null, 204)
  })
  return routes
}
