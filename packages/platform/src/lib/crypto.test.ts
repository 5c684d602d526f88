import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { newSecret, safeEqual, sha256Hex } from './crypto.ts'
import { decrypt, encrypt } from './encryption.ts'
import { deriveKey } from './master-key.ts'

describe('token material', () => {
  test('safeEqual compares whole values: equal, different, prefixes and different lengths', () => {
    const secret = newSecret('svc_owner_')
    assert.equal(safeEqual(secret, secret), true)
    assert.equal(safeEqual(secret, secret.slice(0, -1)), false)
    assert.equal(safeEqual(secret, secret + 'x'), false)
    assert.equal(safeEqual(secret, secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A')), false)
    assert.equal(safeEqual('', ''), true)
    assert.equal(safeEqual('a', ''), false)
  })

  test('secrets carry their prefix and 256 random bits, and differ every time', () => {
    const a = newSecret('svc_app_')
    const b = newSecret('svc_app_')
    assert.match(a, /^svc_app_[A-Za-z0-9_-]{43}$/)
    assert.notEqual(a, b)
    assert.equal(sha256Hex(a).length, 64)
  })

  test('encryption is authenticated and bound to its purpose', () => {
    const key = deriveKey(new Uint8Array(32).fill(7), 'encryption')
    const sealed = encrypt(key, 'refresh-token', 'the secret')
    assert.equal(decrypt(key, 'refresh-token', sealed), 'the secret')
    assert.doesNotMatch(sealed, /the secret/)
    assert.throws(() => decrypt(key, 'another-purpose', sealed))
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA')
    assert.throws(() => decrypt(key, 'refresh-token', tampered))
    assert.throws(() => decrypt(deriveKey(new Uint8Array(32).fill(8), 'encryption'), 'refresh-token', sealed))
  })
})
