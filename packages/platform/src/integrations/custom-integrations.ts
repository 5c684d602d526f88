/**
 * The published integration contracts an app's builder may use (spec 4.1), for the owner API
 * and the MCP tool `list_custom_integrations` alike: the contracts published in the app's
 * organisation whose provider app's Use audience admits the caller, paginated by name.
 * Callers need Edit on the app (they build or bind its integrations), as for its deployments.
 */
import type { Db } from '../db/db.ts'
import { appForRole, mayUseIntegration, type User } from '../identity/index.ts'
import { listContracts } from './contracts.ts'

/**
 * @example
 * const page = await listCustomIntegrations(db, { user, appId: 'desk', query: { limit: '20' } })
 */
export async function listCustomIntegrations(
  db: Db,
  input: { user: User; appId: string; query: { limit?: string | undefined; nextCursor?: string | undefined } },
) {
  const app = await appForRole(db, input.user, input.appId, 'edit')
  return listContracts(db, {
    organisationId: app.organisationId,
    limit: input.query.limit,
    nextCursor: input.query.nextCursor,
    // "The contracts the caller may use": the provider app's Use audience admits the caller.
    audience: (row) => mayUseIntegration(db, { user: input.user, providerApp: { id: row.app_id } }),
  })
}
