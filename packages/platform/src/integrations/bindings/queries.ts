/**
 * SQL of bindings (platform.integration_bindings), one function per statement, and the two
 * reads of other features' tables the bindings need (the running release's manifest, the
 * published contract of a name).
 */
import { first, type Db, type Queryable } from '../../db/db.ts'
import { audienceFactsColumns } from '../../identity/index.ts'
import { connectionColumns, credentialsJson } from '../connections/index.ts'
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

/** The live binding of a slot: the app's (`userId` null) or one person's. */
export async function selectActiveBinding(
  db: Queryable, key: { appId: string; slot: string; userId: string | null },
): Promise<BindingRow | undefined> {
  return first<BindingRow>(db,
    `select ${COLUMNS} from platform.integration_bindings
      where consumer_app_id = $1 and slot = $2 and status = 'active' and user_id is not distinct from $3`,
    [key.appId, key.slot, key.userId])
}

/** Removes the live binding of a slot (a new one replaces it, or the slot is unbound); true when there was one. */
export async function deleteActiveBinding(tx: Queryable, key: { appId: string; slot: string; userId: string | null }): Promise<boolean> {
  const rows = await tx.query<{ id: string }>(
    `delete from platform.integration_bindings
      where consumer_app_id = $1 and slot = $2 and status = 'active' and user_id is not distinct from $3
      returning id`,
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

/** The contract an ACTIVE app of the organisation publishes under `name`. */
export async function selectPublishedContract(db: Queryable, key: { organisationId: string; name: string }): Promise<PublishedContractRow | undefined> {
  return first<PublishedContractRow>(db,
    `select c.app_id, c.contract from platform.integration_contracts c join platform.apps a on a.id = c.app_id
      where c.organisation_id = $1 and c.name = $2 and a.status = 'active'`,
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

const APP_FIELDS = ['id', 'organisation_id', 'owner_id', 'slug', 'name', 'visibility', 'status', 'paused_reason', 'active_release_id', 'created_at', 'updated_at']
const BINDING_FIELDS = COLUMNS.split(', ')

/** `alias.column as prefixcolumn` for each column. */
function prefixed(alias: string, columns: readonly string[], prefix: string): string {
  return columns.map((column) => `${alias}.${column} as ${prefix}${column}`).join(', ')
}

/** The columns of `row` whose names start with `prefix`, without it; null when `prefix + 'id'` is null (no such row). */
export function unprefix<T extends Record<string, unknown>>(row: Record<string, unknown>, prefix: string): T | null {
  if (row[`${prefix}id`] === null || row[`${prefix}id`] === undefined) return null
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(row)) if (key.startsWith(prefix)) out[key.slice(prefix.length)] = value
  return out as T
}

/**
 * Everything one broker call checks, in ONE statement (prepared, `db.read`): the consumer app
 * (`consumer_*`; no row when it is gone), the contract an active app of its organisation
 * publishes under `integration` with that provider app (`provider_*`, `contract`), the live
 * binding of the slot for `userId` (`binding_*`), its connection (`connection_*`, with the
 * connection's rows as `credentials`), the connection owner's account and stored grant on
 * the consumer (`owner_*`, `owner_grant`) and the binding creator's audience facts on the
 * provider (`creator_*`, identity's audienceFactsColumns). The rules applied to them are
 * identity's and bindings.ts's; nothing here decides.
 */
export function selectCallFacts(
  db: Db, key: { appId: string; integration: string; slot: string; userId: string | null },
): Promise<Record<string, unknown>[]> {
  return db.read(CALL_FACTS, [key.appId, key.integration, key.slot, key.userId])
}

const CALL_FACTS = `select ${prefixed('a', APP_FIELDS, 'consumer_')},
       ${prefixed('pa', APP_FIELDS, 'provider_')}, pc.contract,
       ${prefixed('b', BINDING_FIELDS, 'binding_')},
       ${connectionColumns('c', 'cpa', 'connection_')}, ${credentialsJson('c.id')} as credentials,
       ou.id as owner_id, ou.organisation_id as owner_organisation_id, ou.email_confirmed_at as owner_email_confirmed_at,
       og.role as owner_grant,
       cu.id as creator_id, ${audienceFactsColumns('pa', 'cu', 'creator_')}
  from platform.apps a
  left join (platform.integration_contracts pc join platform.apps pa on pa.id = pc.app_id and pa.status = 'active')
    on pc.organisation_id = a.organisation_id and pc.name = $2
  left join platform.integration_bindings b
    on b.consumer_app_id = a.id and b.slot = $3 and b.status = 'active' and b.user_id is not distinct from $4
  left join platform.connections c on c.id = b.connection_id
  left join platform.apps cpa on cpa.id = c.provider_app_id
  left join platform.users ou on ou.id = c.owner_id
  left join platform.app_grants og on og.app_id = a.id and og.user_id = ou.id
  left join platform.users cu on cu.id = b.created_by
 where a.id = $1`
