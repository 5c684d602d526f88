import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { openPostgres } from './postgres.ts'
import type { Db, LoginPool } from './db.ts'

/**
 * A login pool of `max` connections as the URL's own user (the test server trusts it), on a
 * clock that moves only when the test says (`clock.ms`), so the stall bound is the test's.
 */
function loginPoolOf(db: Db, max: number, clock = { ms: 0 }): LoginPool {
  const url = new URL(process.env.DATABASE_URL!)
  return db.openLoginPool!({
    user: decodeURIComponent(url.username), password: decodeURIComponent(url.password), max,
    idleSeconds: 60, searchPath: 'public', maxLifetimeSeconds: 60, connectTimeoutSeconds: 5,
    now: () => clock.ms,
  })
}

const pidOf = async (pool: LoginPool, text = 'select pg_backend_pid() as pid'): Promise<number> =>
  ((await pool.query<{ pid: number }>(text, []))[0]!).pid
/** The next turn of the event loop. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)))

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

  test('a login pool keeps to one connection while it keeps up (at most 16 statements in flight, none older than 10 ms), then takes the least busy: a slow statement holds up only what was sent in its first 10 ms', { skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL' }, async () => {
    const db = openPostgres({ url: process.env.DATABASE_URL!, maxConnections: 1 })
    const clock = { ms: 0 }
    const pool = loginPoolOf(db, 4, clock)
    try {
      // 20 statements at once: the first 16 on one connection, the other 4 on a second.
      const pids = await Promise.all(Array.from({ length: 20 }, () => pidOf(pool)))
      assert.equal(new Set(pids.slice(0, 16)).size, 1)
      assert.equal(new Set(pids.slice(16)).size, 1)
      assert.notEqual(pids[0], pids[16])

      // One after another: all on one connection.
      const sequential: number[] = []
      for (let i = 0; i < 5; i++) sequential.push(await pidOf(pool))
      assert.equal(new Set(sequential).size, 1)

      // A slow statement: one sent with it joins it; one sent once it has run past the bound
      // (on the test's clock) goes to another connection and is answered while the slow one still runs.
      let slowDone = false
      const slow = pidOf(pool, 'select pg_backend_pid() as pid from pg_sleep(1)').finally(() => { slowDone = true })
      const joined = pidOf(pool)
      clock.ms += 50
      const quick = await pidOf(pool)
      assert.equal(slowDone, false, 'the later statement was answered while the slow one still ran')
      const slowPid = await slow
      assert.notEqual(quick, slowPid)
      assert.equal(await joined, slowPid, 'the statement sent with the slow one went on its connection')
    } finally {
      await pool.end(1)
      await db.close()
    }
  })

  test('a login pool\'s transaction keeps its connection to itself: statements sent meanwhile run elsewhere, even behind a busy connection', { skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL' }, async () => {
    const db = openPostgres({ url: process.env.DATABASE_URL!, maxConnections: 1 })
    const clock = { ms: 0 }
    const pool = loginPoolOf(db, 2, clock)
    try {
      let release!: () => void
      const held = new Promise<void>((resolve) => { release = resolve })
      let inside = 0
      const tx = pool.transaction(async (t) => {
        inside = ((await t.query<{ pid: number }>('select pg_backend_pid() as pid'))[0]!).pid
        await held
        return ((await t.query<{ pid: number }>('select pg_backend_pid() as pid'))[0]!).pid
      })
      while (inside === 0) await nextTurn()
      // The other connection busy too (one statement in flight each): the next statement still
      // goes behind the busy statement, never into the transaction's connection.
      const slow = pidOf(pool, 'select pg_backend_pid() as pid from pg_sleep(0.2)')
      await nextTurn()
      const queued = pidOf(pool)
      const first = await Promise.race([queued.then(() => 'answered'), new Promise((resolve) => setTimeout(resolve, 5000, 'still waiting'))])
      assert.equal(first, 'answered', 'a statement sent during the transaction is answered before it ends')
      const other = await slow
      assert.equal(await queued, other)
      assert.notEqual(other, inside)
      release()
      assert.equal(await tx, inside)
      // Its connection takes statements again: with the other one stalled, the next go to it.
      const busy = pidOf(pool, 'select pg_backend_pid() as pid from pg_sleep(0.3)')
      clock.ms += 50
      const next = await pidOf(pool)
      assert.deepEqual(new Set([await busy, next]), new Set([inside, other]))
    } finally {
      await pool.end(1)
      await db.close()
    }
  })
})
