/** Random values that browsers hold (cookies, link secrets): only their SHA-256 is stored. */
import { timingSafeEqual } from 'node:crypto'
import { newSecret, sha256 } from '../lib/crypto.ts'

export function browserSecret(): { value: string; hash: Buffer } {
  const value = newSecret('')
  return { value, hash: sha256(value) }
}

export { sha256 as hashSecret }

/** Whether `value` has the shape `browserSecret` makes (32 random bytes in base64url). */
export function isBrowserSecret(value: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(value)
}

/** Whether a presented secret matches a stored SHA-256, compared in constant time. */
export function matchesHash(stored: Uint8Array | null | undefined, presented: string | null | undefined): boolean {
  if (!stored || stored.length !== 32 || !presented || presented.length > 200) return false
  return timingSafeEqual(stored, sha256(presented))
}
