/**
 * bench:jobs: the platform's jobs engine beside graphile-worker and pg-boss, on the same
 * PostgreSQL server in the same run (each on a fresh database), all running 32 jobs at once:
 *
 * - backlog: N no-op jobs are enqueued with the workers stopped; the figure is N over the
 *   time from starting the workers (their start included) until the database records the
 *   last job completed: how fast each drains a queue;
 * - throughput: 8 producers enqueue N no-op jobs one by one while the workers run; the
 *   figure is N over the time from the first enqueue until the database records the last
 *   job completed (enqueue to succeeded, end to end);
 * - latency: with the workers idle, one job at a time, the time from calling enqueue until
 *   its handler starts (for the platform: until the dispatcher hands the attempt to the
 *   Functions host, a pipe write away from the Deno handler); p50 and p99.
 *
 * Each round runs every chosen system once, in turn (so a change in the machine's load falls
 * on all of them); the figures are medians over the rounds, and the ratios are the platform's
 * medians over graphile-worker's (for latency lower is better: a ratio under 1 means the
 * platform starts jobs sooner). Then growth.ts measures how the platform's claim grows with
 * 100k queued jobs and with 1,000 queues. The last line is one JSON object for scripts.
 *
 * Run: npm run bench:jobs   (a throwaway PostgreSQL from scripts/postgres-test-server.sh,
 * stopped at the end, unless DATABASE_URL names one; JOBS_N, JOBS_SAMPLES and JOBS_ROUNDS
 * change the sizes, default 5000, 200 and 3; JOBS_SYSTEMS=platform,graphile-worker,pg-boss
 * adds pg-boss, whose 0.5 s polling makes it slow to measure; JOBS_GROWTH=0 skips growth)
 */
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { startServer } from '../data/postgres.ts'
import { measureGrowth, type GrowthFigure } from './growth.ts'
import { startGraphileWorker, startPgBoss, startPlatformJobs, type Hooks, type JobSystem } from './systems.ts'

const N = Number(process.env.JOBS_N ?? 5000)
const SAMPLES = Number(process.env.JOBS_SAMPLES ?? 200)
const ROUNDS = Number(process.env.JOBS_ROUNDS ?? 3)
const PRODUCERS = 8
const server = startServer(process.env.DATABASE_URL)
const url = server.adminUrl

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN
}

async function measure(start: (url: string, hooks: Hooks) => Promise<JobSystem>) {
  const waiting = new Map<number, (at: number) => void>()
  const hooks: Hooks = {
    started: (i) => {
      const at = performance.now()
      waiting.get(i)?.(at)
      waiting.delete(i)
    },
    completed: () => {},
  }
  const system = await start(url!, hooks)
  let next = 0
  try {
    const backlog = next
    next += N
    let fill = backlog
    await Promise.all(Array.from({ length: PRODUCERS }, async () => {
      while (fill < backlog + N) await system.enqueue(fill++)
    }))
    const b0 = performance.now()
    await system.startWorkers()
    await system.drained()
    await system.done()
    const b1 = performance.now()

    const first = next
    next += N
    const t0 = performance.now()
    let cursor = first
    await Promise.all(Array.from({ length: PRODUCERS }, async () => {
      while (cursor < first + N) await system.enqueue(cursor++)
    }))
    const enqueued = performance.now()
    await system.drained()
    await system.done()
    const t1 = performance.now()

    const latencies: number[] = []
    for (let k = 0; k < SAMPLES; k++) {
      const i = next++
      const started = new Promise<number>((resolve) => waiting.set(i, resolve))
      const sent = performance.now()
      await system.enqueue(i)
      latencies.push((await started) - sent)
      await system.drained()
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    latencies.sort((a, b) => a - b)
    return {
      system: system.name,
      backlog: Math.round(N / ((b1 - b0) / 1000)),
      throughput: Math.round(N / ((t1 - t0) / 1000)),
      enqueueRate: Math.round(N / ((enqueued - t0) / 1000)),
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
    }
  } finally {
    await system.stop()
  }
}

type Result = Awaited<ReturnType<typeof measure>>
const SYSTEMS = { platform: startPlatformJobs, 'graphile-worker': startGraphileWorker, 'pg-boss': startPgBoss }
const chosen = (process.env.JOBS_SYSTEMS ?? 'platform,graphile-worker').split(',') as (keyof typeof SYSTEMS)[]
const runs = new Map<string, Result[]>(chosen.map((name) => [name, []]))
const loads: number[] = []
const median = (values: readonly number[]) => percentile([...values].sort((a, b) => a - b), 0.5)
let growth: { figures: GrowthFigure[]; load_average: number[] } | null = null
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of chosen) {
      loads.push(loadavg()[0]!)
      const result = await measure(SYSTEMS[name])
      console.log(`round ${round}  ${result.system.padEnd(16)} backlog ${String(result.backlog).padStart(6)} jobs/s  throughput ${String(result.throughput).padStart(6)} jobs/s (enqueue ${result.enqueueRate}/s)  latency p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms  (load ${loads.at(-1)!.toFixed(1)})`)
      runs.get(name)!.push(result)
    }
  }
  if (process.env.JOBS_GROWTH !== '0') {
    const before = loadavg()[0]!
    const figures = await measureGrowth(url!)
    growth = { figures, load_average: [before, loadavg()[0]!].map((l) => Number(l.toFixed(1))) }
    console.log(`growth: load average ${growth.load_average.join(' to ')}`)
  }
} finally {
  server.stop()
}

