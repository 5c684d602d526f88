/**
 * Benchmark of the Functions pool against bare Deno on the same machine, in one run:
 *
 * - cold start: the first invocation of a new pool (a release just deployed, a pool reaped
 *   after idling, the first call after a restart), timed from `invoke` to its result. With a
 *   spare worker (spare-workers.ts; production keeps FUNCTION_SPARE_WORKERS=1): the spare
 *   has been started and idle before the pool exists, as it is in production, and the pool
 *   places the release in it, imports the Function and runs it. Without one: process spawn,
 *   SDK and Function import, run, with Deno's cache warm (the normal case after the first
 *   deploy) and empty;
 * - what a spare costs while idle: its resident and proportional memory (RSS, PSS from
 *   /proc), and its CPU over two idle seconds; and what an idle pool's worker holds after
 *   one invocation (the Growth figure: memory per idle app);
 * - warm round trip: 1,000 sequential invocations of a trivial Function, and of one that
 *   makes one context call (`secrets.get`);
 * - baselines: `deno run` of an empty script until exit (taking turns with the cold starts),
 *   and 1,000 sequential round trips of one JSON line through a bare Deno echo loop over the
 *   same kind of pipe (taking turns with the warm invocations in blocks of 100);
 * - through the platform (http.ts): the internal call path and HTTP calls, beside an HTTP
 *   floor (a bare Hono route forwarding to the Deno echo loop).
 *
 * Run: npm run bench:functions (FUNCTIONS_IDLE_POOLS=64 measures as many idle pools as a
 * platform process keeps live at most). PGlite in memory only: no PostgreSQL server needed.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { resolveDenoBinary } from '../../packages/platform/src/functions/deno-binary.ts'
import { createFunctionPool, poolSandbox, type FunctionPool } from '../../packages/platform/src/functions/pool.ts'
import { createSpareWorkers, type SpareWorkers } from '../../packages/platform/src/functions/spare-workers.ts'
import { SDK_ENTRY, metaFor, recordingLogger, removeBundle, writeBundle } from '../../packages/platform/src/functions/test-bundle.ts'
import { ECHO_SCRIPT, startEchoChild, type EchoChild } from './echo-child.ts'
import { startFloor, startPlatform, timedCalls } from './http.ts'

const WARM_CALLS = 1_000
const COLD_STARTS = 20
/** How long a spare sits idle before each cold start (in production it has waited since the last one). */
const SPARE_IDLE_MS = 200
/** Idle pools measured for the memory an idle app holds (FUNCTIONS_IDLE_POOLS; the host keeps at most 64 live). */
const IDLE_POOLS = Number(process.env.FUNCTIONS_IDLE_POOLS ?? 10)

const FUNCTIONS = {
  'functions/echo.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({ input: object({ text: string() }), handler: ({ input }) => ({ text: input.text }) })`,
  'functions/secret.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: async ({ secrets }) => ({ value: await secrets.get('K') }) })`,
  'functions/pid.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: () => ({ pid: Deno.pid }) })`,
}


function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN
}

/** Prints one line and returns the p50. */
function summary(label: string, samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b)
  const format = (ms: number) => `${ms.toFixed(3)} ms`
  console.log(
    `${label.padEnd(52)} n=${String(samples.length).padEnd(5)} p50 ${format(percentile(sorted, 0.5)).padStart(11)}  p99 ${format(percentile(sorted, 0.99)).padStart(11)}  max ${format(sorted[sorted.length - 1] ?? Number.NaN).padStart(11)}`,
  )
  return percentile(sorted, 0.5)
}

function newPool(bundleDir: string, denoDir: string, spares?: SpareWorkers): FunctionPool {
  return createFunctionPool({ bundleDir, sdkEntry: SDK_ENTRY, size: 1, denoDir, logger: recordingLogger(), onContextCall: async () => null, ...(spares === undefined ? {} : { spares }) })
}

async function coldStarts(bundleDir: string, denoDir: string, times: number, spares?: SpareWorkers): Promise<number[]> {
  const samples: number[] = []
  for (let index = 0; index < times; index += 1) {
    if (spares !== undefined) {
      await spares.ready()
      await new Promise((resolve) => setTimeout(resolve, SPARE_IDLE_MS))
    }
    const pool = newPool(bundleDir, denoDir, spares)
    const started = performance.now()
    const result = await pool.invoke({ entrypoint: 'functions/echo.ts', input: { text: 'hi' }, meta: metaFor() })
    samples.push(performance.now() - started)
    if (!result.ok) throw new Error(`cold invocation failed: ${JSON.stringify(result.error)}`)
    await pool.close()
  }
  return samples
}

/**
 * Warm round trips of a Function on one worker and of the bare Deno echo loop, taking turns
 * in blocks of 100 calls so both see the same machine load.
 */
