/**
 * Benchmark of the Functions pool against bare Deno on the same machine, in one run:
 *
 * - cold start: a new pool's first invocation (process spawn, SDK and Function import,
 *   run), with Deno's cache warm (the normal case after the first deploy) and empty;
 * - warm round trip: 1,000 sequential invocations of a trivial Function, and of one that
 *   makes one context call (`secrets.get`);
 * - baselines: `deno run` of an empty script until exit, and 1,000 sequential round trips
 *   of one JSON line through a bare Deno echo loop over the same kind of pipe;
 * - through the platform (http.ts): the internal call path and HTTP calls, beside an HTTP
 *   floor (a bare Hono route forwarding to the Deno echo loop).
 *
 * Run: npm run bench:functions
 */
import { spawnSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { resolveDenoBinary } from '../../packages/platform/src/functions/deno-binary.ts'
import { createFunctionPool } from '../../packages/platform/src/functions/pool.ts'
import { SDK_ENTRY, metaFor, recordingLogger, removeBundle, writeBundle } from '../../packages/platform/src/functions/test-bundle.ts'
import { ECHO_SCRIPT, startEchoChild, type EchoChild } from './echo-child.ts'
import { startFloor, startPlatform, timedCalls } from './http.ts'

const WARM_CALLS = 1_000
const COLD_STARTS = 20

const FUNCTIONS = {
  'functions/echo.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({ input: object({ text: string() }), handler: ({ input }) => ({ text: input.text }) })`,
  'functions/secret.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: async ({ secrets }) => ({ value: await secrets.get('K') }) })`,
}


function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN
}

function summary(label: string, samples: readonly number[]): void {
  const sorted = [...samples].sort((a, b) => a - b)
  const format = (ms: number) => `${ms.toFixed(3)} ms`
  console.log(
    `${label.padEnd(52)} n=${String(samples.length).padEnd(5)} p50 ${format(percentile(sorted, 0.5)).padStart(11)}  p99 ${format(percentile(sorted, 0.99)).padStart(11)}  max ${format(sorted[sorted.length - 1] ?? Number.NaN).padStart(11)}`,
  )
}

async function coldStarts(bundleDir: string, denoDir: string, times: number): Promise<number[]> {
  const samples: number[] = []
  for (let index = 0; index < times; index += 1) {
    const pool = createFunctionPool({ bundleDir, sdkEntry: SDK_ENTRY, size: 1, denoDir, logger: recordingLogger(), onContextCall: async () => null })
    const started = performance.now()
    const result = await pool.invoke({ entrypoint: 'functions/echo.ts', input: { text: 'hi' }, meta: metaFor() })
    samples.push(performance.now() - started)
    if (!result.ok) throw new Error(`cold invocation failed: ${JSON.stringify(result.error)}`)
    await pool.close()
  }
  return samples
}

async function warmRoundTrips(bundleDir: string, denoDir: string, entrypoint: string, input: object): Promise<number[]> {
  const pool = createFunctionPool({ bundleDir, sdkEntry: SDK_ENTRY, size: 1, denoDir, logger: recordingLogger(), onContextCall: async () => 'value' })
  const meta = metaFor()
  for (let index = 0; index < 200; index += 1) await pool.invoke({ entrypoint, input, meta })
  const samples: number[] = []
  for (let index = 0; index < WARM_CALLS; index += 1) {
    const started = performance.now()
    const result = await pool.invoke({ entrypoint, input, meta })
    samples.push(performance.now() - started)
    if (!result.ok) throw new Error(`warm invocation failed: ${JSON.stringify(result.error)}`)
  }
  await pool.close()
  return samples
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

async function bareRoundTrips(echo: EchoChild): Promise<number[]> {
  return timedCalls(async () => void (await echo.call({ text: 'hi' })), 200, WARM_CALLS)
}

const deno = resolveDenoBinary()
const bundleDir = writeBundle(FUNCTIONS)
const scratch = dirname(bundleDir)
const denoDir = join(scratch, 'deno-cache')
const echoScript = join(scratch, 'echo.ts')
const emptyScript = join(scratch, 'empty.ts')
writeFileSync(echoScript, ECHO_SCRIPT)
writeFileSync(emptyScript, '')

try {
  console.log(`Deno ${spawnSync(deno, ['--version']).stdout.toString().split('\n')[0]}, Node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`)
  const emptyCache = join(scratch, 'empty-cache')
  const first = await coldStarts(bundleDir, emptyCache, 1)
  rmSync(emptyCache, { recursive: true, force: true })
  summary('cold start, empty Deno cache (first ever)', first)
  summary('cold start, warm Deno cache (spawn + import + run)', await coldStarts(bundleDir, denoDir, COLD_STARTS))
  summary('bare `deno run` of an empty script, to exit', bareStarts(deno, emptyScript, denoDir, COLD_STARTS))
  summary('warm invocation round trip (echo)', await warmRoundTrips(bundleDir, denoDir, 'functions/echo.ts', { text: 'hi' }))
  summary('warm invocation with one context call', await warmRoundTrips(bundleDir, denoDir, 'functions/secret.ts', {}))
  const echo = startEchoChild(deno, echoScript, denoDir)
  try {
    summary('bare Deno echo round trip over a pipe', await bareRoundTrips(echo))
    const platform = await startPlatform()
    const floor = await startFloor(echo)
    try {
      summary('platform internal call path (FunctionHost.run)', await timedCalls(platform.internal, 200, WARM_CALLS))
      summary('HTTP floor: bare Hono route -> Deno echo', await timedCalls(floor.call, 200, WARM_CALLS))
      summary('HTTP: public Function, anonymous SDK call', await timedCalls(platform.anonymous, 200, WARM_CALLS))
      summary('HTTP: user Function, svc_app_ token', await timedCalls(platform.appToken, 200, WARM_CALLS))
    } finally {
      await floor.close()
      await platform.close()
    }
  } finally {
    echo.close()
  }
} finally {
  removeBundle(bundleDir)
}
