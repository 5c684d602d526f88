/**
 * A connection's OAuth tokens at rest: sealed (AES-256-GCM) under the connection keyring's
 * current key, with the connection id and the token kind bound as associated data, and what
 * an exchange or refresh Function must return to be stored.
 */
import type { Db, Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { decrypt, encrypt } from '../../lib/encryption.ts'
import type { ConnectionKeyring } from '../connections/index.ts'
import { selectTokens, selectTokensNotUnder, updateTokensSealed, upsertTokens, type TokenRow } from './queries.ts'

/** Longest token accepted from a provider Function, in characters. */
export const MAX_TOKEN_LENGTH = 16 * 1024

/** What `exchange` and `refresh` return (spec 4.4). */
export interface TokenResult {
  readonly accessToken: string
  readonly refreshToken: string | null
  /** Seconds, when the provider said. */
  readonly expiresIn: number | null
}

/**
 * The tokens in a Function's result, or null when it holds no usable access token (for a
 * refresh: the provider rejected it). Extra fields are ignored.
 */
export function readTokenResult(value: unknown): TokenResult | null {
  if (value === null || typeof value !== 'object') return null
  const result = value as Record<string, unknown>
  const { accessToken, refreshToken, expiresIn } = result
  if (typeof accessToken !== 'string' || accessToken.length === 0 || accessToken.length > MAX_TOKEN_LENGTH) return null
  const refresh = typeof refreshToken === 'string' && refreshToken.length > 0 && refreshToken.length <= MAX_TOKEN_LENGTH ? refreshToken : null
  const seconds = typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0 ? Math.floor(expiresIn) : null
  return { accessToken, refreshToken: refresh, expiresIn: seconds }
}

export function tokenPurpose(connectionId: string, kind: 'access' | 'refresh'): string {
  return `connection-oauth:${connectionId}:${kind}`
}

export function keyOf(keyring: ConnectionKeyring, id: string): Uint8Array {
  const key = keyring.keys.get(id)
  if (!key) throw new Error(`connection key ${id} is not in the keyring`)
  return key
}

export interface SealedTokens {
  access: string
  refresh: string | null
  keyId: string
  expiresAt: Date | null
}

/** Seals tokens for storage; `keptRefresh` is the refresh token to keep when none came back. */
export function sealTokens(
  input: { keyring: ConnectionKeyring; clock: Clock; connectionId: string; tokens: TokenResult; keptRefresh?: string | null },
): SealedTokens {
  const keyId = input.keyring.current
  const key = keyOf(input.keyring, keyId)
  const refresh = input.tokens.refreshToken ?? input.keptRefresh ?? null
  return {
    access: encrypt(key, tokenPurpose(input.connectionId, 'access'), input.tokens.accessToken),
    refresh: refresh === null ? null : encrypt(key, tokenPurpose(input.connectionId, 'refresh'), refresh),
    keyId,
    expiresAt: input.tokens.expiresIn === null ? null : new Date(input.clock.now().getTime() + input.tokens.expiresIn * 1000),
  }
}

export function openAccess(keyring: ConnectionKeyring, row: TokenRow): string {
  return decrypt(keyOf(keyring, row.key_id), tokenPurpose(row.connection_id, 'access'), row.access_token_encrypted)
}

export function openRefresh(keyring: ConnectionKeyring, row: TokenRow): string | null {
  if (row.refresh_token_encrypted === null) return null
  return decrypt(keyOf(keyring, row.key_id), tokenPurpose(row.connection_id, 'refresh'), row.refresh_token_encrypted)
}

/** Stores a connection's tokens at connect or reconnect. */
export async function storeTokens(
  tx: Queryable,
  input: { keyring: ConnectionKeyring; clock: Clock; connectionId: string; tokens: TokenResult },
): Promise<void> {
  const sealed = sealTokens(input)
  await upsertTokens(tx, { connectionId: input.connectionId, ...sealed, at: input.clock.now() })
}

export { selectTokens }

/**
 * Re-seals every connection's OAuth tokens sealed under an older key with the keyring's
 * current key (key rotation, beside `resealConnections`), 100 per transaction; returns how
 * many connections moved. A row refreshed meanwhile is left to the next pass.
 *
 * @example
 * await resealOAuthTokens(db, keyring) // 0 when every token is under keyring.current
 */
export async function resealOAuthTokens(db: Db, keyring: ConnectionKeyring): Promise<number> {
  const keyId = keyring.current
  const key = keyOf(keyring, keyId)
  let moved = 0
  for (let pass = 0; pass < 10_000; pass++) {
    const batch = await db.transaction(async (tx) => {
      const rows = await selectTokensNotUnder(tx, { keyId, limit: 100 })
      let sealed = 0
      for (const row of rows) {
        const refresh = openRefresh(keyring, row)
        const updated = await updateTokensSealed(tx, {
          connectionId: row.connection_id, previousAccess: row.access_token_encrypted,
          access: encrypt(key, tokenPurpose(row.connection_id, 'access'), openAccess(keyring, row)),
          refresh: refresh === null ? null : encrypt(key, tokenPurpose(row.connection_id, 'refresh'), refresh), keyId,
        })
        if (updated) sealed++
      }
      return { rows: rows.length, sealed }
    })
    moved += batch.sealed
    if (batch.rows === 0) return moved
  }
  return moved
}
