/** The SQL of connections, one function per statement (platform.connections, connection_credentials). */
import type { Queryable } from '../../db/db.ts'

export interface ConnectionRow extends Record<string, unknown> {
  id: string
  organisation_id: string
  provider_app_id: string
  provider_app_slug: string
  integration_name: string
  kind: 'personal' | 'organisation'
  owner_id: string | null
  created_by: string | null
  label: string
  status: 'active' | 'reconnect_required'
  status_reason: string | null
  status_changed_at: Date
  created_at: Date
  updated_at: Date
}

export interface WebhookTokenRow extends Record<string, unknown> {
  webhook_token_encrypted: string
  webhook_key_id: string
}

export interface CredentialRow extends Record<string, unknown> {
  name: string
  secret: boolean
  value_encrypted: string
  key_id: string
}

/** A provider app and the integration its active production release publishes (null: none). */
export interface PublishedRow extends Record<string, unknown> {
  app_id: string
  app_slug: string
  organisation_id: string
  app_status: string
  integration: unknown
}

const CONNECTION_COLUMNS = `c.id, c.organisation_id, c.provider_app_id, a.slug as provider_app_slug, c.integration_name,
  c.kind, c.owner_id, c.created_by, c.label, c.status, c.status_reason, c.status_changed_at, c.created_at, c.updated_at`

/** The app (by id or slug) and the `provides.integration` block of its active release. */
export async function selectPublished(db: Queryable, app: { id: string | null; slug: string | null }): Promise<PublishedRow | null> {
  const rows = await db.query<PublishedRow>(
    `select a.id as app_id, a.slug as app_slug, a.organisation_id, a.status as app_status,
            r.manifest -> 'provides' -> 'integration' as integration
       from platform.apps a left join platform.releases r on r.id = a.active_release_id
      where ($1::uuid is not null and a.id = $1::uuid) or ($2::text is not null and a.slug = $2::text)
      limit 1`,
    [app.id, app.slug],
  )
  return rows[0] ?? null
}

export async function insertConnection(
  tx: Queryable,
  row: {
    id: string; organisationId: string; providerAppId: string; integrationName: string; kind: 'personal' | 'organisation'
    ownerId: string | null; createdBy: string; label: string; webhookTokenHash: string; webhookTokenEncrypted: string
    webhookKeyId: string; at: Date
  },
): Promise<void> {
  await tx.query(
    `insert into platform.connections (id, organisation_id, provider_app_id, integration_name, kind, owner_id, created_by,
       label, status, status_changed_at, webhook_token_hash, webhook_token_encrypted, webhook_key_id, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, 'active', $9, $10, $11, $12, $9, $9)`,
    [row.id, row.organisationId, row.providerAppId, row.integrationName, row.kind, row.ownerId, row.createdBy,
      row.label, row.at, row.webhookTokenHash, row.webhookTokenEncrypted, row.webhookKeyId],
  )
}

export async function insertCredential(
  tx: Queryable,
  row: { connectionId: string; name: string; secret: boolean; valueEncrypted: string; keyId: string },
): Promise<void> {
  await tx.query(
    `insert into platform.connection_credentials (connection_id, name, secret, value_encrypted, key_id)
     values ($1, $2, $3, $4, $5)`,
    [row.connectionId, row.name, row.secret, row.valueEncrypted, row.keyId],
  )
}

export async function deleteCredentials(tx: Queryable, connectionId: string): Promise<void> {
  await tx.query('delete from platform.connection_credentials where connection_id = $1', [connectionId])
}

/** One connection; `forUpdate` locks its row until the transaction ends. */
export async function selectConnection(db: Queryable, id: string, options: { forUpdate?: boolean } = {}): Promise<ConnectionRow | null> {
  const rows = await db.query<ConnectionRow>(
    `select ${CONNECTION_COLUMNS} from platform.connections c join platform.apps a on a.id = c.provider_app_id
      where c.id = $1${options.forUpdate ? ' for update of c' : ''}`,
    [id],
  )
  return rows[0] ?? null
}

export async function selectWebhookToken(db: Queryable, id: string): Promise<WebhookTokenRow | null> {
  const rows = await db.query<WebhookTokenRow>(
    'select webhook_token_encrypted, webhook_key_id from platform.connections where id = $1', [id])
  return rows[0] ?? null
}

