// Which failures earn another attempt, and how much of an error a job keeps.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { boundedError, isRetryable } from './dispatcher.ts'

test('only errors.unavailable (503), a timeout and a crashed worker are retryable', () => {
  assert.equal(isRetryable({ kind: 'service', code: 'UPSTREAM_DOWN', message: 'm', status: 503 }), true)
  assert.equal(isRetryable({ kind: 'timeout', message: 'm' }), true)
  assert.equal(isRetryable({ kind: 'crashed', message: 'm' }), true)
  for (const status of [400, 401, 403, 404, 409, 500, 502]) {
    assert.equal(isRetryable({ kind: 'service', code: 'X', message: 'm', status }), false, String(status))
  }
  assert.equal(isRetryable({ kind: 'unknown', message: 'boom' }), false)
  assert.equal(isRetryable({ kind: 'import', message: 'm' }), false)
  assert.equal(isRetryable({ kind: 'invalid_return', message: 'm' }), false)
})

test('a kept error message is cut at 1,000 characters', () => {
  assert.deepEqual(boundedError('X', 'short'), { code: 'X', message: 'short' })
  const long = boundedError('X', 'y'.repeat(5000))
  assert.equal(long.message.length, 1000)
  assert.ok(long.message.endsWith('…'))
})
