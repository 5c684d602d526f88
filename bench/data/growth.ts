/**
 * `npx tsx bench/data/growth.ts`: how the data API's cost grows (issue 14, "Growth": the data
 * API with 1M rows and 100 apps), on PostgreSQL, through the platform's real HTTP server with
 * app tokens, 10 connections:
 *
 * - rows: the primary-key read and the 50-row list on `items` of 100,000 and of 1,000,000
 *   rows (one app, a fresh database each);
 * - apps: 100 private apps of one owner, each with its own `items` (1,000 rows) and token;
 *   primary-key reads spread at random over the first 1, 10 and 100 of them, measured in
 *   turn, with the PostgreSQL backends open after each.
 *
 * Environment: DATABASE_URL (else a throwaway server from scripts/postgres-test-server.sh),
 * GROWTH_ROWS (default 100000,1000000), GROWTH_APPS (default 1,10,100), GROWTH_SECONDS
 * (measured seconds per contender, default 6, over 3 rounds).
 */
import os from 'node:os'
import { performance } from 'node:perf_hooks'
import postgres from 'postgres'
import { alternate, httpRunner, summarise, type HttpCase, type Runner } from './load.ts'
import { createDatabase, startServer } from './postgres.ts'
import { startChild } from './child.ts'

const CONNECTIONS = 10
const CATEGORIES = 100
const ROUNDS = 3
const EXTRA_ROWS = 1000
const seconds = Number(process.env.GROWTH_SECONDS ?? 6)
const ROW_SCALES = (process.env.GROWTH_ROWS ?? '100000,1000000').split(',').filter(Boolean).map(Number)
const APP_SCALES = (process.env.GROWTH_APPS ?? '1,10,100').split(',').map(Number)
const TIMING = { warmupSeconds: 1, sliceSeconds: seconds / ROUNDS }

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

interface Line {
  what: string
  rps: number
  p50: number
  p99: number
  note: string
}

async function byRows(adminUrl: string, rows: number, lines: Line[]): Promise<void> {
  const database = await createDatabase(adminUrl)
  try {
    const started = performance.now()
    const child = await startChild({ storage: 'postgres', databaseUrl: database.url, rows, categories: CATEGORIES })
    log(`rows ${rows}: platform up and seeded in ${((performance.now() - started) / 1000).toFixed(1)} s`)
    try {
      const { fixture } = child
      const target = { port: fixture.port, host: fixture.host }
      const auth = { authorization: `Bearer ${fixture.appToken}` }
      const cases: [string, HttpCase][] = [
        ['pk read', { method: 'GET', path: () => `/rest/v1/items?id=eq.${1 + Math.floor(Math.random() * rows)}`, headers: auth }],
        ['list 50', {
          method: 'GET', path: () => `/rest/v1/items?category=eq.c${Math.floor(Math.random() * CATEGORIES)}&order=id&limit=50`, headers: auth,
        }],
      ]
      const samples = await alternate(cases.map(([, spec]) => ({ runner: httpRunner(target, spec, CONNECTIONS), ...TIMING })), ROUNDS)
      const sql = postgres(database.url, { max: 1, onnotice: () => {} })
      const [size] = await sql<{ mb: number }[]>`select pg_total_relation_size(${`${fixture.schemaName}.items`}::regclass) / 1048576.0 as mb`
      await sql.end({ timeout: 5 })
      cases.forEach(([name], i) => {
        const s = summarise(samples[i]!)
        lines.push({ what: `${name}, ${rows.toLocaleString('en-US')} rows`, rps: s.rps, p50: s.p50, p99: s.p99, note: `table + indexes ${Number(size?.mb ?? 0).toFixed(0)} MB` })
      })
    } finally {
      await child.stop()
    }
  } finally {
    await database.drop()
  }
}

async function byApps(adminUrl: string, lines: Line[]): Promise<void> {
  const most = Math.max(...APP_SCALES)
  const database = await createDatabase(adminUrl)
  try {
    const started = performance.now()
    const child = await startChild({
      storage: 'postgres', databaseUrl: database.url, rows: EXTRA_ROWS, categories: CATEGORIES, extraApps: { count: most - 1, rows: EXTRA_ROWS },
    })
    const setup = (performance.now() - started) / 1000
    log(`apps: ${most} apps deployed and seeded in ${setup.toFixed(1)} s`)
    const sql = postgres(database.url, { max: 1, onnotice: () => {} })
    try {
      const { fixture } = child
      const apps = [{ host: fixture.host, appToken: fixture.appToken }, ...fixture.extraApps]
      const target = { port: fixture.port, host: fixture.host }
      const runners: Runner[] = APP_SCALES.map((k) => httpRunner(target, {
        method: 'GET',
        path: () => `/rest/v1/items?id=eq.${1 + Math.floor(Math.random() * EXTRA_ROWS)}`,
        headers: {},
        vary: () => {
          const app = apps[Math.floor(Math.random() * k)]!
          return { host: app.host, authorization: `Bearer ${app.appToken}` }
        },
      }, CONNECTIONS))
      // After each scale's last window: the backends the platform holds open.
      const backends: number[] = []
      const samples = await alternate(runners.map((runner) => ({
        runner: {
          warm: (s: number) => runner.warm(s),
          async measure(s: number) {
            const sample = await runner.measure(s)
            const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
            backends.push(row?.n ?? 0)
            return sample
          },
        },
        ...TIMING,
      })), ROUNDS)
      APP_SCALES.forEach((k, i) => {
        const s = summarise(samples[i]!)
        const seen = backends.filter((_, j) => j % APP_SCALES.length === i)
        lines.push({
          what: `pk read spread over ${k} app${k === 1 ? '' : 's'}`, rps: s.rps, p50: s.p50, p99: s.p99,
          note: `${Math.max(...seen)} PostgreSQL backends open; ${most} apps deployed in ${setup.toFixed(0)} s`,
        })
      })
    } finally {
      await sql.end({ timeout: 5 })
      await child.stop()
    }
  } finally {
    await database.drop()
  }
}

async function main(): Promise<void> {
  const server = startServer(process.env.DATABASE_URL)
  process.once('SIGINT', () => {
    server.stop()
    process.exit(130)
  })
  const lines: Line[] = []
  try {
    for (const rows of ROW_SCALES) await byRows(server.adminUrl, rows, lines)
    await byApps(server.adminUrl, lines)
  } finally {
    server.stop()
  }
  console.log(`\nbench:data growth on ${os.availableParallelism()} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ` +
    `${CONNECTIONS} connections, app tokens, contenders of a group measured in turn over ${ROUNDS} rounds\n`)
  console.log('| case | rps | p50 ms | p99 ms | note |')
  console.log('| --- | ---: | ---: | ---: | --- |')
  for (const l of lines) console.log(`| ${l.what} | ${Math.round(l.rps).toLocaleString('en-US')} | ${l.p50.toFixed(2)} | ${l.p99.toFixed(2)} | ${l.note} |`)
  const figures = Object.fromEntries(lines.flatMap((l) => [[`${l.what} rps`, Math.round(l.rps)], [`${l.what} p50 ms`, Math.round(l.p50 * 1000) / 1000]]))
  console.log(JSON.stringify({ bench: 'data-growth', figures }))
}

await main()
