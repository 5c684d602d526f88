import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Queryable } from './db.ts'
import { ManualClock } from '../lib/clock.ts'
import { createUsageStamps } from './usage-stamps.ts'

function recordingDb(): Queryable & { writes: unknown[][] } {
  const writes: unknown[][] = []
  return {
    writes,
    async query(_text, params) {
      writes.push([...(params ?? [])])
      return []
    },
    async exec() {},
  }
}

describe('last-use stamps', () => {
  test('a credential used many times in a minute is written once, then again after a minute', () => {
    const db = recordingDb()
    const clock = new ManualClock('2026-11-21T12:00:00Z')
    const stamps = createUsageStamps({ table: 'platform.owner_tokens' })
    for (let i = 0; i < 5; i++) stamps.touch(db, clock, 'token-a')
    assert.equal(db.writes.length, 1)
    stamps.touch(db, clock, 'token-b')
    assert.equal(db.writes.length, 2, 'another credential has its own stamp')
    clock.advance(59 * 1000)
    stamps.touch(db, clock, 'token-a')
    assert.equal(db.writes.length, 2)
    clock.advance(2000)
    stamps.touch(db, clock, 'token-a')
    assert.equal(db.writes.length, 3)
    assert.deepEqual(db.writes[2], ['token-a', clock.now()])
  })

  test('a failed write is reported, never thrown into the request', async () => {
    const errors: string[] = []
    const stamps = createUsageStamps({ table: 'platform.owner_tokens', onError: (e) => errors.push(e.message) })
    const failing: Queryable = { query: async () => { throw new Error('database away') }, exec: async () => {} }
    stamps.touch(failing, new ManualClock(), 'token-a')
    await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(errors, ['database away'])
  })
})
