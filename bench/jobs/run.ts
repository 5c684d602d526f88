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
 * Run: DATABASE_URL=postgres://… npm run bench:jobs   (JOBS_N, JOBS_SAMPLES change the sizes;
 * JOBS_SYSTEMS=platform,graphile-worker,pg-boss picks the systems)
 */
import { performance } from 'node:perf_hooks'
import { startGraphileWorker, startPgBoss, startPlatformJobs, type Hooks, type JobSystem } from './systems.ts'

const N = Number(process.env.JOBS_N ?? 5000)
const SAMPLES = Number(process.env.JOBS_SAMPLES ?? 200)
const PRODUCERS = 8
const url = process.env.DATABASE_URL
if (!url) {
  console.error('bench:jobs needs a PostgreSQL server: DATABASE_URL=postgres://… npm run bench:jobs')
  process.exit(2)
}

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

const results = []
const SYSTEMS = { platform: startPlatformJobs, 'graphile-worker': startGraphileWorker, 'pg-boss': startPgBoss }
const chosen = (process.env.JOBS_SYSTEMS ?? Object.keys(SYSTEMS).join(',')).split(',') as (keyof typeof SYSTEMS)[]
for (const start of chosen.map((name) => SYSTEMS[name])) {
  const result = await measure(start)
  console.log(`${result.system.padEnd(16)} backlog ${String(result.backlog).padStart(6)} jobs/s  throughput ${String(result.throughput).padStart(6)} jobs/s (enqueue ${result.enqueueRate}/s)  latency p50 ${result.p50.toFixed(1)} ms  p99 ${result.p99.toFixed(1)} ms`)
  results.push(result)
}
console.log(`\n${N} no-op jobs, ${PRODUCERS} producers, 32 at once; latency over ${SAMPLES} single jobs`)
console.log(JSON.stringify(results))
process.exit(0)
