/** The SQL of the provider app's integration page, one function per statement (reads only). */
import type { Queryable } from '../../db/db.ts'
import type { ConnectionRow } from '../connections/index.ts'

/** The `provides.integration` block of one release (null: none). */
export async function selectReleaseIntegration(db: Queryable, releaseId: string): Promise<unknown> {
  const rows = await db.query<{ integration: unknown }>(
    `select manifest -> 'provides' -> 'integration' as integration from platform.releases where id = $1`,
    [releaseId],
  )
  return rows[0]?.integration ?? null
}

/**
 * The connections to one integration of one provider app that a person sees: their own
 * personal ones and the organisation connections of `organisationId`, newest first, bounded.
 * Metadata only (the columns of connections' own reads), never a value or a webhook token.
 */
export async function selectIntegrationConnections(
  db: Queryable,
  key: { userId: string; organisationId: string | null; providerAppId: string; integration: string; limit: number },
): Promise<ConnectionRow[]> {
  return db.query<ConnectionRow>(
    `select c.id, c.organisation_id, c.provider_app_id, a.slug as provider_app_slug, c.integration_name, c.kind, c.owner_id,
            c.created_by, c.label, c.status, c.status_reason, c.status_changed_at, c.created_at, c.updated_at
       from platform.connections c join platform.apps a on a.id = c.provider_app_id
      where c.provider_app_id = $1 and c.integration_name = $2
        and ((c.kind = 'personal' and c.owner_id = $3) or (c.kind = 'organisation' and c.organisation_id = $4::uuid))
      order by c.created_at desc, c.id desc
      limit $5`,
    [key.providerAppId, key.integration, key.userId, key.organisationId, key.limit],
  )
}
