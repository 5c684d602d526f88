/**
 * The data API on PGlite, request by request: the primary-key read through the platform's
 * HTTP server on an in-memory PGlite (10 connections, autocannon), with the server's CPU
 * per request, then the same request one at a time with every SQL statement counted and
 * timed. Where bench:data gives PGlite's throughput, this says where a PGlite request's
 * time goes. `npx tsx bench/data/pglite-profile.ts`; BENCH_SECONDS (default 5) per round,
 * BENCH_ROUNDS (default 3), BENCH_ROWS (default 100,000), BENCH_CPU_PROF (a directory: the
 * server writes a V8 CPU profile there).
 */
import { startChild } from './child.ts'
import { perRequest, readCpu } from './cpu.ts'
import { httpOnce, httpRunner, sequentialHttp, summarise, type HttpCase, type HttpTarget } from './load.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const ROWS = Number(process.env.BENCH_ROWS ?? 100_000)
const CONNECTIONS = 10
const PROFILE_REQUESTS = 500

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const child = await startChild({ storage: 'pglite', rows: ROWS, categories: 100 })
try {
  const target: HttpTarget = { port: child.fixture.port, host: child.fixture.host }
  const pkRead: HttpCase = {
    method: 'GET',
    path: () => `/rest/v1/items?id=eq.${1 + Math.floor(Math.random() * ROWS)}`,
    headers: { authorization: `Bearer ${child.fixture.appToken}` },
  }
  const check = await httpOnce(target, pkRead)
  if (check.status !== 200) throw new Error(`pk read: ${check.status} ${check.body.slice(0, 300)}`)

  const runner = httpRunner(target, pkRead, CONNECTIONS)
  await runner.warm(2)
  const rounds: { rps: number; p50: number; serverUs: number }[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const before = readCpu(child.pid, null)
    const sample = await runner.measure(SECONDS)
    const cpu = perRequest(before, readCpu(child.pid, null), sample.count)
    const summary = summarise(sample)
    rounds.push({ rps: summary.rps, p50: summary.p50, serverUs: cpu.server ?? Number.NaN })
    log(`round ${round + 1}: ${summary.rps.toFixed(0)} rps, p50 ${summary.p50.toFixed(2)} ms, server CPU ${cpu.server?.toFixed(0)} µs per request`)
  }

  await sequentialHttp(target, pkRead, 100)
  await child.profile(true)
  const sequential = await sequentialHttp(target, pkRead, PROFILE_REQUESTS)
  const profile = await child.profile(false)
  if (!profile) throw new Error('the server returned no profile')
  const clientMs = sequential.latencies.reduce((a, b) => a + b, 0) / sequential.count
  console.log(`pk read, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${SECONDS} s: ` +
    `${median(rounds.map((r) => r.rps)).toFixed(0)} rps, p50 ${median(rounds.map((r) => r.p50)).toFixed(2)} ms, ` +
    `server CPU ${median(rounds.map((r) => r.serverUs)).toFixed(0)} µs per request`)
  console.log(`one at a time (${profile.requests} requests): client ${clientMs.toFixed(3)} ms, ` +
    `server ${(profile.serverMs / profile.requests).toFixed(3)} ms per request`)
  for (const s of profile.statements) {
    console.log(`  ${(s.count / profile.requests).toFixed(2)} x ${(s.ms / s.count).toFixed(3)} ms  ${s.sql}`)
  }
  console.log(JSON.stringify({
    bench: 'data-pglite',
    figures: {
      rps: Math.round(median(rounds.map((r) => r.rps))),
      p50_ms: Number(median(rounds.map((r) => r.p50)).toFixed(2)),
      server_cpu_us: Math.round(median(rounds.map((r) => r.serverUs))),
      sequential_server_ms: Number((profile.serverMs / profile.requests).toFixed(3)),
      statements_per_request: Number((profile.statements.reduce((a, s) => a + s.count, 0) / profile.requests).toFixed(2)),
    },
  }))
} finally {
  await child.stop()
}
