// Tests for the email section: aliases and the inbound receiver, with line-precise errors.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'
import { validateManifest } from './validate.ts'

describe('email', () => {
  test('absent, the manifest has no email declaration', () => {
    assert.equal(valid(manifestWith([])).manifest?.email, undefined)
  })

  test('aliases and an inbound system Function are read', () => {
    const { manifest } = valid(manifestWith(['email:', '  aliases: [support, no-reply, billing.eu]', '  inbound:', '    function: worker']))
    assert.deepEqual(manifest?.email, { aliases: ['support', 'no-reply', 'billing.eu'], inbound: { function: 'worker' } })
  })

  test('aliases alone send without receiving', () => {
    assert.deepEqual(valid(manifestWith(['email:', '  aliases:', '    - support'])).manifest?.email, { aliases: ['support'] })
  })

  for (const alias of ['Support', 'sup+port', 'sup port', '-support', 'support.', 'sup..port', 'süpport', '"support"', 'a'.repeat(65)]) {
    test(`the alias ${JSON.stringify(alias.length > 20 ? `${alias.slice(0, 8)}…` : alias)} is refused where it is written`, () => {
      const error = onlyError(manifestWith(['email:', '  aliases:', '    - support', `    - ${alias.includes(' ') || alias.startsWith('"') ? `'${alias}'` : alias}`]))
      assert.equal(where(error).path, 'email.aliases[1]')
      assert.equal(where(error).line, 17)
      assert.equal(where(error).column, 7)
      assert.ok(['MANIFEST_INVALID_FORMAT', 'MANIFEST_TOO_LONG'].includes(error.code), error.code)
    })
  }

  test('a repeated alias is reported on its second line', () => {
    const error = onlyError(manifestWith(['email:', '  aliases:', '    - support', '    - support']))
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_VALUE', path: 'email.aliases[1]', line: 17, column: 7 })
    assert.match(error.message, /already listed at line 16/)
  })

  test('more than 20 aliases are too many', () => {
    const aliases = Array.from({ length: 21 }, (_, i) => `a${i}`).join(', ')
    assert.deepEqual(where(onlyError(manifestWith(['email:', `  aliases: [${aliases}]`]))),
      { code: 'MANIFEST_TOO_MANY_ITEMS', path: 'email.aliases', line: 15, column: 12 })
  })

  test('the inbound receiver must be a declared Function', () => {
    const error = onlyError(manifestWith(['email:', '  aliases: [support]', '  inbound:', '    function: receiveMail']))
    assert.deepEqual(where(error), { code: 'MANIFEST_FUNCTION_NOT_DECLARED', path: 'email.inbound.function', line: 17, column: 15 })
  })

  test('the inbound receiver must have access: system', () => {
    const error = onlyError(manifestWith(['email:', '  aliases: [support]', '  inbound:', '    function: page']))
    assert.deepEqual(where(error), { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'email.inbound.function', line: 17, column: 15 })
    assert.match(error.message, /an inbound email receiver must be a Function with access: system/)
  })

  test('inbound without a function is missing it at the inbound mapping', () => {
    const { errors } = validateManifest(manifestWith(['email:', '  aliases: [support]', '  inbound: {}']))
    assert.deepEqual(errors.map(where), [{ code: 'MANIFEST_MISSING_FIELD', path: 'email.inbound.function', line: 16, column: 12 }])
  })

  test('inbound without aliases has no address to receive at', () => {
    const error = onlyError(manifestWith(['email:', '  inbound:', '    function: worker']))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'email.aliases', line: 15, column: 3 })
    assert.match(error.message, /declare at least one in email\.aliases/)
  })

  test('an unknown field of email names the known ones', () => {
    const error = onlyError(manifestWith(['email:', '  aliases: [support]', '  domain: example.com']))
    assert.deepEqual(where(error), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'email.domain', line: 16, column: 3 })
    assert.match(error.message, /known fields here: aliases, inbound/)
  })

  test('email must be a mapping', () => {
    assert.deepEqual(where(onlyError(manifestWith(['email: [support]']))), { code: 'MANIFEST_WRONG_TYPE', path: 'email', line: 14, column: 8 })
  })
})
