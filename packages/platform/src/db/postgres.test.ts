import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { openPostgres } from './postgres.ts'

describe('PostgreSQL connections', () => {
  test('a statement past the configured timeout is cancelled, even after app SQL resets settings', { skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL (PGlite has no statement timeout)' }, async () => {
    const db = openPostgres({ url: process.env.DATABASE_URL!, maxConnections: 1, statementTimeoutMs: 300 })
    try {
      await db.query('reset all')
      await assert.rejects(db.query('select pg_sleep(2)'), /statement timeout/)
      const [row] = await db.query<{ ok: number }>('select 1 as ok')
      assert.equal(row!.ok, 1)
    } finally {
      await db.close()
    }
  })
})
