/**
 * Owner API of published integration contracts, mounted under /v1/apps:
 * `GET /:appId/custom-integrations` lists the contracts published in the app's organisation
 * that the caller may use (paginated by name: `limit`, `nextCursor`). Callers need Edit on
 * the app (they build or bind its integrations), as for its deployments.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import { appForRole, mayUseIntegration, type OwnerEnv } from '../identity/index.ts'
import { listContracts, type ContractAudience } from './contracts.ts'

export function customIntegrationRoutes(deps: { db: Db }) {
  const routes = new Hono<OwnerEnv>()
  async function list(c: Context<OwnerEnv>) {
    const app = await appForRole(deps.db, c.var.user, c.req.param('appId')!, 'edit')
    return c.json(await listContracts(deps.db, {
      organisationId: app.organisationId,
      limit: c.req.query('limit'),
      nextCursor: c.req.query('nextCursor'),
      audience: audienceOf(deps.db, c),
    }))
  }
  routes.get('/:appId/custom-integrations', list)
  return routes
}

/** "The contracts the caller may use": the provider app's Use audience admits the caller. */
function audienceOf(db: Db, c: Context<OwnerEnv>): ContractAudience {
  return (row) => mayUseIntegration(db, { user: c.var.user, providerApp: { id: row.app_id } })
}
