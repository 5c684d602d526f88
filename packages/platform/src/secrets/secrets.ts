/**
 * App secrets (spec 2.5, 4.3): values an owner provisions for the secrets a manifest
 * declares, per app namespace (production, or one development namespace: they never
 * share values). Values are encrypted at rest with AES-256-GCM under a key derived from
 * the master key, with the app, namespace and name bound as associated data, so a stored
 * value cannot be moved to another app or name. Nothing here returns a value except
 * `read` and `values`, which only the Functions runtime calls.
 */
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { decrypt, encrypt } from '../lib/encryption.ts'
import { ServiceError } from '../lib/errors.ts'
import { announceChange, dropLocal } from '../db/notified-cache.ts'
import type { SecretScope } from './scope.ts'
import { countSecrets, deleteSecret, storedValueBytes, lockScope, selectSecret, selectSecrets, upsertSecret } from './queries.ts'

/** Same rule as the manifest's secret names. */
export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/
/** Largest value, in UTF-8 bytes. */
export const MAX_SECRET_VALUE_BYTES = 64 * 1024
/** Most stored values per app namespace. */
export const MAX_SECRETS_PER_NAMESPACE = 100
/** Most UTF-8 bytes of all stored values of one app namespace together. */
export const MAX_SECRET_BYTES_PER_NAMESPACE = 256 * 1024
/** NOTIFY channel told of every change to a namespace's values (payload `<appId>:<devName>`). */
export const SECRET_CHANGED = 'platform_secret_changed'

export interface StoredSecret {
  readonly name: string
  readonly updatedAt: Date
}

export interface SecretStore {
  /** Stores (or replaces) a value; `created` is false when it replaced one. */
  set(scope: SecretScope, input: { name: string; value: string; userId: string | null }): Promise<StoredSecret & { created: boolean }>
  /** Removes a value; false when none was set. */
  unset(scope: SecretScope, name: string): Promise<boolean>
  /** Names and update times of the stored values, by name. Never values. */
  list(scope: SecretScope): Promise<StoredSecret[]>
  /** One value, or null when it is not set. */
  read(scope: SecretScope, name: string): Promise<string | null>
  /** Every value of the namespace (for redaction). */
  values(scope: SecretScope): Promise<string[]>
}

/** A secret name from the caller, or VALIDATION_FAILED. */
export function checkSecretName(name: unknown): string {
  if (typeof name !== 'string' || !SECRET_NAME_PATTERN.test(name)) {
    throw new ServiceError('VALIDATION_FAILED',
      'a secret name starts with an uppercase letter and has at most 64 uppercase letters, digits or "_"',
      { details: { field: 'name' } })
  }
  return name
}

/** A secret value from the caller, or VALIDATION_FAILED (the message never repeats the value). */
export function checkSecretValue(value: unknown): string {
  if (typeof value !== 'string') {
    throw new ServiceError('VALIDATION_FAILED', 'value must be a string', { details: { field: 'value' } })
  }
  if (value.length === 0) {
    throw new ServiceError('VALIDATION_FAILED', 'value must not be empty; remove a secret with DELETE instead', { details: { field: 'value' } })
  }
  if (Buffer.byteLength(value) > MAX_SECRET_VALUE_BYTES) {
    throw new ServiceError('VALIDATION_FAILED', `value may be at most ${MAX_SECRET_VALUE_BYTES} bytes`, { details: { field: 'value' } })
  }
  return value
}

function purpose(scope: SecretScope, name: string): string {
  return `app-secret:${scope.appId}:${scope.devName}:${name}`
}

/**
 * @example
 * const store = createSecretStore({ db, clock, key: deriveKey(masterKey, 'app-secrets') })
 * await store.set({ appId, devName: '' }, { name: 'STRIPE_KEY', value, userId })
 */
export function createSecretStore(deps: { db: Db; clock: Clock; key: Uint8Array }): SecretStore {
  const { db, clock, key } = deps
  return {
    async set(scope, input) {
      const name = checkSecretName(input.name)
      const valueEncrypted = encrypt(key, purpose(scope, name), checkSecretValue(input.value))
      const at = clock.now()
      const created = await db.transaction(async (tx) => {
        await lockScope(tx, scope)
        const isNew = await upsertSecret(tx, scope, { name, valueEncrypted, at, userId: input.userId })
        if (isNew && (await countSecrets(tx, scope)) > MAX_SECRETS_PER_NAMESPACE) {
          throw new ServiceError('VALIDATION_FAILED', `an app namespace may hold at most ${MAX_SECRETS_PER_NAMESPACE} secrets`)
        }
        // Every value is redacted from every log line, so the total is bounded too.
        if ((await storedValueBytes(tx, scope)) > MAX_SECRET_BYTES_PER_NAMESPACE) {
          throw new ServiceError('VALIDATION_FAILED',
            `the secrets of an app namespace may hold at most ${MAX_SECRET_BYTES_PER_NAMESPACE} bytes together`, { details: { field: 'value' } })
        }
        await announceChange(tx, SECRET_CHANGED, `${scope.appId}:${scope.devName}`)
        return isNew
      })
      dropLocal(db, SECRET_CHANGED)
      return { name, updatedAt: at, created }
    },
    async unset(scope, name) {
      const removed = await db.transaction(async (tx) => {
        const gone = await deleteSecret(tx, scope, checkSecretName(name))
        if (gone) await announceChange(tx, SECRET_CHANGED, `${scope.appId}:${scope.devName}`)
        return gone
      })
      dropLocal(db, SECRET_CHANGED)
      return removed
    },
    async list(scope) {
      return (await selectSecrets(db, scope)).map((row) => ({ name: row.name, updatedAt: row.updated_at }))
    },
    async read(scope, name) {
      const row = await selectSecret(db, scope, name)
      return row === null ? null : decrypt(key, purpose(scope, row.name), row.value_encrypted)
    },
    async values(scope) {
      return (await selectSecrets(db, scope)).map((row) => decrypt(key, purpose(scope, row.name), row.value_encrypted))
    },
  }
}