async function warmRoundTrips(bundleDir: string, denoDir: string, options: { entrypoint: string; input: object; echo: EchoChild }): Promise<{ pool: number[]; bare: number[] }> {
  const { entrypoint, input, echo } = options
  const pool = createFunctionPool({ bundleDir, sdkEntry: SDK_ENTRY, size: 1, denoDir, logger: recordingLogger(), onContextCall: async () => 'value' })
  const meta = metaFor()
  const invoke = async () => {
    const result = await pool.invoke({ entrypoint, input, meta })
    if (!result.ok) throw new Error(`warm invocation failed: ${JSON.stringify(result.error)}`)
  }
  const bareCall = async () => void (await echo.call({ text: 'hi' }))
  try {
    const samples = { pool: [] as number[], bare: [] as number[] }
    for (let block = 0; block < WARM_CALLS / 100; block += 1) {
      samples.pool.push(...await timedCalls(invoke, block === 0 ? 200 : 10, 100))
      samples.bare.push(...await timedCalls(bareCall, block === 0 ? 200 : 10, 100))
    }
    return samples
  } finally {
    await pool.close()
  }
}

function bareStarts(deno: string, script: string, denoDir: string, times: number): number[] {
  const samples: number[] = []
  for (let index = 0; index < times; index += 1) {
    const started = performance.now()
    const run = spawnSync(deno, ['run', '--no-prompt', '--no-config', '--no-lock', script], { env: { DENO_DIR: denoDir, NO_COLOR: '1' } })
    samples.push(performance.now() - started)
    if (run.status !== 0) throw new Error(`deno run failed: ${run.stderr.toString()}`)
  }
  return samples
}

const MIB = 1024 * 1024

/** Resident and proportional (shared pages divided among their users) memory of a process, in MiB. */
function memoryOf(pid: number): { rss: number; pss: number } {
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) * 1024 / MIB
  const rollup = `/proc/${pid}/smaps_rollup`
  const pss = existsSync(rollup) ? Number(/Pss:\s+(\d+) kB/.exec(readFileSync(rollup, 'utf8'))?.[1] ?? Number.NaN) * 1024 / MIB : Number.NaN
  return { rss, pss }
}

/** CPU time (user + system) a process has used, in ms. */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  // After "pid (comm) ": state is field 3, utime 14 and stime 15 (1-based), in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** What an idle spare costs: memory, and CPU over two idle seconds. */
async function idleSpareCost(spares: SpareWorkers): Promise<{ rss: number; pss: number; cpuMsPerS: number }> {
  await spares.ready()
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const [pid] = spares.idle()
  if (pid === undefined) throw new Error('no idle spare')
  const before = cpuMsOf(pid)
  await new Promise((resolve) => setTimeout(resolve, 2000))
  return { ...memoryOf(pid), cpuMsPerS: (cpuMsOf(pid) - before) / 2 }
}

/** The memory an idle app's pool holds: pools each run one invocation and wait; their workers are measured. */
async function idlePoolMemory(bundleDir: string, denoDir: string, spares: SpareWorkers): Promise<{ rss: number; pss: number }> {
  const pools: FunctionPool[] = []
  const pids: number[] = []
  try {
    for (let index = 0; index < IDLE_POOLS; index += 1) {
      await spares.ready()
      const pool = newPool(bundleDir, denoDir, spares)
      pools.push(pool)
      const result = await pool.invoke({ entrypoint: 'functions/pid.ts', input: {}, meta: metaFor() })
      if (!result.ok) throw new Error(`pid invocation failed: ${JSON.stringify(result.error)}`)
      pids.push((result.value as { pid: number }).pid)
    }
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const memories = pids.map(memoryOf)
    return { rss: memories.reduce((sum, m) => sum + m.rss, 0) / memories.length, pss: memories.reduce((sum, m) => sum + m.pss, 0) / memories.length }
  } finally {
    await Promise.all(pools.map((pool) => pool.close()))
  }
}

const deno = resolveDenoBinary()
const bundleDir = writeBundle(FUNCTIONS)
const scratch = dirname(bundleDir)
const denoDir = join(scratch, 'deno-cache')
const echoScript = join(scratch, 'echo.ts')
const emptyScript = join(scratch, 'empty.ts')
writeFileSync(echoScript, ECHO_SCRIPT)
writeFileSync(emptyScript, '')

