/**
 * What each statement of a data API request costs on PGlite, one statement shape at a time,
 * in this process (no HTTP): the platform is set up on the adapter (`openPglite`: shared
 * WebAssembly memory, the statement timeout, one call into Postgres per statement), one real
 * primary-key read is sent through `platform.fetch` to capture the exact statements it runs,
 * and then each statement, and its parts taken apart (the caller check, the wrapper, the app
 * statement), is run on the adapter and through PGlite's own `pg.query` on two instances
 * loaded from a dump of the same data (one on shared memory, one plain), in alternating
 * rounds. Figures are CPU time of this process per statement, which a loaded machine
 * disturbs less than wall time. `npx tsx bench/data/pglite-statements.ts`; BENCH_ROWS
 * (default 100,000), BENCH_ITERATIONS per round (default 1,000).
 */
import { randomBytes } from 'node:crypto'
import { PGlite, types } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import type { Db, Queryable, Row } from '../../packages/platform/src/db/db.ts'
import { migratePlatform } from '../../packages/platform/src/db/migrate.ts'
import { openPglite } from '../../packages/platform/src/db/pglite.ts'
import { systemClock } from '../../packages/platform/src/lib/clock.ts'
import { newSecret } from '../../packages/platform/src/lib/crypto.ts'
import { silentLogger } from '../../packages/platform/src/lib/logger.ts'
import { createPlatform } from '../../packages/platform/src/platform.ts'
import { statementTimeout } from '../../packages/platform/src/db/pglite-statement-timeout.ts'
import { prepareFixture } from './fixture.ts'

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000)
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 1_000)
const ROUNDS = 3

interface Captured {
  text: string
  params: readonly unknown[]
  appSql: boolean
}

/** Records every statement sent while `capturing` is on. */
function capturingDb(db: Db): { db: Db; start(): void; stop(): Captured[] } {
  let captured: Captured[] | null = null
  const wrap = (target: Queryable): Queryable => ({
    query: (text, params, options) => {
      captured?.push({ text, params: params ?? [], appSql: options?.appSql ?? false })
      return target.query(text, params, options)
    },
    exec: (script) => target.exec(script),
  })
  return {
    db: {
      ...db,
      ...wrap(db),
      read: (text, params) => {
        captured?.push({ text, params: params ?? [], appSql: false })
        return db.read(text, params)
      },
      transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    },
    start: () => {
      captured = []
    },
    stop: () => {
      const out = captured ?? []
      captured = null
      return out
    },
  }
}

// Seeding 100,000 rows through an app migration is app SQL: a loaded machine can take past the 5 s default.
const adapter = await openPglite({ statementTimeoutMs: 600_000 })
await migratePlatform(adapter)
const capture = capturingDb(adapter)
const operatorKey = newSecret('svc_operator_')
const port = 9
const platform = createPlatform({
  config: { baseUrl: new URL(`http://localhost:${port}`), production: true, smtpUrl: null, mailFrom: 'Bench <no-reply@localhost>', registration: false },
  db: capture.db,
  clock: systemClock,
  logger: silentLogger,
  operatorKey,
  masterKey: new Uint8Array(randomBytes(32)),
})
const fixture = await prepareFixture(
  { platform, db: capture.db, clock: systemClock, port, operatorKey, masterKey: new Uint8Array(32) },
  { rows: ROWS, categories: 100 },
)
const pkRead = () => platform.fetch(new Request(`http://${fixture.host}/rest/v1/items?id=eq.${1 + Math.floor(Math.random() * ROWS)}`, {
  headers: { authorization: `Bearer ${fixture.appToken}`, host: fixture.host },
}))
for (let i = 0; i < 50; i++) await (await pkRead()).text()
capture.start()
const answer = await pkRead()
const body = await answer.text()
const statements = capture.stop()
if (answer.status !== 200) throw new Error(`pk read: ${answer.status} ${body}`)
console.log(`a primary-key read with an app token runs ${statements.length} statement(s):`)
for (const s of statements) {
  console.log(`  ${s.appSql ? 'app SQL ' : 'platform'}  ${s.text.replace(/\s+/g, ' ')}`)
  for (const p of s.params) if (typeof p === 'string' && p.length > 40) console.log(`      parameter: ${p.replace(/\s+/g, ' ')}`)
}
const wrapped = statements.find((s) => s.text.includes('platform_exec'))

