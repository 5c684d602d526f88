import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ServiceError } from '../../lib/errors.ts'
import {
  checkPassword,
  dummyVerifier,
  hashPassword,
  PASSWORD_MAX,
  PASSWORD_MIN,
  verifyPassword,
} from './passwords.ts'

const EMOJI = '\u{1F511}' // one code point, two UTF-16 units

function assertRejected(password: unknown): void {
  assert.throws(
    () => checkPassword(password),
    (error: unknown) => {
      assert.ok(error instanceof ServiceError)
      assert.equal(error.code, 'VALIDATION_FAILED')
      assert.equal(error.status, 400)
      assert.deepEqual(error.details, { field: 'password' })
      assert.match(error.message, /8 to 72 characters/)
      return true
    },
  )
}

describe('the password length rule', () => {
  test('the limits are 8 and 72 characters', () => {
    assert.equal(PASSWORD_MIN, 8)
    assert.equal(PASSWORD_MAX, 72)
  })

  test('7 characters are rejected and 8 accepted', () => {
    assertRejected('a'.repeat(7))
    assert.equal(checkPassword('a'.repeat(8)), 'a'.repeat(8))
  })

  test('72 characters are accepted and 73 rejected', () => {
    assert.equal(checkPassword('a'.repeat(72)), 'a'.repeat(72))
    assertRejected('a'.repeat(73))
  })

  test('characters are counted as code points: 72 emoji pass and 73 do not', () => {
    assert.equal(EMOJI.length, 2)
    assert.equal(checkPassword(EMOJI.repeat(72)), EMOJI.repeat(72))
    assertRejected(EMOJI.repeat(73))
  })

  test('4 emoji are 4 characters, not 8, so they are too short', () => {
    assertRejected(EMOJI.repeat(4))
  })

  test('anything but a string is rejected', () => {
    for (const value of [undefined, null, 12345678, ['password1'], { length: 10 }]) {
      assertRejected(value)
    }
  })
})

describe('hashing and verifying passwords', () => {
  test('the verifier is an argon2id PHC string with the OWASP parameters', async () => {
    const verifier = await hashPassword('correct horse battery')
    assert.match(verifier, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  })

  test('the verifier never contains the password', async () => {
    const password = 'correct horse battery'
    const verifier = await hashPassword(password)
    assert.ok(!verifier.includes(password))
    assert.ok(!verifier.includes(Buffer.from(password).toString('base64').replace(/=+$/, '')))
  })

  test('hashing the same password twice gives different verifiers (fresh salt)', async () => {
    const [a, b] = await Promise.all([hashPassword('same password'), hashPassword('same password')])
    assert.notEqual(a, b)
  })

  test('hashing refuses a password outside the length rule', async () => {
    await assert.rejects(hashPassword('short'), { code: 'VALIDATION_FAILED' })
  })

  test('the right password verifies and a wrong one does not', async () => {
    const verifier = await hashPassword('correct horse battery')
    assert.equal(await verifyPassword(verifier, 'correct horse battery'), true)
    assert.equal(await verifyPassword(verifier, 'Correct horse battery'), false)
    assert.equal(await verifyPassword(verifier, ''), false)
  })

  test('a multibyte password round-trips', async () => {
    const password = EMOJI.repeat(72)
    const verifier = await hashPassword(password)
    assert.equal(await verifyPassword(verifier, password), true)
    assert.equal(await verifyPassword(verifier, EMOJI.repeat(71)), false)
  })

  test('no verifier answers false after checking against the dummy argon2id hash', async () => {
    assert.equal(await verifyPassword(null, 'correct horse battery'), false)
    const dummy = await dummyVerifier()
    assert.match(dummy, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
    assert.equal(await dummyVerifier(), dummy, 'the dummy is computed once')
  })

  test('a malformed verifier answers false instead of throwing', async () => {
    const good = await hashPassword('correct horse battery')
    const malformed = [
      '',
      'correct horse battery',
      good.slice(0, -5),
      good + '$',
      good.replace('t=2', 't=0'),
      good.replace('$argon2id$', '$argon2i$'),
    ]
    for (const verifier of malformed) {
      assert.equal(await verifyPassword(verifier, 'correct horse battery'), false, verifier)
    }
  })

  test('a verifier demanding an absurd cost is refused, not computed', async () => {
    // m=999999999 KiB would try to allocate about 1 TB if argon2 ran it.
    const good = await hashPassword('correct horse battery')
    const greedy = good.replace('m=19456', 'm=999999999')
    assert.equal(await verifyPassword(greedy, 'correct horse battery'), false)
  })
})