export async function selectConnectionIdByWebhookHash(db: Queryable, hash: string): Promise<string | null> {
  const rows = await db.query<{ id: string }>('select id from platform.connections where webhook_token_hash = $1', [hash])
  return rows[0]?.id ?? null
}

export async function selectCredentials(db: Queryable, connectionId: string): Promise<CredentialRow[]> {
  return await db.query<CredentialRow>(
    `select name, secret, value_encrypted, key_id from platform.connection_credentials
      where connection_id = $1 order by name limit 100`,
    [connectionId],
  )
}

/**
 * A page of the connections a person sees: their personal ones and their organisation's,
 * newest first, after the (created_at, id) cursor when given.
 */
export async function selectVisibleConnections(
  db: Queryable,
  input: { userId: string; organisationId: string | null; limit: number; after: { createdAt: Date; id: string } | null },
): Promise<ConnectionRow[]> {
  return await db.query<ConnectionRow>(
    `select ${CONNECTION_COLUMNS} from platform.connections c join platform.apps a on a.id = c.provider_app_id
      where (c.owner_id = $1 or (c.kind = 'organisation' and c.organisation_id = $2::uuid))
        and ($3::timestamptz is null or (c.created_at, c.id) < ($3::timestamptz, $4::uuid))
      order by c.created_at desc, c.id desc
      limit $5`,
    [input.userId, input.organisationId, input.after?.createdAt ?? null, input.after?.id ?? null, input.limit],
  )
}

/** Replaces the credentials' status with active (they were just replaced). */
export async function updateActivated(tx: Queryable, input: { id: string; at: Date }): Promise<void> {
  await tx.query(
    `update platform.connections
        set status = 'active', status_reason = null,
            status_changed_at = case when status = 'active' then status_changed_at else $2 end, updated_at = $2
      where id = $1`,
    [input.id, input.at],
  )
}

/**
 * Marks an active connection reconnect_required; false when it was not active, is gone, or
 * changed since `seenUpdatedAt` (its credentials were replaced after the caller read them).
 */
export async function updateReconnectRequired(
  db: Queryable, input: { id: string; reason: string; at: Date; seenUpdatedAt: Date },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.connections set status = 'reconnect_required', status_reason = $2, status_changed_at = $3, updated_at = $3
      where id = $1 and status = 'active' and updated_at = $4 returning id`,
    [input.id, input.reason, input.at, input.seenUpdatedAt],
  )
  return rows.length > 0
}

export async function deleteConnection(tx: Queryable, id: string): Promise<boolean> {
  const rows = await tx.query('delete from platform.connections where id = $1 returning id', [id])
  return rows.length > 0
}

/** Credentials sealed under another key than `keyId`, a batch at a time (key rotation). */
export async function selectCredentialsNotUnder(db: Queryable, input: { keyId: string; limit: number }): Promise<(CredentialRow & { connection_id: string })[]> {
  return await db.query<CredentialRow & { connection_id: string }>(
    `select connection_id, name, secret, value_encrypted, key_id from platform.connection_credentials
      where key_id <> $1 order by connection_id, name limit $2`,
    [input.keyId, input.limit],
  )
}

export async function updateCredentialSealed(
  tx: Queryable,
  row: { connectionId: string; name: string; valueEncrypted: string; keyId: string; previousKeyId: string },
): Promise<void> {
  await tx.query(
    `update platform.connection_credentials set value_encrypted = $3, key_id = $4
      where connection_id = $1 and name = $2 and key_id = $5`,
    [row.connectionId, row.name, row.valueEncrypted, row.keyId, row.previousKeyId],
  )
}

/** Webhook tokens sealed under another key than `keyId`, a batch at a time (key rotation). */
export async function selectWebhookTokensNotUnder(db: Queryable, input: { keyId: string; limit: number }): Promise<(WebhookTokenRow & { id: string })[]> {
  return await db.query<WebhookTokenRow & { id: string }>(
    `select id, webhook_token_encrypted, webhook_key_id from platform.connections
      where webhook_key_id <> $1 order by id limit $2`,
    [input.keyId, input.limit],
  )
}

export async function updateWebhookTokenSealed(
  tx: Queryable,
  row: { id: string; sealed: string; keyId: string; previousKeyId: string },
): Promise<void> {
  await tx.query(
    `update platform.connections set webhook_token_encrypted = $2, webhook_key_id = $3
      where id = $1 and webhook_key_id = $4`,
    [row.id, row.sealed, row.keyId, row.previousKeyId],
  )
}
