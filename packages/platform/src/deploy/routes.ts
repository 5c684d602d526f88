/** Owner API for deploys and releases, mounted under /v1/apps/:appId. */
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { OwnerEnv } from '../http/owner-auth.ts'
import { readJson } from '../http/json.ts'
import { getOwnedApp } from '../apps/apps.ts'
import { BUNDLE_LIMITS } from './bundle-files.ts'
import { checkBundle, deployBundle, listReleases, releaseView } from './deploy.ts'

/** Base64 grows a bundle by a third; leave room for the JSON around it. */
const MAX_DEPLOY_BODY = Math.ceil(BUNDLE_LIMITS.maxTotalBytes * 1.4)

export function deployRoutes(deps: { db: Db; clock: Clock }) {
  const routes = new Hono<OwnerEnv>()
  routes.post('/:appId/deployments', async (c) => {
    const app = await getOwnedApp(deps.db, c.var.user, c.req.param('appId'))
    const body = await readJson(c, MAX_DEPLOY_BODY)
    if (c.req.query('dryRun') === 'true') {
      const { bundle, manifest, warnings } = await checkBundle(deps.db, app, body)
      return c.json({ valid: true, files: bundle.files.length, sdkVersion: manifest.runtime.sdk.version, warnings })
    }
    const result = await deployBundle(deps, { app, user: c.var.user, body })
    return c.json({
      release: releaseView(result.release),
      migrationsApplied: result.migrationsApplied,
      warnings: result.warnings,
    }, 201)
  })
  routes.get('/:appId/releases', async (c) => {
    const app = await getOwnedApp(deps.db, c.var.user, c.req.param('appId'))
    const releases = await listReleases(deps.db, app.id)
    return c.json({ releases: releases.map(releaseView) })
  })
  return routes
}
