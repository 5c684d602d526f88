/**
 * AES-256-GCM for secrets at rest. The output is `v1.<iv>.<ciphertext+tag>` in base64url;
 * the purpose is bound as associated data, so a value encrypted for one use cannot be
 * replayed as another.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

export function encrypt(key: Uint8Array, purpose: string, plaintext: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(purpose))
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
  return `v1.${iv.toString('base64url')}.${body.toString('base64url')}`
}

export function decrypt(key: Uint8Array, purpose: string, sealed: string): string {
  const [version, iv, body] = sealed.split('.')
  if (version !== 'v1' || !iv || !body) throw new Error('not an encrypted value')
  const bytes = Buffer.from(body, 'base64url')
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
  decipher.setAAD(Buffer.from(purpose))
  decipher.setAuthTag(bytes.subarray(bytes.length - 16))
  return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString('utf8')
}
