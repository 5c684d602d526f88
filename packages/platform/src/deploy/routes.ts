/** Owner API for deploys, releases and development namespaces, mounted under /v1/apps/:appId: the owner and Edit holders. */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import type { AiSettings } from '../config.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { appForRole, type OwnerEnv } from '../identity/index.ts'
import { readJson } from '../http/json.ts'
import { BUNDLE_LIMITS } from './bundle-files.ts'
import type { SecretStore } from '../secrets/index.ts'
import { checkDevName } from '../namespaces/dev-names.ts'
import { deployBundle, releaseView, validateDeploy } from './deploy.ts'
import { deleteDevNamespace } from './dev-delete.ts'
import { appDevNamespaces, appReleases } from './app-releases.ts'

/** Base64 grows a bundle by a third; leave room for the JSON around it. */
const MAX_DEPLOY_BODY = Math.ceil(BUNDLE_LIMITS.maxTotalBytes * 1.4)

export function deployRoutes(deps: { db: Db; clock: Clock; logger?: Logger; secrets?: SecretStore; ai?: AiSettings; onDevDeleted?: (appId: string, devName: string) => void }) {
  const routes = new Hono<OwnerEnv>()
  // Production at /:appId/deployments; a development namespace (own schema, roles,
  // releases, secrets and logs) at /:appId/dev/:devName/deployments.
  async function deploy(c: Context<OwnerEnv>) {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId')!, 'edit')
    const devParam = c.req.param('devName')
    const devName = devParam === undefined ? '' : checkDevName(devParam)
    const body = await readJson(c, MAX_DEPLOY_BODY)
    if (c.req.query('dryRun') === 'true') return c.json(await validateDeploy(deps, { app, devName, body }))
    const result = await deployBundle(deps, { app, user: c.var.user, body, devName })
    return c.json({
      release: releaseView(result.release),
      ...(devName === '' ? {} : { devName }),
      migrationsApplied: result.migrationsApplied,
      warnings: result.warnings,
    }, 201)
  }
  async function releases(c: Context<OwnerEnv>) {
    return c.json({ releases: await appReleases(deps.db, { user: c.var.user, appId: c.req.param('appId')!, devName: c.req.param('devName') }) })
  }
  async function deleteDev(c: Context<OwnerEnv>) {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId')!, 'edit')
    const devName = checkDevName(c.req.param('devName'))
    await deleteDevNamespace(deps.db, { appId: app.id, devName })
    deps.onDevDeleted?.(app.id, devName)
    return c.body(null, 204)
  }
  routes.get('/:appId/dev', async (c) =>
    c.json({ namespaces: await appDevNamespaces(deps.db, { user: c.var.user, appId: c.req.param('appId') }) }))
  routes.delete('/:appId/dev/:devName', deleteDev)
  routes.post('/:appId/deployments', deploy)
  routes.post('/:appId/dev/:devName/deployments', deploy)
  routes.get('/:appId/releases', releases)
  routes.get('/:appId/dev/:devName/releases', releases)
  return routes
}
