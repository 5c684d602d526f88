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

  test('platform reads are prepared statements on connections of their own; queries prepare none', { skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL' }, async () => {
    const db = openPostgres({ url: process.env.DATABASE_URL!, maxConnections: 1 })
    try {
      // (The driver sends a statement without parameters as a simple query, never prepared.)
      const text = `select name, from_sql from pg_prepared_statements where statement like $1`
      await db.read(text, ['%pg_prepared_statements where statement like%'])
      const [prepared] = await db.read<{ name: string; from_sql: boolean }>(text, ['%pg_prepared_statements where statement like%'])
      assert.ok(prepared && prepared.name !== '' && !prepared.from_sql, 'the read is a named protocol-level statement')
      const [appName] = await db.read<{ a: string }>(`select current_setting($1) as a`, ['application_name'])
      assert.equal(appName!.a, 'service-platform-reads')
      // The connections app SQL may run on (through the wrapper) hold no named statements but
      // the driver's type lookup, which it runs once when it connects and never again.
      await db.query(`select 1 as x where $1::int = 1`, [1])
      const [count] = await db.query<{ n: number }>(`select count(*)::int as n from pg_prepared_statements where statement not like '%typarray%'`)
      assert.equal(count!.n, 0)
    } finally {
      await db.close()
    }
  })

  test('platform statements asked prepared run as named statements on connections of their own, never in a transaction\'s or app SQL\'s', { skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL' }, async () => {
    const db = openPostgres({ url: process.env.DATABASE_URL!, maxConnections: 1 })
    try {
      const text = `select current_setting('application_name') as a, (select count(*)::int from pg_prepared_statements where statement like $1) as n`
      await db.query(text, ['%pg_prepared_statements where statement like%'], { platformPrepared: true })
      const [own] = await db.query<{ a: string; n: number }>(text, ['%pg_prepared_statements where statement like%'], { platformPrepared: true })
      assert.deepEqual(own, { a: 'service-platform-statements', n: 1 })
      // Without the option, and inside a transaction with it: the main connections, nothing prepared.
      const [plain] = await db.query<{ a: string; n: number }>(text, ['%pg_prepared_statements where statement like%'])
      assert.deepEqual(plain, { a: 'service-platform', n: 0 })
      const [inTx] = await db.transaction((tx) => tx.query<{ a: string; n: number }>(text, ['%pg_prepared_statements where statement like%'], { platformPrepared: true }))
      assert.deepEqual(inTx, { a: 'service-platform', n: 0 })
    } finally {
      await db.close()
    }
  })
})
