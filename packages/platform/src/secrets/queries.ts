/** The SQL of app secrets, one function per statement (platform.app_secrets). */
import type { Queryable } from '../db/db.ts'
import { lockPlatform } from '../db/platform-lock.ts'
import type { SecretScope } from './scope.ts'

export interface SecretRow extends Record<string, unknown> {
  name: string
  value_encrypted: string
  updated_at: Date
}

/** Serialises writes to one namespace's secrets until the transaction ends. */
export async function lockScope(tx: Queryable, scope: SecretScope): Promise<void> {
  await lockPlatform(tx, `secrets:${scope.appId}:${scope.devName}`)
}

/** Inserts or replaces one value; true when the name was new. */
export async function upsertSecret(
  tx: Queryable,
  scope: SecretScope,
  row: { name: string; valueEncrypted: string; at: Date; userId: string | null },
): Promise<boolean> {
  const rows = await tx.query<{ created: boolean }>(
    `insert into platform.app_secrets (app_id, dev_name, name, value_encrypted, created_at, updated_at, updated_by)
     values ($1, $2, $3, $4, $5, $5, $6)
     on conflict (app_id, dev_name, name) do update
       set value_encrypted = excluded.value_encrypted, updated_at = excluded.updated_at, updated_by = excluded.updated_by
     returning (xmax = 0) as created`,
    [scope.appId, scope.devName, row.name, row.valueEncrypted, row.at, row.userId],
  )
  return rows[0]?.created ?? false
}

export async function countSecrets(db: Queryable, scope: SecretScope): Promise<number> {
  const rows = await db.query<{ count: number }>(
    'select count(*)::int as count from platform.app_secrets where app_id = $1 and dev_name = $2',
    [scope.appId, scope.devName],
  )
  return rows[0]?.count ?? 0
}

/**
 * The UTF-8 bytes of a namespace's values together, read from the ciphertexts without
 * decrypting: AES-GCM's output is as long as its input, plus a 16-byte tag (encryption.ts).
 */
export async function storedValueBytes(db: Queryable, scope: SecretScope): Promise<number> {
  const rows = await db.query<{ bytes: number }>(
    `select coalesce(sum(floor(length(split_part(value_encrypted, '.', 3)) * 3 / 4) - 16), 0)::int as bytes
       from platform.app_secrets where app_id = $1 and dev_name = $2`,
    [scope.appId, scope.devName],
  )
  return rows[0]?.bytes ?? 0
}

/** Deletes one value; true when there was one. */
export async function deleteSecret(db: Queryable, scope: SecretScope, name: string): Promise<boolean> {
  const rows = await db.query(
    'delete from platform.app_secrets where app_id = $1 and dev_name = $2 and name = $3 returning name',
    [scope.appId, scope.devName, name],
  )
  return rows.length > 0
}

/** Every stored secret of a namespace (at most MAX_SECRETS_PER_NAMESPACE), by name. */
export async function selectSecrets(db: Queryable, scope: SecretScope): Promise<SecretRow[]> {
  return await db.query<SecretRow>(
    `select name, value_encrypted, updated_at from platform.app_secrets
      where app_id = $1 and dev_name = $2 order by name limit 1000`,
    [scope.appId, scope.devName],
  )
}

export async function selectSecret(db: Queryable, scope: SecretScope, name: string): Promise<SecretRow | null> {
  const rows = await db.query<SecretRow>(
    `select name, value_encrypted, updated_at from platform.app_secrets
      where app_id = $1 and dev_name = $2 and name = $3`,
    [scope.appId, scope.devName, name],
  )
  return rows[0] ?? null
}

/** The `secrets` declaration of a release's manifest (`{ NAME: 'required' }`). */
export async function selectDeclaredSecrets(db: Queryable, releaseId: string): Promise<Record<string, string>> {
  const rows = await db.query<{ secrets: Record<string, string> | null }>(
    `select manifest -> 'secrets' as secrets from platform.releases where id = $1`,
    [releaseId],
  )
  return rows[0]?.secrets ?? {}
}
