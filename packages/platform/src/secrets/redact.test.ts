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

  test('redacts a value as Deno prints it inside an object or array: quoted, backslashes doubled, controls escaped', () => {
    const key = 'sk_live_"q"\\b/ü 42'
    const tricky = "it's\t\"x\"\u0001\u0085 end"
    const both = createRedactor([key, tricky])
    // As Deno 2 printed them (console.error({ key }), console.error([key]), console.error({ k: tricky })).
    assert.equal(both.text(`{ key: 'sk_live_"q"\\\\b/ü 42' }`), `{ key: '${REDACTED}' }`)
    assert.equal(both.text(`[ "sk_live_\\"q\\"\\\\b/ü 42" ]`), `[ "${REDACTED}" ]`)
    assert.equal(both.text('{ k: `it\'s\\t"x"\\x01\\x85 end` }'), `{ k: \`${REDACTED}\` }`)
  })

  test('redacts each line of a multi-line value on its own (console output is read a line at a time)', () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nabc\n-----END PRIVATE KEY-----'
    const lines = createRedactor([pem])
    assert.equal(lines.text('MIIEvQIBADANBgkqhkiG9w0BAQEFAASC'), REDACTED)
    assert.equal(lines.text('-----END PRIVATE KEY-----'), REDACTED)
    assert.equal(lines.text('abc'), 'abc', 'a line under 8 characters alone is left (it would garble everything)')
    assert.equal(lines.text(`x ${pem} y`), `x ${REDACTED} y`)
  })

  test('a key __proto__ is copied as a key and never sets the prototype', () => {
    const input = JSON.parse('{"__proto__": {"polluted": true}, "a": "p\\"a\\\\ss/ wörd"}')
    const output = redactor.value(input) as Record<string, unknown>
    assert.equal(Object.getPrototypeOf(output), Object.prototype)
    assert.equal((output as { polluted?: boolean }).polluted, undefined)
    assert.equal(JSON.stringify(output), `{"__proto__":{"polluted":true},"a":"${REDACTED}"}`)
  })

  test('with no values it changes nothing and says it is empty', () => {
    const empty = createRedactor(['', ''])
    assert.equal(empty.empty, true)
    const value = { a: 'b' }
    assert.equal(empty.value(value), value)
    assert.equal(redactor.empty, false)
  })
})
