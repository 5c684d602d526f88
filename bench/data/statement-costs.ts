/**
 * `npx tsx bench/data/statement-costs.ts`: what each piece of a `/rest/v1` primary-key read
 * costs PostgreSQL, measured piece by piece (a profiling aid for bench:data, not part of it).
 * Each row is one call shape sent through a driver at 10 connections (1 s warm-up, 4 s
 * measured), with the CPU time the PostgreSQL processes spent per call. The same bench app
 * as bench:data; a throwaway PostgreSQL unless DATABASE_URL is set (it must be local for the
 * CPU column). Also checks that a read-only transaction can be requested from inside one
 * statement, which would let reads drop the explicit transaction.
 */
import postgres from 'postgres'
import { ident } from '../../packages/platform/src/db/db.ts'
import { openPostgres } from '../../packages/platform/src/db/postgres.ts'
import { findNamespace, runAsRole } from '../../packages/platform/src/namespaces/namespaces.ts'
import { findAppBySlug } from '../../packages/platform/src/apps/apps.ts'
import { verifyAppToken } from '../../packages/platform/src/identity/app-tokens/app-tokens.ts'
import { systemClock } from '../../packages/platform/src/lib/clock.ts'
import { loadSchema } from '../../packages/platform/src/data-api/schema.ts'
import { parseReadRequest } from '../../packages/platform/src/data-api/query-parser.ts'
import { parsePrefer } from '../../packages/platform/src/data-api/query-prefer.ts'
import { buildRead, statementSql } from '../../packages/platform/src/data-api/sql.ts'
import { startChild } from './child.ts'
import { perRequest, postmasterOf, readCpu, type CpuReading } from './cpu.ts'
import { SLUG } from './fixture.ts'
import { loadCalls, summarise } from './load.ts'
import { createDatabase, startServer } from './postgres.ts'

const ROWS = 100_000
const OPTIONS = { connections: 10, warmupSeconds: 1, seconds: 4 }
const randomId = () => 1 + Math.floor(Math.random() * ROWS)

const server = startServer(process.env.DATABASE_URL)
try {
  const database = await createDatabase(server.adminUrl)
  try {
    const child = await startChild({ storage: 'postgres', databaseUrl: database.url, rows: ROWS, categories: 100 })
    const { fixture } = child
    const driver = postgres(database.url, { max: 10, onnotice: () => {} })
    const db = openPostgres({ url: database.url, maxConnections: 10 })
    try {
      const [backend] = await driver<{ pid: number }[]>`select pg_backend_pid() as pid`
      const postmaster = backend ? postmasterOf(backend.pid) : null
      const namespace = await findNamespace(db, fixture.appId)
      if (!namespace) throw new Error('no namespace for the bench app')
      const schema = await loadSchema(db, fixture.schemaName)
      const claims = { sub: fixture.ownerId, role: 'authenticated', email: fixture.ownerEmail, aud: fixture.appId }
      const statement = () => buildRead(schema, parseReadRequest('items', new URLSearchParams(`id=eq.${randomId()}`)), parsePrefer(null))
      const table = `${ident(fixture.schemaName)}.items`
      // The generated statement reads its values from `$1`, a jsonb array; sent directly, the
      // parameter needs its type spelled out.
      const direct = (sql: string) => sql.replaceAll('$1', '($1::text::jsonb)')
      const lean = `select json_build_object('body', coalesce(json_agg(_s), '[]'::json), 'count', null, 'rows', count(*))
        from (select * from ${table} as "t0" where "t0"."id" = ($1->>0)::bigint) _s`

      const calls: [string, () => Promise<unknown>][] = [
        ['driver: prepared primary-key select', () => driver.unsafe(`select * from ${table} where id = $1`, [randomId()], { prepare: true })],
        ['findAppBySlug', () => findAppBySlug(db, SLUG)],
        ['verifyAppToken (select + last_used_at update)', () => verifyAppToken(db, systemClock, fixture.appToken)],
        ['runAsRole: the API statement, as deployed', () => {
          const st = statement()
          return runAsRole(db, { namespace, role: 'user' }, statementSql(st), { claims, params: st.params })
        }],
        ['runAsRole in BEGIN; SET TRANSACTION READ ONLY; ...; COMMIT', () => db.transaction(async (tx) => {
          await tx.query('set transaction read only')
          const st = statement()
          return runAsRole(tx, { namespace, role: 'user' }, statementSql(st), { claims, params: st.params })
        })],
        ['runAsRole: one-aggregate envelope instead', () =>
          runAsRole(db, { namespace, role: 'user' }, lean, { claims, params: [String(randomId())] })],
        ['API statement, no wrapper, planned each time', () => {
          const st = statement()
          return driver.unsafe(direct(statementSql(st)), [JSON.stringify(st.params)], { prepare: false })
        }],
        ['API statement, no wrapper, prepared (plan cached)', () => {
          const st = statement()
          return driver.unsafe(direct(statementSql(st)), [JSON.stringify(st.params)], { prepare: true })
        }],
      ]
      console.log(`| call | rps | p50 ms | PostgreSQL CPU µs/call | client CPU µs/call |\n| --- | ---: | ---: | ---: | ---: |`)
      for (const [name, call] of calls) {
        await call()
        const mark: { before?: CpuReading } = {}
        const sample = await loadCalls(call, OPTIONS, () => { mark.before = readCpu(null, postmaster) })
        const after = readCpu(null, postmaster)
        const cpu = perRequest(mark.before ?? after, after, sample.count)
        const s = summarise(sample)
        console.log(`| ${name} | ${Math.round(s.rps)} | ${s.p50.toFixed(2)} | ${cpu.postgres === null ? '-' : Math.round(cpu.postgres)} | ${Math.round(cpu.client)} |`)
      }

      // Can a read-only transaction be requested from inside the statement itself?
      await driver.unsafe(`create function platform_exec.bench_read_only_probe() returns void language plpgsql as $$
        begin perform pg_catalog.set_config('transaction_read_only', 'on', true);
        insert into ${table} (category, name, price) values ('probe', 'probe', 0); end $$`)
      const probe = await driver.unsafe('select platform_exec.bench_read_only_probe()').then(
        () => 'the insert ran: set_config does not make the statement read-only',
        (error: { code?: string; message?: string }) => `refused (${error.code}: ${error.message})`)
      console.log(`\nset_config('transaction_read_only', 'on', true) inside one statement, then an INSERT: ${probe}`)
    } finally {
      await driver.end({ timeout: 5 })
      await db.close()
      await child.stop()
    }
  } finally {
    await database.drop()
  }
} finally {
  server.stop()
}
