/**
 * Load generators with one methodology for every target: a fixed number of concurrent
 * clients, a warm-up whose samples are thrown away, then bounded windows in which the
 * latency of every completed request is recorded in float milliseconds. HTTP goes through
 * autocannon (keep-alive sockets, pre-built requests); driver calls are N async workers,
 * each awaiting one query at a time in a loop. Contenders are measured in alternation.
 */
import { request as httpRequest } from 'node:http'
import { performance } from 'node:perf_hooks'
import autocannon from 'autocannon'

export interface Sample {
  count: number
  seconds: number
  /** Milliseconds, one per completed request, in completion order. */
  latencies: number[]
}

export interface Summary {
  requests: number
  rps: number
  p50: number
  p99: number
}

export interface LoadOptions {
  connections: number
  warmupSeconds: number
  seconds: number
}

/** Called when the measured window starts (after the warm-up), e.g. to read CPU counters. */
export type OnMeasure = () => void

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!
}

export function summarise(sample: Sample): Summary {
  const sorted = Float64Array.from(sample.latencies).sort()
  return {
    requests: sample.count,
    rps: sample.count / sample.seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
  }
}

export interface HttpTarget {
  port: number
  /** Host header: the app origin's host and port. */
  host: string
}

export interface HttpCase {
  method: 'GET' | 'POST'
  /** The request path, called once per request so ids can vary. */
  path: () => string
  headers: Record<string, string>
  body?: string
  /** Headers chosen per request (e.g. another app's Host and token), over `headers`. */
  vary?: () => Record<string, string>
}

async function cannon(target: HttpTarget, spec: HttpCase, run: { connections: number; seconds?: number; amount?: number }): Promise<Sample> {
  const latencies: number[] = []
  let failures = 0
  const statuses = new Map<number, number>()
  const started = performance.now()
  const instance = autocannon({
    url: `http://127.0.0.1:${target.port}`,
    connections: run.connections,
    ...(run.amount !== undefined ? { amount: run.amount } : { duration: run.seconds ?? 1 }),
    timeout: 10,
    requests: [{
      method: spec.method,
      headers: { host: target.host, ...spec.headers },
      ...(spec.body !== undefined ? { body: spec.body } : {}),
      setupRequest: (request) => ({
        ...request, path: spec.path(), ...(spec.vary ? { headers: { ...request.headers, ...spec.vary() } } : {}),
      }),
    }],
  })
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    if (status >= 200 && status < 300) latencies.push(ms)
    else failures++
    statuses.set(status, (statuses.get(status) ?? 0) + 1)
  })
  const result = await instance
  const seconds = (performance.now() - started) / 1000
  if (failures > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`HTTP load failed: ${failures} non-2xx (${JSON.stringify(Object.fromEntries(statuses))}), ` +
      `${result.errors} errors, ${result.timeouts} timeouts`)
  }
  return { count: latencies.length, seconds, latencies }
}

/**
 * One kind of load at a fixed concurrency: warm it up (samples thrown away), then measure
 * windows of it.
 */
export interface Runner {
  warm(seconds: number): Promise<void>
  measure(seconds: number): Promise<Sample>
}

/** HTTP requests of one shape over `connections` keep-alive sockets (autocannon). */
export function httpRunner(target: HttpTarget, spec: HttpCase, connections: number): Runner {
  return {
    async warm(seconds) {
      if (seconds > 0) await cannon(target, spec, { connections, seconds })
    },
    measure: (seconds) => cannon(target, spec, { connections, seconds }),
  }
}

/** `connections` async workers, each awaiting `call` in a loop. */
export function callRunner(call: () => Promise<unknown>, connections: number): Runner {
  const phase = async (seconds: number, record: boolean): Promise<Sample> => {
    const latencies: number[] = []
    const started = performance.now()
    const deadline = started + seconds * 1000
    await Promise.all(Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now()
        await call()
        if (record) latencies.push(performance.now() - t0)
      }
    }))
    return { count: latencies.length, seconds: (performance.now() - started) / 1000, latencies }
  }
  return {
    async warm(seconds) {
      if (seconds > 0) await phase(seconds, false)
    },
    measure: (seconds) => phase(seconds, true),
  }
}

export interface Contender {
  runner: Runner
  warmupSeconds: number
  /** Seconds measured per round; the total is this times the rounds. */
  sliceSeconds: number
}

/**
 * Warms every contender up, then measures them in turn, round after round (A B C A B C ...),
 * so a slow spell on a shared machine lands on all of them rather than on one. Returns one
 * merged sample per contender, in order.
 */
export async function alternate(contenders: readonly Contender[], rounds: number): Promise<Sample[]> {
  for (const c of contenders) await c.runner.warm(c.warmupSeconds)
  const merged: Sample[] = contenders.map(() => ({ count: 0, seconds: 0, latencies: [] }))
  for (let round = 0; round < rounds; round++) {
    for (const [i, c] of contenders.entries()) {
      const sample = await c.runner.measure(c.sliceSeconds)
      const into = merged[i]!
      into.count += sample.count
      into.seconds += sample.seconds
      for (const ms of sample.latencies) into.latencies.push(ms)
    }
  }
  return merged
}

/** Warm-up, then one measured window, of `connections` workers each awaiting `call`. */
export async function loadCalls(call: () => Promise<unknown>, options: LoadOptions, onMeasure?: OnMeasure): Promise<Sample> {
  const runner = callRunner(call, options.connections)
  await runner.warm(options.warmupSeconds)
  onMeasure?.()
  return runner.measure(options.seconds)
}

/** A fixed number of requests over one connection, one after another (for profiling). */
export function sequentialHttp(target: HttpTarget, spec: HttpCase, amount: number): Promise<Sample> {
  return cannon(target, spec, { connections: 1, amount })
}

/** One request through node:http (which, unlike fetch, lets us set Host), for checking a case. */
export function httpOnce(target: HttpTarget, spec: HttpCase): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: '127.0.0.1',
      port: target.port,
      method: spec.method,
      path: spec.path(),
      headers: { host: target.host, ...spec.headers },
    }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(spec.body)
  })
}
