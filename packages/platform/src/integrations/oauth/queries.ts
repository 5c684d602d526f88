/**
 * The SQL of OAuth connections: one function per statement, over platform.oauth_flows and
 * platform.connection_oauth_tokens (migration 0019).
 */
import type { Queryable } from '../../db/db.ts'

export interface FlowRow extends Record<string, unknown> {
  state_hash: string
  browser_hash: string
  user_id: string
  provider_app_id: string
  integration_name: string
  connection_id: string
  reconnect: boolean
  kind: 'personal' | 'organisation'
  label: string
  sealed: string
  key_id: string
  expires_at: Date
  /** The consumer app and slot to bind the new connection into (the connect-and-bind page), or null. */
  bind_app_id: string | null
  bind_slot: string | null
}

export async function insertFlow(
  db: Queryable,
  row: {
    stateHash: string; browserHash: string; userId: string; providerAppId: string; integrationName: string; connectionId: string
    reconnect: boolean; kind: 'personal' | 'organisation'; label: string; sealed: string; keyId: string; at: Date; expiresAt: Date
    bind: { appId: string; slot: string } | null
  },
): Promise<void> {
  await db.query(
    `insert into platform.oauth_flows (state_hash, browser_hash, user_id, provider_app_id, integration_name, connection_id, reconnect,
       kind, label, sealed, key_id, created_at, expires_at, bind_app_id, bind_slot)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    [row.stateHash, row.browserHash, row.userId, row.providerAppId, row.integrationName, row.connectionId, row.reconnect,
      row.kind, row.label, row.sealed, row.keyId, row.at, row.expiresAt, row.bind?.appId ?? null, row.bind?.slot ?? null],
  )
}

/** Removes and returns the flow with this state hash (one-time), or null. */
export async function deleteFlow(db: Queryable, stateHash: string): Promise<FlowRow | null> {
  const rows = await db.query<FlowRow>('delete from platform.oauth_flows where state_hash = $1 returning *', [stateHash])
  return rows[0] ?? null
}

/** Drops flows that expired before `at`. */
export async function deleteExpiredFlows(db: Queryable, at: Date): Promise<void> {
  await db.query('delete from platform.oauth_flows where expires_at < $1', [at])
}

export interface ContractRow extends Record<string, unknown> {
  app_status: string
  integration: unknown
}

/** The `provides.integration` block of the provider app's active release. */
export async function selectActiveContract(db: Queryable, providerAppId: string): Promise<ContractRow | null> {
  const rows = await db.query<ContractRow>(
    `select a.status as app_status, r.manifest -> 'provides' -> 'integration' as integration
       from platform.apps a left join platform.releases r on r.id = a.active_release_id
      where a.id = $1`,
    [providerAppId],
  )
  return rows[0] ?? null
}

export interface TokenRow extends Record<string, unknown> {
  connection_id: string
  access_token_encrypted: string
  refresh_token_encrypted: string | null
  key_id: string
  expires_at: Date | null
  refresh_claim: string | null
  refresh_claimed_until: Date | null
}

export async function selectTokens(db: Queryable, connectionId: string): Promise<TokenRow | null> {
  const rows = await db.query<TokenRow>('select * from platform.connection_oauth_tokens where connection_id = $1', [connectionId])
  return rows[0] ?? null
}

/** Writes a connection's tokens (connect and reconnect), clearing any refresh lease. */
export async function upsertTokens(
  db: Queryable,
  row: { connectionId: string; access: string; refresh: string | null; keyId: string; expiresAt: Date | null; at: Date },
): Promise<void> {
  await db.query(
    `insert into platform.connection_oauth_tokens (connection_id, access_token_encrypted, refresh_token_encrypted, key_id, expires_at,
       refresh_claim, refresh_claimed_until, updated_at)
     values ($1, $2, $3, $4, $5, null, null, $6)
     on conflict (connection_id) do update set access_token_encrypted = excluded.access_token_encrypted,
       refresh_token_encrypted = excluded.refresh_token_encrypted, key_id = excluded.key_id, expires_at = excluded.expires_at,
       refresh_claim = null, refresh_claimed_until = null, updated_at = excluded.updated_at`,
    [row.connectionId, row.access, row.refresh, row.keyId, row.expiresAt, row.at],
  )
}

/**
 * Takes the refresh lease of a connection whose access token expires before `staleBefore`,
 * when no other process holds an unexpired one; returns the row, or null (fresh, or leased).
 * One statement, so two processes racing cannot both win.
 */
export async function claimRefresh(
  db: Queryable,
  input: { connectionId: string; claim: string; at: Date; until: Date; staleBefore: Date },
): Promise<TokenRow | null> {
  const rows = await db.query<TokenRow>(
    `update platform.connection_oauth_tokens set refresh_claim = $2, refresh_claimed_until = $4
      where connection_id = $1 and expires_at is not null and expires_at < $5
        and (refresh_claim is null or refresh_claimed_until < $3)
      returning *`,
    [input.connectionId, input.claim, input.at, input.until, input.staleBefore],
  )
  return rows[0] ?? null
}

/** Stores refreshed tokens if the lease is still ours; true when written. */
export async function updateRefreshed(
  db: Queryable,
  row: { connectionId: string; claim: string; access: string; refresh: string | null; keyId: string; expiresAt: Date | null; at: Date },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.connection_oauth_tokens set access_token_encrypted = $3, refresh_token_encrypted = $4, key_id = $5, expires_at = $6,
       refresh_claim = null, refresh_claimed_until = null, updated_at = $7
      where connection_id = $1 and refresh_claim = $2 returning connection_id`,
    [row.connectionId, row.claim, row.access, row.refresh, row.keyId, row.expiresAt, row.at],
  )
  return rows.length === 1
}

