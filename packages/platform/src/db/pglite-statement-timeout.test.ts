/**
 * The statement timeout of app SQL on PGlite, where Postgres runs in the platform's own thread
 * and its `statement_timeout` never fires: sleeps, loops and long scans are cancelled with
 * PostgreSQL's error, a statement that catches its cancel is ended for good, and the database
 * comes back with its data. These open PGlite themselves, whatever DATABASE_URL says.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { PGlite } from '@electric-sql/pglite'
import { capturedLog } from '../../test/captured-log.ts'
import { eventually } from '../../test/eventually.ts'
import type { Logger } from '../lib/logger.ts'
import { openPglite, type PgliteDb } from './pglite.ts'
import { statementTimeout } from './pglite-statement-timeout.ts'
import { STUBBORN_BODY } from '../../test/integration-fixture.ts'

const TIMEOUT = { code: '57014', message: 'canceling statement due to statement timeout' }
const app = { appSql: true }

const SETUP = `
create table kept (n int);
insert into kept values (1);
create function spin() returns void language plpgsql as $$ begin loop end loop; end $$;
-- Catches every cancel where it lands: only an end nothing can catch stops it.
create function stubborn() returns void language plpgsql as $$${STUBBORN_BODY}$$;
`

async function withPglite(options: { dataDir?: string; logger?: Logger; statementTimeoutMs?: number }, fn: (db: PgliteDb) => Promise<void>): Promise<void> {
  const db = await openPglite({ statementTimeoutMs: 200, cancelGraceMs: 300, ...options })
  try {
    await fn(db)
  } finally {
    await db.close()
  }
}

describe('the statement timeout of app SQL on PGlite', () => {
  test('app SQL that sleeps, loops or grinds through rows is cancelled with PostgreSQL\'s timeout error, and the session serves the next statement', async () => {
    await withPglite({}, async (db) => {
      await db.exec(SETUP)
      for (const sql of ['select pg_catalog.pg_sleep(60)', 'select spin()', 'select count(*) from generate_series(1, 1e10)']) {
        await assert.rejects(db.query(sql, [], app), TIMEOUT, sql)
        assert.deepEqual(await db.query('select n from kept'), [{ n: 1 }])
      }
      // Inside a transaction too: it rolls back, and the session is usable.
      await assert.rejects(db.transaction(async (tx) => {
        await tx.query('insert into kept values (2)')
        await tx.query('select spin()', [], app)
      }), TIMEOUT)
      assert.deepEqual(await db.query('select n from kept'), [{ n: 1 }])
      assert.equal(db.reopens(), 0, 'a cancel that is not caught needs no new backend')
    })
  })

  test('only app SQL is timed, and an error the app raises itself passes unchanged', async () => {
    await withPglite({}, async (db) => {
      // The platform's own statements (migrations, purges) run as long as they need.
      assert.deepEqual(await db.query('select pg_catalog.pg_sleep(0.6) is not distinct from null as slept'), [{ slept: false }])
    })
    // A timeout no statement here comes near, even on a loaded machine: only the app's own errors.
    await withPglite({ statementTimeoutMs: 60_000 }, async (db) => {
      await assert.rejects(db.query('select 1 / 0', [], app), { code: '22012' })
      await assert.rejects(db.query(`do $$ begin raise exception 'mine' using errcode = '57014'; end $$`, [], app),
        { code: '57014', message: 'mine' })
    })
  })

  test('a cancel that arrives after its statement returned does not reach the next statement', async () => {
    const timeout = statementTimeout({ graceMs: 60_000 })
    const pg = await PGlite.create({ extensions: { timeout: timeout.extension } })
    const timer = timeout.attach(pg)
    try {
      const heap = new Int32Array(pg.Module.HEAPU8.buffer)
      const flag = (pg.Module as unknown as { _QueryCancelPending: number })._QueryCancelPending >> 2
      // Armed, and no statement running: the watchdog raises Postgres' cancel flag regardless.
      timer.arm(1)
      await eventually(async () => Atomics.load(heap, flag) === 1, 'the watchdog raises the cancel flag')
      assert.equal(timer.disarm(), 'cancelled')
      assert.equal(Atomics.load(heap, flag), 0)
      assert.deepEqual((await pg.query('select 1 as one')).rows, [{ one: 1 }])
    } finally {
      await timer.close()
      await pg.close()
    }
  })

  test('a statement that catches its cancel has its backend ended; the database opens again with its data, listeners hear again, and the operator is told', async () => {
    const log = capturedLog('warn')
    await withPglite({ logger: log.logger }, async (db) => {
      await db.exec(SETUP)
      const heard: string[] = []
      await db.listen('news', (payload) => heard.push(payload), { onListen: () => heard.push('(listening again)') })
      await assert.rejects(db.query('select stubborn()', [], app), TIMEOUT)
      assert.equal(db.reopens(), 1)
      assert.equal(log.withMessage('an app statement caught its cancel past the statement timeout: the embedded database backend was ended and opened again').length, 1)
      assert.deepEqual(await db.query('select n from kept'), [{ n: 1 }])
      await db.notify('news', 'after')
      await eventually(async () => heard.includes('after'), 'a notice after the new backend reaches the listener')
      assert.deepEqual(heard, ['(listening again)', 'after'])
      // In a transaction: its writes are gone with the backend, and the next one works.
      await assert.rejects(db.transaction(async (tx) => {
        await tx.query('insert into kept values (2)')
        await tx.query('select stubborn()', [], app)
      }), TIMEOUT)
      assert.equal(db.reopens(), 2)
      await db.transaction(async (tx) => {
        await tx.query('insert into kept values (3)')
      })
      assert.deepEqual(await db.query('select n from kept order by n'), [{ n: 1 }, { n: 3 }])
    })
  })

  test('with a data directory, the data committed before an ended backend is there after it and after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-pglite-timeout-'))
    try {
      await withPglite({ dataDir }, async (db) => {
        await db.exec(SETUP)
        await assert.rejects(db.query('select stubborn()', [], app), TIMEOUT)
        assert.equal(db.reopens(), 1)
        await db.query('insert into kept values (2)')
      })
      await withPglite({ dataDir }, async (db) => {
        assert.deepEqual(await db.query('select n from kept order by n'), [{ n: 1 }, { n: 2 }])
      })
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
