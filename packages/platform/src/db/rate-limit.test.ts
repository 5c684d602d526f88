import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { ManualClock } from '../lib/clock.ts'
import { sha256Hex } from '../lib/crypto.ts'
import { ServiceError, toErrorBody } from '../lib/errors.ts'
import { createRateLimiter, rateLimited, type RateRule } from './rate-limit.ts'

describe(`fixed-window rate limiting in the database (${backend})`, () => {
  let t: TestDb
  let clock: ManualClock

  before(async () => {
    t = await createTestDb()
  })
  after(() => t.cleanup())
  beforeEach(async () => {
    await t.db.query('delete from platform.rate_limits')
    clock = new ManualClock('2026-01-01T00:00:00Z')
  })

  const signIn: RateRule = { name: 'sign-in:address', limit: 3, windowSeconds: 60 }
  const limiter = () => createRateLimiter({ db: t.db, clock })

  test('hits up to the limit are allowed and the one after is refused', async () => {
    const rl = limiter()
    const results = []
    for (let i = 0; i < 4; i++) results.push(await rl.hit(signIn, 'ada@example.test'))
    assert.deepEqual(
      results.map((r) => [r.allowed, r.remaining]),
      [[true, 2], [true, 1], [true, 0], [false, 0]],
    )
    assert.deepEqual(results.slice(0, 3).map((r) => r.retryAfterSeconds), [0, 0, 0])
  })

  test('a refused hit says how many seconds remain in the window', async () => {
    const rl = limiter()
    clock.set('2026-01-01T00:00:10Z')
    for (let i = 0; i < 3; i++) await rl.hit(signIn, 'ada@example.test')
    assert.equal((await rl.hit(signIn, 'ada@example.test')).retryAfterSeconds, 50)
    clock.set('2026-01-01T00:00:59.600Z')
    assert.equal((await rl.hit(signIn, 'ada@example.test')).retryAfterSeconds, 1)
  })

  test('a new window starts the count again', async () => {
    const rl = limiter()
    for (let i = 0; i < 4; i++) await rl.hit(signIn, 'ada@example.test')
    assert.equal((await rl.hit(signIn, 'ada@example.test')).allowed, false)
    clock.advance(60_000)
    const next = await rl.hit(signIn, 'ada@example.test')
    assert.deepEqual(next, { allowed: true, remaining: 2, retryAfterSeconds: 0 })
  })

  test('different keys have separate counts', async () => {
    const rl = limiter()
    for (let i = 0; i < 4; i++) await rl.hit(signIn, 'ada@example.test')
    assert.equal((await rl.hit(signIn, 'ada@example.test')).allowed, false)
    assert.deepEqual(await rl.hit(signIn, 'bob@example.test'), {
      allowed: true,
      remaining: 2,
      retryAfterSeconds: 0,
    })
  })

  test('different rules over the same key have separate counts', async () => {
    const rl = limiter()
    const perClient: RateRule = { name: 'sign-in:client', limit: 3, windowSeconds: 60 }
    for (let i = 0; i < 4; i++) await rl.hit(signIn, '203.0.113.7')
    assert.equal((await rl.hit(signIn, '203.0.113.7')).allowed, false)
    assert.equal((await rl.hit(perClient, '203.0.113.7')).remaining, 2)
  })

  test('of 20 concurrent hits against a limit of 10, exactly 10 are allowed', async () => {
    const rl = limiter()
    const rule: RateRule = { name: 'password:address', limit: 10, windowSeconds: 300 }
    const results = await Promise.all(
      Array.from({ length: 20 }, () => rl.hit(rule, 'ada@example.test')),
    )
    assert.equal(results.filter((r) => r.allowed).length, 10)
    const [row] = await t.db.query<{ hits: number }>('select hits from platform.rate_limits')
    assert.equal(row?.hits, 20)
  })

  test('keys are stored as SHA-256 hashes, never in clear', async () => {
    await limiter().hit(signIn, 'ada@example.test')
    const rows = await t.db.query<{ bucket: string }>('select bucket from platform.rate_limits')
    assert.deepEqual(
      rows.map((r) => r.bucket),
      [`sign-in:address:${sha256Hex('ada@example.test')}`],
    )
    const dump = JSON.stringify(await t.db.query('select * from platform.rate_limits'))
    assert.ok(!dump.includes('ada@example.test'))
    assert.ok(!dump.includes('ada'))
  })

  test('purgeExpired removes windows that started over a day ago and keeps the rest', async () => {
    const rl = limiter()
    const hourly: RateRule = { name: 'sign-in:client', limit: 5, windowSeconds: 3600 }
    await rl.hit(hourly, 'old') // window 2026-01-01T00:00
    clock.set('2026-01-01T23:00:00Z')
    await rl.hit(hourly, 'recent') // window 2026-01-01T23:00
    clock.set('2026-01-02T12:00:00Z')
    await rl.hit(hourly, 'current') // window 2026-01-02T12:00

    assert.equal(await rl.purgeExpired(), 1)
    const rows = await t.db.query<{ bucket: string }>(
      'select bucket from platform.rate_limits order by window_start',
    )
    assert.deepEqual(
      rows.map((r) => r.bucket),
      [`sign-in:client:${sha256Hex('recent')}`, `sign-in:client:${sha256Hex('current')}`],
    )
    assert.equal(await rl.purgeExpired(), 0)
  })

  test('a rule with a window longer than a day or a non-positive limit is refused', async () => {
    const rl = limiter()
    await assert.rejects(rl.hit({ name: 'x', limit: 1, windowSeconds: 86_401 }, 'k'), RangeError)
    await assert.rejects(rl.hit({ name: 'x', limit: 0, windowSeconds: 60 }, 'k'), RangeError)
    await assert.rejects(rl.hit({ name: 'x', limit: 1, windowSeconds: 0.5 }, 'k'), RangeError)
  })

  test('rateLimited renders as 429 RATE_LIMITED carrying the seconds to wait', () => {
    const error = rateLimited(42)
    assert.ok(error instanceof ServiceError)
    assert.deepEqual(toErrorBody(error), {
      status: 429,
      body: {
        error: {
          code: 'RATE_LIMITED',
          message: 'Too many attempts; try again in 42 seconds',
          details: { retryAfterSeconds: 42 },
        },
      },
    })
    assert.equal(rateLimited(1).message, 'Too many attempts; try again in 1 second')
  })
})