/** Gives the lease back without new tokens (the refresh failed). */
export async function releaseClaim(db: Queryable, input: { connectionId: string; claim: string }): Promise<void> {
  await db.query(
    `update platform.connection_oauth_tokens set refresh_claim = null, refresh_claimed_until = null
      where connection_id = $1 and refresh_claim = $2`,
    [input.connectionId, input.claim],
  )
}

/** A provider app by id or slug: its id and the integration block of its active release. */
export async function selectProviderApp(db: Queryable, app: string, byId: boolean): Promise<(ContractRow & { id: string }) | null> {
  const rows = await db.query<ContractRow & { id: string }>(
    `select a.id, a.status as app_status, r.manifest -> 'provides' -> 'integration' as integration
       from platform.apps a left join platform.releases r on r.id = a.active_release_id
      where ${byId ? 'a.id = $1::uuid' : 'a.slug = $1'}`,
    [app],
  )
  return rows[0] ?? null
}

/** The `authorization` block of one release's contract, or null. */
export async function selectReleaseAuthorization(db: Queryable, releaseId: string): Promise<unknown> {
  const rows = await db.query<{ authorization: unknown }>(
    `select manifest -> 'provides' -> 'integration' -> 'authorization' as authorization from platform.releases where id = $1`,
    [releaseId],
  )
  return rows[0]?.authorization ?? null
}

/** Token rows sealed under another key than `keyId` (key rotation), a batch. */
export async function selectTokensNotUnder(db: Queryable, input: { keyId: string; limit: number }): Promise<TokenRow[]> {
  return db.query<TokenRow>('select * from platform.connection_oauth_tokens where key_id <> $1 order by connection_id limit $2', [input.keyId, input.limit])
}

/** Re-seals one row's tokens if they are still the ones read (a refresh in between wins). */
export async function updateTokensSealed(
  db: Queryable,
  row: { connectionId: string; previousAccess: string; access: string; refresh: string | null; keyId: string },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.connection_oauth_tokens set access_token_encrypted = $3, refresh_token_encrypted = $4, key_id = $5
      where connection_id = $1 and access_token_encrypted = $2 returning connection_id`,
    [row.connectionId, row.previousAccess, row.access, row.refresh, row.keyId],
  )
  return rows.length === 1
}
