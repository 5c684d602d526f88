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
import { startChild } from './child.ts'
import type { Summary } from './load.ts'
import { CONNECTIONS, ROWS, keyReadsInTurn, withServers } from './side-by-side.ts'

const poolA = Number(process.env.POOL_A ?? 1)
const poolB = Number(process.env.POOL_B ?? 4)
const floorConnections = Number(process.env.FLOOR_CONNECTIONS ?? CONNECTIONS)
const rounds = Number(process.env.ROUNDS ?? 6)

async function main(): Promise<void> {
  const start = (appPoolSize: number) => (databaseUrl: string) =>
    startChild({ storage: 'postgres', databaseUrl, rows: ROWS, categories: 100, appPoolSize })
  await withServers([start(poolA), start(poolB)], floorConnections, async (children, floor) => {
    const summaries = await keyReadsInTurn([
      { name: `API, login pool of ${poolA}`, child: children[0]! },
      { name: `API, login pool of ${poolB}`, child: children[1]! },
    ], { name: `floor, ${floorConnections} connections`, ...floor }, rounds)
    const [a, b, f] = summaries as [Summary, Summary, Summary]
    const ratios = { a_vs_b_rps: +(a.rps / b.rps).toFixed(3), a_p50_vs_floor: +(a.p50 / f.p50).toFixed(3), b_p50_vs_floor: +(b.p50 / f.p50).toFixed(3) }
    console.log(JSON.stringify({ bench: 'data-pool-size', ratios, figures: { pool_a: poolA, pool_b: poolB, floor_connections: floorConnections, rps: summaries.map((s) => Math.round(s.rps)) } }))
  })
}

await main()
