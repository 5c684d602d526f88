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
import { appForRole, type OwnerEnv } from '../identity/index.ts'
import { readObject } from '../http/json.ts'
import { activeReleaseOf, checkDevName } from '../namespaces/dev-names.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { selectDeclaredSecrets } from './queries.ts'
import { checkSecretName, checkSecretValue, MAX_SECRET_VALUE_BYTES, type SecretStore } from './secrets.ts'
import type { SecretScope } from './scope.ts'

/** JSON escapes can grow a value sixfold; leave room for that and the object around it. */
const MAX_BODY_BYTES = MAX_SECRET_VALUE_BYTES * 6 + 1024

export function secretRoutes(deps: { db: Db; store: SecretStore }) {
  const routes = new Hono<OwnerEnv>()

  async function target(c: Context<OwnerEnv>): Promise<{ scope: SecretScope; releaseId: string | null }> {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId')!, 'edit')
    const devParam = c.req.param('devName')
    const devName = devParam === undefined ? '' : checkDevName(devParam)
    const releaseId = devName === '' ? app.activeReleaseId : await activeReleaseOf(deps.db, app.id, devName)
    return { scope: { appId: app.id, devName }, releaseId }
  }

  async function list(c: Context<OwnerEnv>) {
    const { scope, releaseId } = await target(c)
    const declared = releaseId === null ? {} : await selectDeclaredSecrets(deps.db, releaseId)
    const stored = new Map((await deps.store.list(scope)).map((secret) => [secret.name, secret.updatedAt]))
    const names = [...new Set([...Object.keys(declared), ...stored.keys()])].sort()
    return c.json({
      secrets: names.map((name) => ({
        name,
        declared: Object.hasOwn(declared, name),
        required: declared[name] === 'required',
        set: stored.has(name),
        updatedAt: stored.get(name)?.toISOString() ?? null,
      })),
    })
  }

  async function put(c: Context<OwnerEnv>) {
    const { scope, releaseId } = await target(c)
    const name = checkSecretName(c.req.param('name'))
    // A development namespace exists from its first deploy; values for names never deployed are refused.
    if (scope.devName !== '' && (await findNamespace(deps.db, scope.appId, 'development', scope.devName)) === null) {
      throw new ServiceError('DEV_NAMESPACE_NOT_FOUND',
        `the development namespace ${scope.devName} does not exist; deploy to it first with: service deploy <dir> --dev ${scope.devName}`)
    }
    const body = await readObject(c, MAX_BODY_BYTES)
    const unknown = Object.keys(body).filter((key) => key !== 'value')
    if (unknown.length > 0) {
      throw new ServiceError('VALIDATION_FAILED', `unknown field ${unknown[0]!.slice(0, 64)}; the body is {"value": "…"}`)
    }
    const saved = await deps.store.set(scope, { name, value: checkSecretValue(body.value), userId: c.var.user.id })
    const declared = releaseId === null ? {} : await selectDeclaredSecrets(deps.db, releaseId)
    return c.json({
      secret: {
        name,
        declared: Object.hasOwn(declared, name),
        required: declared[name] === 'required',
        set: true,
        updatedAt: saved.updatedAt.toISOString(),
      },
    }, saved.created ? 201 : 200)
  }

  async function remove(c: Context<OwnerEnv>) {
    const { scope } = await target(c)
    const name = checkSecretName(c.req.param('name'))
    if (!(await deps.store.unset(scope, name))) throw new ServiceError('SECRET_NOT_FOUND', `the secret ${name} has no value here`)
    return c.body(null, 204)
  }

  for (const prefix of ['/:appId', '/:appId/dev/:devName']) {
    routes.get(`${prefix}/secrets`, list)
    routes.put(`${prefix}/secrets/:name`, put)
    routes.delete(`${prefix}/secrets/:name`, remove)
  }
  return routes
}
