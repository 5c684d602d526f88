/**
 * SQL of bindings (platform.integration_bindings), one function per statement, and the two
 * reads of other features' tables the bindings need (the running release's manifest, the
 * published contract of a name).
 */
import { first, type Db, type Queryable } from '../../db/db.ts'
import type { AppRole, AudienceFacts } from '../../identity/index.ts'
import type { CredentialRow } from '../connections/index.ts'
import type { IntegrationContract, Manifest } from '../../manifest/index.ts'

export interface BindingRow extends Record<string, unknown> {
  id: string
  consumer_app_id: string
  slot: string
  connection_id: string
  user_id: string | null
  created_by: string
  capabilities: string[]
  status: 'active' | 'revoked'
  revoked_reason: string | null
  revoked_at: Date | null
  created_at: Date
}

const COLUMNS = 'id, consumer_app_id, slot, connection_id, user_id, created_by, capabilities, status, revoked_reason, revoked_at, created_at'

/**
 * A slot's live binding for the person `$3` (null: the app's), in the form the unique index
 * `integration_bindings_live_slot` (migration 0021) answers: the person with null folded to
 * the nil UUID.
 */
export const LIVE_SLOT_BINDING = `consumer_app_id = $1 and slot = $2 and status = 'active'
  and coalesce(user_id, '00000000-0000-0000-0000-000000000000'::uuid) = coalesce($3::uuid, '00000000-0000-0000-0000-000000000000'::uuid)`

/** The live binding of a slot: the app's (`userId` null) or one person's. */
export async function selectActiveBinding(
  db: Queryable, key: { appId: string; slot: string; userId: string | null },
): Promise<BindingRow | undefined> {
  return first<BindingRow>(db,
    `select ${COLUMNS} from platform.integration_bindings where ${LIVE_SLOT_BINDING}`,
    [key.appId, key.slot, key.userId])
}

/** Removes the live binding of a slot (a new one replaces it, or the slot is unbound); true when there was one. */
export async function deleteActiveBinding(tx: Queryable, key: { appId: string; slot: string; userId: string | null }): Promise<boolean> {
  const rows = await tx.query<{ id: string }>(
    `delete from platform.integration_bindings where ${LIVE_SLOT_BINDING} returning id`,
    [key.appId, key.slot, key.userId])
  return rows.length > 0
}

export async function insertBinding(
  tx: Queryable,
  row: { id: string; appId: string; slot: string; connectionId: string; userId: string | null; createdBy: string; capabilities: readonly string[]; at: Date },
): Promise<void> {
  await tx.query(
    `insert into platform.integration_bindings (id, consumer_app_id, slot, connection_id, user_id, created_by, capabilities, created_at)
     values ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)`,
    [row.id, row.appId, row.slot, row.connectionId, row.userId, row.createdBy, JSON.stringify(row.capabilities), row.at])
}

/** Revokes a live binding for good; true when it was live. */
export async function updateRevoked(db: Queryable, input: { id: string; reason: string; at: Date }): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `update platform.integration_bindings set status = 'revoked', revoked_reason = $2, revoked_at = $3
      where id = $1 and status = 'active' returning id`,
    [input.id, input.reason, input.at])
  return rows.length > 0
}

/** The manifest of a release (the consumer's running one). */
export async function selectReleaseManifest(db: Queryable, releaseId: string): Promise<Manifest | null> {
  const row = await first<{ manifest: Manifest }>(db, 'select manifest from platform.releases where id = $1', [releaseId])
  return row?.manifest ?? null
}

export interface PublishedContractRow extends Record<string, unknown> {
  app_id: string
  contract: IntegrationContract
}

/** The contract an ACTIVE app of the organisation (still in it) publishes under `name`. */
export async function selectPublishedContract(db: Queryable, key: { organisationId: string; name: string }): Promise<PublishedContractRow | undefined> {
  return first<PublishedContractRow>(db,
    `select c.app_id, c.contract from platform.integration_contracts c join platform.apps a on a.id = c.app_id
      where c.organisation_id = $1 and c.name = $2 and a.status = 'active' and a.organisation_id = $1`,
    [key.organisationId, key.name])
}

export interface OwnConnectionRow extends Record<string, unknown> {
  id: string
  label: string
  status: 'active' | 'reconnect_required'
}

/** The person's own personal connections to one integration (a read of connections' table, for the connect-and-bind page), newest first, bounded. */
export async function selectOwnConnections(
  db: Queryable, key: { userId: string; providerAppId: string; integration: string },
): Promise<OwnConnectionRow[]> {
  return db.query<OwnConnectionRow>(
    `select id, label, status from platform.connections
      where owner_id = $1 and provider_app_id = $2 and integration_name = $3 and kind = 'personal'
      order by created_at desc, id limit 50`,
    [key.userId, key.providerAppId, key.integration])
}

/**
 * Everything one broker call checks, live, in ONE statement (prepared, `db.read`): the SQL
 * function platform.integration_call_facts (migration 0020), whose plan PL/pgSQL caches.
 * Facts only; the rules applied to them are identity's and bindings.ts's. Null when the
 * consumer app is gone.
 */
export async function selectCallFacts(
  db: Db, key: { appId: string; integration: string; slot: string; userId: string | null },
): Promise<CallFactsJson | null> {
  const rows = await db.read<{ facts: CallFactsJson | null }>('select platform.integration_call_facts($1, $2, $3, $4) as facts',
    [key.appId, key.integration, key.slot, key.userId])
  return rows[0]?.facts ?? null
}

/** platform.integration_call_facts's JSON (timestamps as ISO text). */
export interface CallFactsJson {
  consumer: Record<string, unknown>
  provider: Record<string, unknown> | null
  contract: IntegrationContract | null
  binding: Record<string, unknown> | null
  connection: Record<string, unknown> | null
  credentials: CredentialRow[]
  owner: { id: string; organisation_id: string | null; email_confirmed_at: string | null } | null
  owner_grant: AppRole | null
  creator: AudienceFacts | null
}