const dump = await adapter.dump()
const parsers = { [types.INT8]: (v: string) => Number(v) }
const plain = await PGlite.create({ loadDataDir: dump, extensions: { vector }, parsers })
const shared = await PGlite.create({ loadDataDir: dump, extensions: { vector, timeout: statementTimeout({ graceMs: 1000 }).extension }, parsers })

const withId = (params: readonly unknown[]) => {
  const id = 1 + Math.floor(Math.random() * ROWS)
  return params.map((p) => (typeof p === 'string' && p.startsWith('[') ? JSON.stringify([id]) : p))
}
const schema = fixture.schemaName
const shapes: { name: string; text: string; params: () => readonly unknown[]; appSql?: boolean }[] = [
  { name: 'select 1', text: 'select 1', params: () => [] },
  { name: 'pk select, superuser, no RLS', text: `select id, category, name, price, created_by, created_at from "${schema}".items where id = $1`, params: () => [1 + Math.floor(Math.random() * ROWS)] },
  ...statements.map((s, i) => ({ name: `request statement ${i + 1}`, text: s.text, params: () => withId(s.params), appSql: s.appSql })),
  ...parts(),
]

/** The request's statement taken apart: the caller check, the wrapper, the app statement, each alone. */
function parts(): typeof shapes {
  if (!wrapped) return []
  const call = /(platform_exec\."[^"]+")\([^,]+, \$(\d+), \$(\d+)::jsonb\)/.exec(wrapped.text)
  if (!call) return []
  const [, fn, innerAt, paramsAt] = call
  const inner = wrapped.params[Number(innerAt) - 1] as string
  const params = wrapped.params[Number(paramsAt) - 1]
  const out: typeof shapes = []
  // The caller check: the statement's first CTE, when it has one (`with g as materialized (...)`).
  const gate = /^\s*with\s+g\s+as\s+materialized\s+\((select\s.*?)\)\s+select\s+platform_exec/s.exec(wrapped.text)?.[1]
  if (gate) {
    const used = Math.max(...[...gate.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))
    out.push({ name: 'caller check alone (its first CTE)', text: gate, params: () => wrapped.params.slice(0, used) })
  }
  const claims = JSON.stringify({ sub: fixture.ownerId, role: 'authenticated' })
  out.push({ name: 'wrapper alone, around select null', text: `select ${fn}($1, $2, $3::jsonb) as result`, params: () => [claims, 'select null::json', '[]'], appSql: true })
  out.push({ name: 'wrapper around the app statement, no caller check', text: `select ${fn}($1, $2, $3::jsonb) as result`, params: () => withId([claims, inner, params]), appSql: true })
  out.push({ name: 'app statement alone, superuser', text: inner, params: () => withId([params]) })
  return out
}

type Runner = (text: string, params: readonly unknown[], appSql: boolean) => Promise<unknown>
const targets: { name: string; run: Runner }[] = [
  { name: 'adapter: one call (shared memory, timer, queue)', run: (text, params, appSql) => adapter.query<Row>(text, params, { appSql }) },
  { name: 'pg.query on shared memory', run: (text, params) => shared.query(text, params as unknown[]) },
  { name: 'pg.query, plain PGlite', run: (text, params) => plain.query(text, params as unknown[]) },
]

const results = new Map<string, number[]>()
for (let round = 0; round < ROUNDS; round++) {
  for (const shape of shapes) {
    for (const target of targets) {
      for (let i = 0; i < 100; i++) await target.run(shape.text, shape.params(), shape.appSql ?? false)
      const cpu0 = process.cpuUsage()
      for (let i = 0; i < ITERATIONS; i++) await target.run(shape.text, shape.params(), shape.appSql ?? false)
      const cpu = process.cpuUsage(cpu0)
      const us = (cpu.user + cpu.system) / ITERATIONS
      const key = `${shape.name}\t${target.name}`
      results.set(key, [...(results.get(key) ?? []), us])
    }
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
console.log(`\nµs of this process's CPU per statement, median of ${ROUNDS} rounds of ${ITERATIONS}:`)
console.log(`| statement | ${targets.map((t) => t.name).join(' | ')} |`)
console.log(`| --- | ${targets.map(() => '---:').join(' | ')} |`)
for (const shape of shapes) {
  console.log(`| ${shape.name} | ${targets.map((t) => median(results.get(`${shape.name}\t${t.name}`)!).toFixed(0)).join(' | ')} |`)
}
await plain.close()
await shared.close()
await platform.close?.()
await adapter.close()
process.exit(0)
