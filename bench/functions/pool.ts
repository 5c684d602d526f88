/**
 * Benchmark of the Functions pool against bare Deno on the same machine, in one run:
 *
 * - cold start: a new pool's first invocation (process spawn, SDK and Function import,
 *   run), with Deno's cache warm (the normal case after the first deploy) and empty;
 * - warm round trip: 1,000 sequential invocations of a trivial Function, and of one that
 *   makes one context call (`secrets.get`);
 * - baselines: `deno run` of an empty script until exit, and 1,000 sequential round trips
 *   of one JSON line through a bare Deno echo loop over the same kind of pipe.
 *
 * Run: npm run bench:functions
 */
import { spawn, spawnSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { resolveDenoBinary } from '../../packages/platform/src/functions/deno-binary.ts'
import { createFunctionPool } from '../../packages/platform/src/functions/pool.ts'
import { SDK_ENTRY, metaFor, recordingLogger, removeBundle, writeBundle } from '../../packages/platform/src/functions/test-bundle.ts'

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

const ECHO_SCRIPT = `
const reader = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).getReader()
const writer = Deno.stdout.writable.getWriter()
const encoder = new TextEncoder()
let pending = ''
for (;;) {
  const { value, done } = await reader.read()
  if (done) break
  pending += value
  let newline
  while ((newline = pending.indexOf('\\n')) !== -1) {
    const message = JSON.parse(pending.slice(0, newline))
    pending = pending.slice(newline + 1)
    writer.write(encoder.encode(JSON.stringify({ id: message.id, ok: true, value: message.input }) + '\\n'))
  }
}
`

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

async function bareRoundTrips(deno: string, script: string, denoDir: string): Promise<number[]> {
  const child = spawn(deno, ['run', '--no-prompt', '--no-config', '--no-lock', script], { env: { DENO_DIR: denoDir, NO_COLOR: '1' }, stdio: ['pipe', 'pipe', 'inherit'] })
  child.stdout.setEncoding('utf8')
  let pending = ''
  let waiter: (() => void) | undefined
  child.stdout.on('data', (chunk: string) => {
    pending += chunk
    if (pending.includes('\n')) {
      pending = ''
      waiter?.()
    }
  })
  const roundTrip = (id: number) =>
    new Promise<void>((resolve) => {
      waiter = resolve
      child.stdin.write(JSON.stringify({ type: 'invoke', id: String(id), input: { text: 'hi' } }) + '\n')
    })
  for (let index = 0; index < 200; index += 1) await roundTrip(index)
  const samples: number[] = []
  for (let index = 0; index < WARM_CALLS; index += 1) {
    const started = performance.now()
    await roundTrip(index)
    samples.push(performance.now() - started)
  }
  child.kill('SIGKILL')
  return samples
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
  summary('bare Deno echo round trip over a pipe', await bareRoundTrips(deno, echoScript, denoDir))
} finally {
  removeBundle(bundleDir)
}
