/**
 * Owner API for app secrets, mounted under /v1/apps: production at `/:appId/secrets`, a
 * development namespace at `/:appId/dev/:devName/secrets`. Values go in (PUT) and never
 * come out: the list names each secret the active release declares or the store holds,
 * with whether it is required and set and when it was last set. The owner and Edit holders
 * (an Edit holder deploys the code that reads them anyway); Use holders get FORBIDDEN.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import type { OwnerEnv } from '../identity/index.ts'
import { readObject } from '../http/json.ts'
import { listAppSecrets, setAppSecret, unsetAppSecret, type SecretTarget } from './app-secrets.ts'
import { MAX_SECRET_VALUE_BYTES, type SecretStore } from './secrets.ts'

/** JSON escapes can grow a value sixfold; leave room for that and the object around it. */
const MAX_BODY_BYTES = MAX_SECRET_VALUE_BYTES * 6 + 1024

function targetOf(c: Context<OwnerEnv>): SecretTarget {
  return { user: c.var.user, appId: c.req.param('appId')!, devName: c.req.param('devName') }
}

export function secretRoutes(deps: { db: Db; store: SecretStore }) {
  const routes = new Hono<OwnerEnv>()

  async function list(c: Context<OwnerEnv>) {
    return c.json({ secrets: await listAppSecrets(deps, targetOf(c)) })
  }

  async function put(c: Context<OwnerEnv>) {
    const body = await readObject(c, MAX_BODY_BYTES)
    const unknown = Object.keys(body).filter((key) => key !== 'value')
    if (unknown.length > 0) {
      throw new ServiceError('VALIDATION_FAILED', `unknown field ${unknown[0]!.slice(0, 64)}; the body is {"value": "…"}`)
    }
    const { secret, created } = await setAppSecret(deps, { ...targetOf(c), name: c.req.param('name'), value: body.value })
    return c.json({ secret }, created ? 201 : 200)
  }

  async function remove(c: Context<OwnerEnv>) {
    await unsetAppSecret(deps, { ...targetOf(c), name: c.req.param('name') })
    return c.body(null, 204)
  }

  for (const prefix of ['/:appId', '/:appId/dev/:devName']) {
    routes.get(`${prefix}/secrets`, list)
    routes.put(`${prefix}/secrets/:name`, put)
    routes.delete(`${prefix}/secrets/:name`, remove)
  }
  return routes
}
