// Tests for the error helpers: each helper's status, code, retryability and JSON form,
// validation of codes, messages and details, and recognition across module copies.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ServiceError, errors, isServiceError } from './index.ts'

const HELPERS = [
  ['badRequest', 400, false],
  ['unauthorized', 401, false],
  ['forbidden', 403, false],
  ['notFound', 404, false],
  ['conflict', 409, false],
  ['unavailable', 503, true],
] as const

test('each helper builds a ServiceError with its status, and only unavailable is retryable', () => {
  for (const [name, status, retryable] of HELPERS) {
    const error = errors[name]('SOME_CODE_2', `the ${name} message`)
    assert.ok(error instanceof ServiceError, name)
    assert.ok(error instanceof Error, name)
    assert.equal(error.name, 'ServiceError')
    assert.equal(error.code, 'SOME_CODE_2')
    assert.equal(error.message, `the ${name} message`)
    assert.equal(error.status, status, name)
    assert.equal(error.retryable, retryable, name)
    assert.equal(error.details, undefined)
    assert.equal(error.__serviceError, true)
  }
  assert.deepEqual(Object.keys(errors).sort(), ['badRequest', 'conflict', 'forbidden', 'notFound', 'unauthorized', 'unavailable'])
  assert.equal(Object.isFrozen(errors), true)
})

test('toJSON gives code, message, status, and details only when there are some', () => {
  for (const [name, status] of HELPERS) {
    assert.deepEqual(errors[name]('A', 'm').toJSON(), { code: 'A', message: 'm', status })
    const details = { connectUrl: 'https://example.test/connect', fields: ['x'] }
    assert.deepEqual(errors[name]('A', 'm', details).toJSON(), { code: 'A', message: 'm', status, details })
  }
  const error = errors.notFound('ITEM_NOT_FOUND', 'The task no longer exists', { id: 't1' })
  assert.equal(
    JSON.stringify(error),
    '{"code":"ITEM_NOT_FOUND","message":"The task no longer exists","status":404,"details":{"id":"t1"}}',
  )
})

test('codes must be UPPER_SNAKE_CASE starting with a letter', () => {
  for (const code of ['ITEM_NOT_FOUND', 'A', 'E2E_FAILED', 'X_']) {
    assert.equal(errors.badRequest(code, 'm').code, code)
  }
  for (const code of ['', 'item_not_found', 'Item', '_LEADING', '1ST', 'HAS-DASH', 'HAS SPACE', ' A', 'A\n']) {
    assert.throws(() => errors.badRequest(code, 'm'), /UPPER_SNAKE_CASE/, JSON.stringify(code))
  }
  assert.throws(() => errors.badRequest(42 as never, 'm'), TypeError)
})

test('messages must be non-empty strings', () => {
  for (const message of ['', '   ', undefined, 7]) {
    assert.throws(() => errors.conflict('CODE', message as never), /non-empty string/, String(message))
  }
})

test('details must be a plain object', () => {
  assert.throws(() => errors.forbidden('CODE', 'm', 'text' as never), /plain object/)
  assert.throws(() => errors.forbidden('CODE', 'm', ['a'] as never), /plain object/)
  assert.throws(() => errors.forbidden('CODE', 'm', new Date() as never), /plain object/)
  assert.throws(() => errors.forbidden('CODE', 'm', null as never), /plain object/)
  const bare = Object.create(null) as Record<string, unknown>
  assert.equal(errors.forbidden('CODE', 'm', bare).details, bare)
})

test('the constructor takes any HTTP error status, keeps the cause, and retries only 503', () => {
  const cause = new Error('socket closed')
  const error = new ServiceError('INTEGRATION_PROVIDER_FAILED', 'The provider failed', { status: 502, cause })
  assert.equal(error.status, 502)
  assert.equal(error.cause, cause)
  assert.equal(error.retryable, false)
  assert.equal(new ServiceError('SEARCH_UNAVAILABLE', 'Try again', { status: 503 }).retryable, true)
  for (const status of [200, 399, 600, 404.5, Number.NaN]) {
    assert.throws(() => new ServiceError('CODE', 'm', { status }), /HTTP error status/, String(status))
  }
  assert.throws(() => new ServiceError('CODE', 'm', undefined as never), /needs options with a status/)
})

test('isServiceError recognises errors from another copy of the SDK by brand and fields', () => {
  assert.equal(isServiceError(errors.unavailable('DOWN', 'down')), true)
  // What another module instance's ServiceError looks like: not our class, same brand.
  const foreign = Object.assign(new Error('gone'), { name: 'ServiceError', __serviceError: true, code: 'GONE', status: 404 })
  assert.equal(foreign instanceof ServiceError, false)
  assert.equal(isServiceError(foreign), true)
  assert.equal(isServiceError(new Error('plain')), false)
  assert.equal(isServiceError({ name: 'ServiceError', code: 'X', message: 'm', status: 400 }), false)
  assert.equal(isServiceError({ __serviceError: true, name: 'ServiceError', code: 'X', message: 'm' }), false)
  assert.equal(isServiceError(null), false)
  assert.equal(isServiceError('ServiceError'), false)
})
