/**
 * The key read on platform servers and the floor, measured in turn at 10 connections: the
 * part bench/data's side-by-side aids (pool-size.ts, compare-trees.ts) share. Prints a table
 * of rps, p50, p99 and server CPU per request, and returns the summaries in order (the
 * servers', then the floor's).
 */
import { ident } from '../../packages/platform/src/db/db.ts'
import { startFloor, type Child } from './child.ts'
import { processSeconds } from './cpu.ts'
import { createDatabase, startServer, type Database } from './postgres.ts'
import { alternate, httpRunner, summarise, type HttpCase, type Summary } from './load.ts'

export const ROWS = 100_000
export const CONNECTIONS = 10
const SLICE_SECONDS = 2
const WARMUP_SECONDS = 2

const randomId = () => 1 + Math.floor(Math.random() * ROWS)

export async function keyReadsInTurn(
  servers: readonly { name: string; child: Child }[],
  floor: { name: string; pid: number; port: number },
  rounds: number,
): Promise<Summary[]> {
  const read = (token: string): HttpCase => ({ method: 'GET', path: () => `/rest/v1/items?id=eq.${randomId()}`, headers: { authorization: `Bearer ${token}` } })
  const runners = [
    ...servers.map(({ child }) => httpRunner({ port: child.fixture.port, host: child.fixture.host }, read(child.fixture.appToken), CONNECTIONS)),
    httpRunner({ port: floor.port, host: `127.0.0.1:${floor.port}` }, { method: 'GET', path: () => `/rest/v1/items?id=eq.${randomId()}`, headers: {} }, CONNECTIONS),
  ]
  const pids = [...servers.map(({ child }) => child.pid), floor.pid]
  const before = pids.map((pid) => processSeconds(pid) ?? 0)
  const samples = await alternate(runners.map((runner) => ({ runner, warmupSeconds: WARMUP_SECONDS, sliceSeconds: SLICE_SECONDS })), rounds)
  const after = pids.map((pid) => processSeconds(pid) ?? 0)
  const summaries = samples.map(summarise)
  const names = [...servers.map((s) => s.name), floor.name]
  console.log(`\npk read, ${CONNECTIONS} connections, ${rounds} rounds of ${SLICE_SECONDS} s in turn (server CPU includes the warm-up)\n`)
  console.log('| server | rps | p50 ms | p99 ms | server CPU µs/request |\n| --- | ---: | ---: | ---: | ---: |')
  summaries.forEach((s, i) => {
    const requests = s.requests * (1 + WARMUP_SECONDS / (rounds * SLICE_SECONDS))
    console.log(`| ${names[i]} | ${Math.round(s.rps).toLocaleString('en-US')} | ${s.p50.toFixed(2)} | ${s.p99.toFixed(2)} | ${(((after[i]! - before[i]!) * 1e6) / requests).toFixed(0)} |`)
  })
  return summaries
}

type Floor = Awaited<ReturnType<typeof startFloor>>

/**
 * One PostgreSQL (a throwaway server unless DATABASE_URL is set), a database and a platform
 * server per `start`, and the floor over the first one's table with `floorConnections`; runs
 * `work`, then stops and drops everything.
 */
export async function withServers(
  starts: readonly ((databaseUrl: string) => Promise<Child>)[],
  floorConnections: number,
  work: (children: Child[], floor: Floor) => Promise<void>,
): Promise<void> {
  const server = startServer(process.env.DATABASE_URL)
  const databases: Database[] = []
  const children: Child[] = []
  try {
    for (const start of starts) {
      const database = await createDatabase(server.adminUrl)
      databases.push(database)
      children.push(await start(database.url))
    }
    const floor = await startFloor(databases[0]!.url, `${ident(children[0]!.fixture.schemaName)}.items`, floorConnections)
    try {
      await work(children, floor)
    } finally {
      await floor.stop()
    }
  } finally {
    for (const child of children) await child.stop()
    for (const database of databases) await database.drop()
    server.stop()
  }
}
