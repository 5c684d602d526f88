// Redaction of secret values: the value and the forms it takes on the way out (JSON-escaped
// once and twice, URI-encoded), in strings, keys and numbers of nested values.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createRedactor, REDACTED } from './redact.ts'

describe('createRedactor', () => {
  const secret = 'p"a\\ss/ wörd'
  const redactor = createRedactor([secret, '31337'])

  test('replaces the value and its JSON-escaped and URI-encoded forms in text', () => {
    assert.equal(redactor.text(`plain ${secret} end`), `plain ${REDACTED} end`)
    assert.equal(redactor.text(JSON.stringify({ k: secret })), `{"k":"${REDACTED}"}`)
    assert.equal(redactor.text(JSON.stringify(JSON.stringify({ k: secret }))), `"{\\"k\\":\\"${REDACTED}\\"}"`)
    assert.equal(redactor.text(`https://x.test/?k=${encodeURIComponent(secret)}`), `https://x.test/?k=${REDACTED}`)
    assert.equal(redactor.text('nothing here'), 'nothing here')
  })

  test('redacts nested values, object keys and numbers that spell a value, and copies instead of mutating', () => {
    const input = { list: [secret, { deep: `x${secret}y` }], [secret]: 1, pin: 31337, other: 7, flag: true, none: null }
    const output = redactor.value(input)
    assert.deepEqual(output, { list: [REDACTED, { deep: `x${REDACTED}y` }], [REDACTED]: 1, pin: REDACTED, other: 7, flag: true, none: null })
    assert.equal(input.list[0], secret)
  })

  test('with no values it changes nothing and says it is empty', () => {
    const empty = createRedactor(['', ''])
    assert.equal(empty.empty, true)
    const value = { a: 'b' }
    assert.equal(empty.value(value), value)
    assert.equal(redactor.empty, false)
  })
})
