/**
 * Token material: random secrets with a recognisable prefix, stored as SHA-256 hashes and
 * compared in constant time. Web Crypto and node:crypto only; nothing home-made.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto'

/** A new secret like `svc_owner_3q2…`: prefix plus 32 random bytes in base64url. */
export function newSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url')
}

/** One-shot `crypto.hash` (a third faster than createHash for the short tokens hashed per request). */
export function sha256(value: string | Uint8Array): Buffer {
  return hash('sha256', value, 'buffer')
}

export function sha256Hex(value: string | Uint8Array): string {
  return hash('sha256', value, 'hex')
}

/** Constant-time equality for two strings (different lengths compare unequal). */
export function safeEqual(a: string, b: string): boolean {
  const ha = sha256(a)
  const hb = sha256(b)
  return timingSafeEqual(ha, hb) && a.length === b.length
}

/** A short random identifier in lowercase hex, e.g. for role names. */
export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex')
}
