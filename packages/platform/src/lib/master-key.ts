/**
 * The master key encrypts secrets at rest and derives the platform's signing keys.
 * SERVICE_MASTER_KEY (32 bytes, base64) when set; otherwise generated once into
 * `<data dir>/master-key` (mode 0600). Every process over one PostgreSQL needs the same key.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createHmac, randomBytes } from 'node:crypto'

export class MasterKeyError extends Error {
  override name = 'MasterKeyError'
}

function decode(value: string, source: string): Uint8Array {
  const bytes = Buffer.from(value.trim(), 'base64')
  if (bytes.length !== 32) throw new MasterKeyError(`${source} must be 32 bytes in base64 (openssl rand -base64 32)`)
  return new Uint8Array(bytes)
}

export function loadMasterKey(options: { dataDir: string; fromEnv: string | null }): Uint8Array {
  if (options.fromEnv) return decode(options.fromEnv, 'SERVICE_MASTER_KEY')
  const path = join(options.dataDir, 'master-key')
  if (existsSync(path)) return decode(readFileSync(path, 'utf8'), path)
  mkdirSync(options.dataDir, { recursive: true })
  const key = randomBytes(32)
  writeFileSync(path, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' })
  chmodSync(path, 0o600)
  return new Uint8Array(key)
}

/** A key for one purpose, derived from the master key (HMAC-SHA-256 as a KDF). */
export function deriveKey(master: Uint8Array, purpose: string): Uint8Array {
  return new Uint8Array(createHmac('sha256', master).update(`service-platform:${purpose}`).digest())
}
