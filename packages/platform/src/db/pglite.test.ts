/**
 * Values and errors through the storage adapters. On PGlite a statement goes to Postgres in
 * one call (pglite.ts, `oneCall`), choosing each parameter's text itself instead of leaving
 * it to `pg.query`: these tests hold it to what `pg.query` and the PostgreSQL driver give.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { PGlite, types } from '@electric-sql/pglite'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'

/** Rows as plain objects in a plain array (the PostgreSQL driver's result is an Array subclass). */
async function rows(t: TestDb, sql: string, params: unknown[] = []): Promise<unknown[]> {
  return [...await t.db.query(sql, params)]
}

/** [statement, parameter, the value in column v]. */
const CASES: [string, unknown, unknown][] = [
  ['select $1::text as v', 'héllo wörld ✓', 'héllo wörld ✓'],
  ['select $1::text as v', '', ''],
  ['select $1::int as v', 42, 42],
  ['select $1::int8 as v', 9007199254740991, 9007199254740991],
  ['select $1::int8 as v', 12n, 12],
  ['select ($1::numeric)::text as v', 1.5, '1.5'],
  ['select ($1::float8) as v', -0.25, -0.25],
  ['select $1::boolean as v', true, true],
  ['select $1::boolean as v', false, false],
  ['select $1::timestamptz as v', new Date('2026-11-25T04:05:06.789Z'), new Date('2026-11-25T04:05:06.789Z')],
  ['select pg_catalog.encode($1::bytea, \'hex\') as v', new Uint8Array([0, 1, 127, 255]), '00017fff'],
  ['select pg_catalog.encode($1::bytea, \'hex\') as v', new Uint8Array(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2), '0807'],
  ['select $1::text is null as v', null, true],
  ['select $1::jsonb as v', JSON.stringify({ a: [1, 'two'] }), { a: [1, 'two'] }],
  ['select \'b\' = any($1::text[]) as v', ['a', 'b'], true],
  ['select $1::uuid as v', '8f5d2f4e-1c2b-4a3d-9e8f-0a1b2c3d4e5f', '8f5d2f4e-1c2b-4a3d-9e8f-0a1b2c3d4e5f'],
]

describe(`statement values (${backend})`, () => {
  test('parameters of every JavaScript type the platform binds arrive as the driver sends them, and results come back parsed', async () => {
    const t = await createTestDb()
    try {
      for (const [sql, param, expected] of CASES) {
        assert.deepEqual(await rows(t, sql, [param]), [{ v: expected }], `${sql} with ${String(param)}`)
      }
    } finally {
      await t.cleanup()
    }
  })

  test('several parameters, repeated ones, none, and statements that return no rows', async () => {
    const t = await createTestDb()
    try {
      assert.deepEqual(await rows(t, 'select $1::int + $2::int as sum, $1::int as again, $3::text as name', [2, 3, 'x']), [{ sum: 5, again: 2, name: 'x' }])
      assert.deepEqual(await rows(t, 'select 1 as one'), [{ one: 1 }])
      assert.deepEqual(await rows(t, 'select 1 where false'), [])
      assert.deepEqual(await rows(t, 'select g as n from pg_catalog.generate_series(1, 3) as g'), [{ n: 1 }, { n: 2 }, { n: 3 }])
    } finally {
      await t.cleanup()
    }
  })

  test('a failing statement rejects with its SQLSTATE and the session serves the next one, in and out of a transaction', async () => {
    const t = await createTestDb()
    try {
      await assert.rejects(t.db.query('select 1 / $1::int as v', [0]), (error: Error & { code?: string }) => error.code === '22012')
      await assert.rejects(t.db.query('select $1::int as v', ['not a number']), (error: Error & { code?: string }) => error.code === '22P02')
      await assert.rejects(t.db.query('select * from platform.no_such_table'), (error: Error & { code?: string }) => error.code === '42P01')
      assert.deepEqual(await rows(t, 'select $1::int as v', [7]), [{ v: 7 }])
      await t.db.exec('create table public.adapter_probe (id int primary key)')
      await assert.rejects(t.db.transaction(async (tx) => {
        await tx.query('insert into public.adapter_probe (id) values ($1)', [1])
        await tx.query('insert into public.adapter_probe (id) values ($1)', [1])
      }), (error: Error & { code?: string }) => error.code === '23505')
      assert.deepEqual(await rows(t, 'select count(*)::int as n from public.adapter_probe'), [{ n: 0 }])
      await t.db.transaction(async (tx) => {
        await tx.query('insert into public.adapter_probe (id) values ($1)', [2])
      })
      assert.deepEqual(await rows(t, 'select id from public.adapter_probe'), [{ id: 2 }])
      await t.db.exec('drop table public.adapter_probe')
    } finally {
      await t.cleanup()
    }
  })
})

describe('statement values: the PGlite adapter against pg.query', { skip: backend !== 'pglite' }, () => {
  test('every case gives what PGlite\'s own query gives', async () => {
    const t = await createTestDb()
    const plain = await PGlite.create({ parsers: { [types.INT8]: (value: string) => Number(value) } })
    try {
      for (const [sql, param] of CASES) {
        const ours = await t.db.query(sql, [param])
        const theirs = (await plain.query(sql, [param])).rows
        assert.deepEqual(ours, theirs, sql)
      }
    } finally {
      await plain.close()
      await t.cleanup()
    }
  })
})
