/** Random values that browsers hold (cookies, link secrets): only their SHA-256 is stored. */
import { newSecret, sha256 } from '../lib/crypto.ts'

export function browserSecret(): { value: string; hash: Buffer } {
  const value = newSecret('')
  return { value, hash: sha256(value) }
}

export { sha256 as hashSecret }
