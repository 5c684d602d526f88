// Which failures earn another attempt, how much of an error a job keeps, and the clock check at start.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startHarness } from '../../test/harness.ts'
import { silentLogger } from '../lib/logger.ts'
import { attemptNotSpent } from '../functions/index.ts'
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

test('an attempt is given back uncounted when its worker was killed for another timeout, or its invocation never started', () => {
  const notStarted = { kind: 'timeout' as const, message: 'the invocation waited 1000 ms for a free worker', reason: 'not_started' as const }
  assert.equal(attemptNotSpent(notStarted), true)
  assert.equal(attemptNotSpent({ kind: 'timeout', message: 'the Function did not finish within 1000 ms' }), false, 'a timeout of a started invocation counts')
  assert.equal(attemptNotSpent({ kind: 'crashed', message: 'm', reason: 'worker_replaced_for_timeout_of_another_invocation' }), true)
  assert.equal(attemptNotSpent({ kind: 'crashed', message: 'm', reason: 'memory_exceeded' }), false)
  assert.equal(attemptNotSpent({ kind: 'crashed', message: 'm' }), false)
})

test('a kept error message is cut at 1,000 characters', () => {
  assert.deepEqual(boundedError('X', 'short'), { code: 'X', message: 'short' })
  const long = boundedError('X', 'y'.repeat(5000))
  assert.equal(long.message.length, 1000)
  assert.ok(long.message.endsWith('…'))
  assert.equal(boundedError('X', 'a\u0000b').message, 'a\ufffdb', 'U+0000, which jsonb cannot store, is replaced')
})

test("a process whose clock is off the database's by more than 10 s says so at start (leases need one clock)", async () => {
  const warnings: { message: string; fields: unknown }[] = []
  const logger = { ...silentLogger, warn: (message: string, fields?: unknown) => void warnings.push({ message, fields }) }
  const h = await startHarness(undefined, { logger })
  try {
    h.clock.set(new Date(Date.now() + 60 * 60 * 1000).toISOString())
    await h.platform.jobs.start()
    for (let waited = 0; warnings.length === 0 && waited < 500; waited += 1) await new Promise((resolve) => setTimeout(resolve, 10))
    const warning = warnings.find((w) => w.message.includes('clock'))
    assert.ok(warning, 'warned')
    const skewMs = (warning.fields as { skewMs: number }).skewMs
    assert.ok(Math.abs(skewMs - 3_600_000) < 60_000, String(skewMs))
  } finally {
    await h.platform.jobs.stop()
    await h.close()
  }
})
