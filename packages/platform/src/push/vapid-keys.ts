/**
 * The platform's VAPID key pair (RFC 8292): made with web-push's `generateVAPIDKeys` on first
 * start, kept in PostgreSQL with the private key sealed under the master key (AES-256-GCM,
 * lib/encryption.ts), the same for every process and every app. Browsers subscribe with the
 * public key as applicationServerKey; push services accept only messages signed with the
 * private key for those subscriptions, so the pair is never rotated by the platform (a new
 * pair would orphan every subscription: docs/operations.md).
 */
import webpush from 'web-push'
import type { Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { decrypt, encrypt } from '../lib/encryption.ts'
import { insertVapidKeys, selectVapidKeys } from './queries.ts'

/** Associated data of the sealed private key: a value sealed for another use cannot stand in. */
export const VAPID_SEAL_PURPOSE = 'push-vapid-private-key'

export interface VapidKeys {
  /** The uncompressed P-256 public point, base64url (87 characters). */
  readonly publicKey: string
  /** The private scalar, base64url: held in memory only. */
  readonly privateKey: string
}

export interface VapidKeyStore {
  /** The key pair, made and stored first if the platform has none; read once per process. */
  keys(): Promise<VapidKeys>
}

/**
 * @example
 * const vapid = createVapidKeyStore({ db, clock, key: deriveKey(masterKey, 'push-vapid') })
 * const { publicKey } = await vapid.keys()
 */
export function createVapidKeyStore(deps: { db: Queryable; clock: Clock; key: Uint8Array }): VapidKeyStore {
  let loaded: Promise<VapidKeys> | null = null

  async function load(): Promise<VapidKeys> {
    let row = await selectVapidKeys(deps.db)
    if (row === undefined) {
      const made = webpush.generateVAPIDKeys()
      await insertVapidKeys(deps.db, {
        publicKey: made.publicKey, privateKeySealed: encrypt(deps.key, VAPID_SEAL_PURPOSE, made.privateKey), now: deps.clock.now(),
      })
      // Another process may have stored its pair first: every process uses the stored one.
      row = await selectVapidKeys(deps.db)
      if (row === undefined) throw new Error('the VAPID key pair could not be stored')
    }
    return Object.freeze({ publicKey: row.public_key, privateKey: decrypt(deps.key, VAPID_SEAL_PURPOSE, row.private_key_sealed) })
  }

  return {
    keys() {
      if (loaded === null) {
        loaded = load()
        loaded.catch(() => {
          loaded = null
        })
      }
      return loaded
    },
  }
}
