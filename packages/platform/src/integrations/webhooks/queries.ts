/**
 * The webhook receiver's one read (platform.connections, apps, integration_contracts,
 * connection_credentials): everything a POST to a connection's secret URL needs, found by
 * the SHA-256 of its token. Every unknown or unusable URL is this same statement finding
 * no row, so each of them costs the same work.
 */
import type { Db } from '../../db/db.ts'
import type { IntegrationContract } from '../../manifest/index.ts'
import type { ConnectionRow, CredentialRow } from '../connections/index.ts'

export interface WebhookTargetRow extends ConnectionRow {
  /** The contract the provider app publishes now under the connection's integration name. */
  contract: IntegrationContract
  /** Sealed, as stored. */
  credentials: CredentialRow[]
}

/**
 * The connection whose webhook token hashes to `hash`, with its provider app ACTIVE and the
 * contract that app publishes under the connection's integration name; null otherwise.
 */
export async function selectWebhookTarget(db: Db, hash: string): Promise<WebhookTargetRow | null> {
  const rows = await db.read<WebhookTargetRow>(
    `select c.id, c.organisation_id, c.provider_app_id, a.slug as provider_app_slug, c.integration_name, c.kind, c.owner_id,
            c.created_by, c.label, c.status, c.status_reason, c.status_changed_at, c.created_at, c.updated_at, ic.contract,
            (select coalesce(json_agg(x order by x.name), '[]'::json)
               from (select cc.name, cc.secret, cc.value_encrypted, cc.key_id from platform.connection_credentials cc
                      where cc.connection_id = c.id order by cc.name limit 100) x) as credentials
       from platform.connections c
       join platform.apps a on a.id = c.provider_app_id and a.status = 'active'
       join platform.integration_contracts ic on ic.app_id = a.id and ic.name = c.integration_name
      where c.webhook_token_hash = $1`,
    [hash],
  )
  return rows[0] ?? null
}