const figures: Record<string, number> = {}
const round = (value: number, digits = 3) => Number(value.toFixed(digits))
const spares = createSpareWorkers({ count: 1, directory: join(scratch, 'workers'), sandbox: poolSandbox({ sdkEntry: SDK_ENTRY, denoDir }), logger: recordingLogger() })
try {
  console.log(`Deno ${spawnSync(deno, ['--version']).stdout.toString().split('\n')[0]}, Node ${process.version}, ${(await import('node:os')).cpus().length} CPUs, load average ${loadavg().map((load) => load.toFixed(2)).join(' ')}`)
  figures.load_average_1m_start = round(loadavg()[0] ?? Number.NaN, 2)
  const emptyCache = join(scratch, 'empty-cache')
  const first = await coldStarts(bundleDir, emptyCache, 1)
  rmSync(emptyCache, { recursive: true, force: true })
  figures.cold_start_empty_cache_ms = round(summary('cold start, empty Deno cache (first ever)', first))
  // Spare and spawned cold starts and `deno run` take turns sample by sample, so all three
  // see the same machine load.
  const withSpare: number[] = []
  const spawned: number[] = []
  const bare: number[] = []
  for (let sample = 0; sample < COLD_STARTS; sample += 1) {
    withSpare.push(...await coldStarts(bundleDir, denoDir, 1, spares))
    spawned.push(...await coldStarts(bundleDir, denoDir, 1))
    bare.push(...bareStarts(deno, emptyScript, denoDir, 1))
  }
  figures.cold_start_p50_ms = round(summary('cold start, with a spare worker (place + import + run)', withSpare))
  figures.cold_start_no_spare_p50_ms = round(summary('cold start, no spare (spawn + import + run)', spawned))
  figures.deno_run_empty_p50_ms = round(summary('bare `deno run` of an empty script, to exit', bare))
  const idle = await idleSpareCost(spares)
  console.log(`idle spare: RSS ${idle.rss.toFixed(1)} MiB, PSS ${idle.pss.toFixed(1)} MiB, CPU ${idle.cpuMsPerS.toFixed(2)} ms per second`)
  figures.spare_idle_rss_mib = round(idle.rss, 1)
  figures.spare_idle_pss_mib = round(idle.pss, 1)
  figures.spare_idle_cpu_ms_per_s = round(idle.cpuMsPerS, 2)
  const pool = await idlePoolMemory(bundleDir, denoDir, spares)
  console.log(`idle pool worker after one invocation (${IDLE_POOLS} pools): RSS ${pool.rss.toFixed(1)} MiB, PSS ${pool.pss.toFixed(1)} MiB each, PSS ${(pool.pss * IDLE_POOLS).toFixed(0)} MiB together`)
  figures.idle_pools = IDLE_POOLS
  figures.idle_pool_worker_rss_mib = round(pool.rss, 1)
  figures.idle_pool_worker_pss_mib = round(pool.pss, 1)
  const echo = startEchoChild(deno, echoScript, denoDir)
  try {
    const warm = await warmRoundTrips(bundleDir, denoDir, { entrypoint: 'functions/echo.ts', input: { text: 'hi' }, echo })
    figures.warm_p50_ms = round(summary('warm invocation round trip (echo)', warm.pool))
    figures.bare_pipe_p50_ms = round(summary('bare Deno echo round trip over a pipe', warm.bare))
    figures.warm_overhead_ms = round(figures.warm_p50_ms - figures.bare_pipe_p50_ms)
    figures.context_call_p50_ms = round(summary('warm invocation with one context call', (await warmRoundTrips(bundleDir, denoDir, { entrypoint: 'functions/secret.ts', input: {}, echo })).pool))
    const platform = await startPlatform()
    const floor = await startFloor(echo)
    try {
      figures.internal_call_p50_ms = round(summary('platform internal call path (FunctionHost.run)', await timedCalls(platform.internal, 200, WARM_CALLS)))
      figures.http_floor_p50_ms = round(summary('HTTP floor: bare Hono route -> Deno echo', await timedCalls(floor.call, 200, WARM_CALLS)))
      figures.http_anonymous_p50_ms = round(summary('HTTP: public Function, anonymous SDK call', await timedCalls(platform.anonymous, 200, WARM_CALLS)))
      figures.http_app_token_p50_ms = round(summary('HTTP: user Function, svc_app_ token', await timedCalls(platform.appToken, 200, WARM_CALLS)))
    } finally {
      await floor.close()
      await platform.close()
    }
  } finally {
    echo.close()
  }
  figures.load_average_1m_end = round(loadavg()[0] ?? Number.NaN, 2)
  console.log(JSON.stringify({
    bench: 'functions',
    figures,
    ratios: {
      cold_start_vs_deno_run_empty: round(figures.cold_start_p50_ms / figures.deno_run_empty_p50_ms),
      cold_start_vs_no_spare: round(figures.cold_start_p50_ms / figures.cold_start_no_spare_p50_ms),
      warm_vs_bare_pipe: round(figures.warm_p50_ms / figures.bare_pipe_p50_ms),
    },
  }))
} finally {
  await spares.close()
  removeBundle(bundleDir)
}