const figures: Record<string, { backlog_jobs_per_s: number; throughput_jobs_per_s: number; enqueue_per_s: number; latency_p50_ms: number; latency_p99_ms: number }> = {}
console.log(`\nmedians over ${ROUNDS} round(s): ${N} no-op jobs, ${PRODUCERS} producers, 32 at once; latency over ${SAMPLES} single jobs; load average ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}`)
for (const [name, results] of runs) {
  figures[name] = {
    backlog_jobs_per_s: median(results.map((r) => r.backlog)),
    throughput_jobs_per_s: median(results.map((r) => r.throughput)),
    enqueue_per_s: median(results.map((r) => r.enqueueRate)),
    latency_p50_ms: Number(median(results.map((r) => r.p50)).toFixed(2)),
    latency_p99_ms: Number(median(results.map((r) => r.p99)).toFixed(2)),
  }
  const f = figures[name]!
  console.log(`${name.padEnd(16)} backlog ${String(f.backlog_jobs_per_s).padStart(6)} jobs/s  throughput ${String(f.throughput_jobs_per_s).padStart(6)} jobs/s (enqueue ${f.enqueue_per_s}/s)  latency p50 ${f.latency_p50_ms} ms  p99 ${f.latency_p99_ms} ms`)
}
const platform = figures.platform
const graphile = figures['graphile-worker']
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? null : Number((a / b).toFixed(2)))
const ratios = {
  drain_vs_graphile_worker: ratio(platform?.backlog_jobs_per_s, graphile?.backlog_jobs_per_s),
  // Lower is better: the platform's enqueue-to-start p50 over graphile-worker's.
  latency_p50_vs_graphile_worker: ratio(platform?.latency_p50_ms, graphile?.latency_p50_ms),
  throughput_vs_graphile_worker: ratio(platform?.throughput_jobs_per_s, graphile?.throughput_jobs_per_s),
}
console.log(JSON.stringify({
  bench: 'jobs',
  ratios,
  figures: {
    ...figures, latency_ratio_lower_is_better: true, rounds: ROUNDS, jobs: N, latency_samples: SAMPLES, producers: PRODUCERS,
    load_average: [Math.min(...loads), Math.max(...loads)].map((l) => Number(l.toFixed(1))),
    ...(growth === null ? {} : { growth }),
  },
}))
process.exit(0)
