// Tests for the queues section.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'

const queue = (...extra: string[]) => manifestWith(['queues:', '  - name: emails', '    function: worker', ...extra])

describe('queues', () => {
  test('defaults are applied', () => {
    const { manifest } = valid(queue())
    assert.deepEqual(manifest?.queues, [
      { name: 'emails', function: 'worker', concurrency: 1, maxAttempts: 3, retryDelaySeconds: 30, retryBackoff: false, timeoutSeconds: 60 },
    ])
  })

  test('the bounds of every number are accepted', () => {
    valid(queue('    concurrency: 100', '    maxAttempts: 25', '    retryDelaySeconds: 86400', '    timeoutSeconds: 900'))
    valid(queue('    concurrency: 1', '    maxAttempts: 1', '    retryDelaySeconds: 0', '    timeoutSeconds: 1'))
  })

  for (const [field, value] of [
    ['concurrency', '0'],
    ['concurrency', '101'],
    ['maxAttempts', '0'],
    ['maxAttempts', '26'],
    ['retryDelaySeconds', '-1'],
    ['retryDelaySeconds', '86401'],
    ['timeoutSeconds', '0'],
    ['timeoutSeconds', '901'],
  ] as const) {
    test(`${field}: ${value} is out of range`, () => {
      const error = onlyError(queue(`    ${field}: ${value}`))
      assert.deepEqual(where(error), { code: 'MANIFEST_OUT_OF_RANGE', path: `queues[0].${field}`, line: 17, column: 7 + field.length })
    })
  }

  test('a fractional concurrency is not an integer', () => {
    assert.deepEqual(where(onlyError(queue('    concurrency: 1.5'))), { code: 'MANIFEST_NOT_INTEGER', path: 'queues[0].concurrency', line: 17, column: 18 })
  })

  test('retryBackoff must be a boolean', () => {
    assert.deepEqual(where(onlyError(queue('    retryBackoff: "true"'))), { code: 'MANIFEST_WRONG_TYPE', path: 'queues[0].retryBackoff', line: 17, column: 19 })
  })

  test('a queue name with uppercase letters is invalid', () => {
    const error = onlyError(manifestWith(['queues:', '  - name: Emails', '    function: worker']))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'queues[0].name', line: 15, column: 11 })
  })

  test('a missing function is reported at the queue mapping', () => {
    const error = onlyError(manifestWith(['queues:', '  - name: emails']))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'queues[0].function', line: 15, column: 5 })
  })

  test('an undeclared consumer is a dangling reference', () => {
    const error = onlyError(manifestWith(['queues:', '  - name: emails', '    function: sendEmail']))
    assert.deepEqual(where(error), { code: 'MANIFEST_FUNCTION_NOT_DECLARED', path: 'queues[0].function', line: 16, column: 15 })
    assert.match(error.message, /no Function named "sendEmail"/)
  })

  test('a user Function cannot consume a queue', () => {
    const error = onlyError(manifestWith(['queues:', '  - name: emails', '    function: page']))
    assert.deepEqual(where(error), { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'queues[0].function', line: 16, column: 15 })
    assert.match(error.message, /has access: user, but a queue consumer must be a Function with access: system/)
  })

  test('a duplicate queue name is reported on the second', () => {
    const error = onlyError(manifestWith(['queues:', '  - name: emails', '    function: worker', '  - name: emails', '    function: worker']))
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_NAME', path: 'queues[1].name', line: 17, column: 11 })
    assert.match(error.message, /already used at line 15/)
  })

  test('an unknown queue field is reported', () => {
    assert.deepEqual(where(onlyError(queue('    priority: 1'))), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'queues[0].priority', line: 17, column: 5 })
  })
})
