/**
 * `npx tsx bench/data/pool-size.ts`: the data API's key read with two sizes of namespace
 * login pool side by side (a profiling aid for bench:data, not part of it). Two platform
 * servers of this tree on one PostgreSQL (each with its own copy of the bench app), one with
 * POOL_A connections per login pool and one with POOL_B, and the floor (bare Hono + driver,
 * FLOOR_CONNECTIONS), measured in turn over ROUNDS rounds at 10 connections. A throwaway
 * PostgreSQL unless DATABASE_URL is set.
 *
 *   POOL_A=1 POOL_B=4 FLOOR_CONNECTIONS=10 ROUNDS=6 npx tsx bench/data/pool-size.ts
 */
import { ident } from '../../packages/platform/src/db/db.ts'
import { startChild, startFloor, type Child } from './child.ts'
import { processSeconds } from './cpu.ts'
import { alternate, httpRunner, summarise, type HttpCase } from './load.ts'
import { createDatabase, startServer, type Database } from './postgres.ts'

const ROWS = 100_000
const CONNECTIONS = 10
const poolA = Number(process.env.POOL_A ?? 1)
const poolB = Number(process.env.POOL_B ?? 4)
const floorConnections = Number(process.env.FLOOR_CONNECTIONS ?? CONNECTIONS)
const rounds = Number(process.env.ROUNDS ?? 6)
const SLICE_SECONDS = 2
const WARMUP_SECONDS = 2

const randomId = () => 1 + Math.floor(Math.random() * ROWS)

async function main(): Promise<void> {
  const server = startServer(process.env.DATABASE_URL)
  const databases: Database[] = []
  const children: Child[] = []
  try {
    for (const appPoolSize of [poolA, poolB]) {
      const database = await createDatabase(server.adminUrl)
      databases.push(database)
      children.push(await startChild({ storage: 'postgres', databaseUrl: database.url, rows: ROWS, categories: 100, appPoolSize }))
    }
    const floor = await startFloor(databases[0]!.url, `${ident(children[0]!.fixture.schemaName)}.items`, floorConnections)
    try {
      const read = (token: string): HttpCase => ({ method: 'GET', path: () => `/rest/v1/items?id=eq.${randomId()}`, headers: { authorization: `Bearer ${token}` } })
      const runners = [
        ...children.map((child) => httpRunner({ port: child.fixture.port, host: child.fixture.host }, read(child.fixture.appToken), CONNECTIONS)),
        httpRunner({ port: floor.port, host: `127.0.0.1:${floor.port}` }, { method: 'GET', path: () => `/rest/v1/items?id=eq.${randomId()}`, headers: {} }, CONNECTIONS),
      ]
      const pids = [...children.map((child) => child.pid), floor.pid]
      const before = pids.map((pid) => processSeconds(pid) ?? 0)
      const samples = await alternate(runners.map((runner) => ({ runner, warmupSeconds: WARMUP_SECONDS, sliceSeconds: SLICE_SECONDS })), rounds)
      const after = pids.map((pid) => processSeconds(pid) ?? 0)
      const summaries = samples.map(summarise)
      const names = [`API, login pool of ${poolA}`, `API, login pool of ${poolB}`, `floor, ${floorConnections} connections`]
      console.log(`\npk read, ${CONNECTIONS} connections, ${rounds} rounds of ${SLICE_SECONDS} s in turn (server CPU includes the warm-up)\n`)
      console.log('| server | rps | p50 ms | p99 ms | server CPU µs/request |\n| --- | ---: | ---: | ---: | ---: |')
      summaries.forEach((s, i) => {
        const requests = s.requests * (1 + WARMUP_SECONDS / (rounds * SLICE_SECONDS))
        console.log(`| ${names[i]} | ${Math.round(s.rps).toLocaleString('en-US')} | ${s.p50.toFixed(2)} | ${s.p99.toFixed(2)} | ${(((after[i]! - before[i]!) * 1e6) / requests).toFixed(0)} |`)
      })
      const [a, b, f] = summaries as [ReturnType<typeof summarise>, ReturnType<typeof summarise>, ReturnType<typeof summarise>]
      const ratios = { a_vs_b_rps: +(a.rps / b.rps).toFixed(3), a_p50_vs_floor: +(a.p50 / f.p50).toFixed(3), b_p50_vs_floor: +(b.p50 / f.p50).toFixed(3) }
      console.log(JSON.stringify({ bench: 'data-pool-size', ratios, figures: { pool_a: poolA, pool_b: poolB, floor_connections: floorConnections, rps: summaries.map((s) => Math.round(s.rps)) } }))
    } finally {
      await floor.stop()
    }
  } finally {
    for (const child of children) await child.stop()
    for (const database of databases) await database.drop()
    server.stop()
  }
}

await main()
