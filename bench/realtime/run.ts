/**
 * `npm run bench:realtime` (issue 20): realtime delivery to 1,000 subscribers over loopback,
 * beside a bare `ws` server broadcasting the same messages, in the same run:
 *
 * - change latency: a signed-in writer inserts a row through the data API every 50 ms (the
 *   row carries the time just before its insert); every subscriber has joined a channel
 *   with an insert subscription on the table (one anonymous identity: one visibility
 *   statement per batch). Per delivery: arrival minus that time, so the figure holds the
 *   data API's write, the trigger, the sequencer, the read, the visibility check under RLS
 *   and the fan-out; p50 and p99 over all deliveries (the insert's own time is reported too);
 * - change throughput: the same inserts back to back; deliveries per second from the first
 *   insert to the last delivery;
 * - broadcast: one sender sends messages back to back on the subscribers' channel;
 *   deliveries per second, and p50/p99 latency;
 * - bare ws: a `ws` server that sends each message it receives to all its clients (no
 *   admission, no channels, no checks): the same messages spaced 50 ms apart for latency,
 *   and back to back for deliveries per second.
 *
 * Subscribers run in a child process (clients.ts) so their event loop is not the servers'.
 * Rounds alternate the platform and the baseline; figures are medians over the rounds.
 * Storage: DATABASE_URL (PostgreSQL) or the embedded PGlite. REALTIME_SUBSCRIBERS (default
 * 1000), REALTIME_CHANGES (default 100) and REALTIME_MESSAGES (default 200) change the
 * sizes, REALTIME_ROUNDS (default 3) the rounds. The last line is one JSON object.
 */
import { loadavg } from 'node:os'
import type { AddressInfo } from 'node:net'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import WebSocket, { WebSocketServer } from 'ws'
import { startHarness } from '../../packages/platform/test/harness.ts'
import { deployDataApp, expectJson, rest, signIn } from '../../packages/platform/test/data-fixture.ts'
import { serveRealtime } from '../../packages/platform/src/realtime/test-realtime.ts'

const SUBSCRIBERS = Number(process.env.REALTIME_SUBSCRIBERS ?? 1000)
const CHANGES = Number(process.env.REALTIME_CHANGES ?? 100)
const MESSAGES = Number(process.env.REALTIME_MESSAGES ?? 200)
const ROUNDS = Number(process.env.REALTIME_ROUNDS ?? 3)
const SPACING_MS = 50
const SLUG = 'benchlive'
const SQL = `
create table ticks (id serial primary key, sent_at double precision not null, body text not null);
alter table ticks enable row level security;
create policy ticks_read on ticks for select using (true);
create policy ticks_write on ticks for insert with check (auth.uid() is not null);
`
const BODY = 'x'.repeat(100)
const now = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function median(values: readonly number[]): number {
  return percentile(values, 50)
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

/** The subscribers' process, one request at a time. */
function clients() {
  const child = fork(fileURLToPath(new URL('./clients.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const waiting: ((message: any) => void)[] = []
  let done: ((message: any) => void) | null = null
  /** The child's clock minus ours (ms), from the round trip with the least delay. */
  let offset = 0
  child.on('message', (message: any) => {
    if (message.type === 'failed') throw new Error(`subscribers failed: ${message.error}`)
    if (message.type === 'done') return done?.(message)
    waiting.shift()?.(message)
  })
  const ask = (command: unknown) => new Promise<any>((resolve) => {
    waiting.push(resolve)
    child.send(command as object)
  })
  return {
    async calibrate(): Promise<void> {
      let best = Number.POSITIVE_INFINITY
      for (let i = 0; i < 20; i++) {
        const before = now()
        const { at } = await ask({ type: 'clock' })
        const after = now()
        if (after - before < best) {
          best = after - before
          offset = at - (before + after) / 2
        }
      }
    },
    open: (port: number, host: string, join: unknown | null) => ask({ type: 'open', port, host, n: SUBSCRIBERS, join }),
    /** Resolves with the time the `count`-th frame arrived, after `run` has sent them. */
    async measure(count: number, run: () => Promise<void>): Promise<{ latencies: number[]; lastAt: number }> {
      await ask({ type: 'expect', count })
      const finished = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not all ${count} frames arrived in 120 s`)), 120_000)
        done = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      await run()
      await finished
      const { latencies, lastAt } = await ask({ type: 'collect' })
      return { latencies: (latencies as number[]).map((value) => value - offset), lastAt: lastAt - offset }
    },
    close: () => ask({ type: 'close' }),
    terminate: () => child.kill(),
  }
}

function socketTo(port: number, host: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/_service/realtime`, { headers: { host }, perMessageDeflate: false })
    ws.once('open', () => resolve(ws))
    ws.once('error', reject)
  })
}

async function main(): Promise<void> {
  const h = await startHarness(undefined, {
    // The bench's own sender broadcasts back to back; sockets may buffer what a burst queues.
    realtime: { settings: { messagesPerSecond: 1_000_000, maxConnections: 1_000_000, maxBufferedBytes: 64 * 1024 * 1024 } },
  })
  const subscribers = clients()
  const bare = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false })
  /** Each figure's value in each round. */
  const results: Record<string, number[]> = {}
  const push = (name: string, value: number) => (results[name] ??= []).push(value)
  try {
    const owner = await h.createOwner('owner@bench.test')
    await deployDataApp(h, owner.token, { slug: SLUG, sql: SQL })
    const writer = await signIn(h, SLUG, 'writer@bench.test')
    const served = await serveRealtime(h)
    const host = `${SLUG}.localhost:8787`
    const insertMs: number[] = []
    const insert = async () => {
      const at = now()
      await expectJson(await rest(h, SLUG, '/ticks', { token: writer.accessToken, json: { sent_at: at, body: BODY } }), 201)
      insertMs.push(now() - at)
    }

    await subscribers.calibrate()
    // The platform's subscribers: a channel with an insert subscription on ticks.
    await subscribers.open(served.port, host, { type: 'join', ref: 'j', channel: 'ticks', config: { changes: [{ event: 'insert', table: 'ticks' }] } })
    const sender = await socketTo(served.port, host)
    sender.send(JSON.stringify({ type: 'join', ref: 's', channel: 'ticks' }))
    await new Promise((resolve) => sender.once('message', resolve))
    const broadcast = () => sender.send(JSON.stringify({ type: 'broadcast', channel: 'ticks', event: 'tick', payload: { sent_at: now(), body: BODY } }))

    // The baseline's subscribers: a bare ws server relaying each message to every other client, the same frames.
    bare.on('connection', (ws) => {
      ws.on('message', (data) => {
        const text = String(data)
        for (const client of bare.clients) if (client !== ws) client.send(text)
      })
    })
    await new Promise((resolve) => (bare.address() ? resolve(null) : bare.once('listening', resolve)))
    const barePort = (bare.address() as AddressInfo).port
    await subscribers.open(barePort, '127.0.0.1', null)
    const bareSender = await socketTo(barePort, '127.0.0.1')
    const bareFrame = () => bareSender.send(JSON.stringify({ type: 'broadcast', channel: 'ticks', event: 'tick', payload: { sent_at: now(), body: BODY } }))

    const spaced = (send: () => unknown) => async () => {
      for (let i = 0; i < CHANGES; i++) {
        await send()
        await sleep(SPACING_MS)
      }
    }
    const rate = (count: number, from: number, lastAt: number) => count / ((lastAt - from) / 1000)
    let t0 = 0
    const burst = (count: number, send: () => unknown) => async () => {
      t0 = now()
      for (let i = 0; i < count; i++) await send()
    }
    // Warm both paths (plans, sockets, JIT).
    await subscribers.measure(10 * SUBSCRIBERS, burst(10, insert))
    await subscribers.measure(10 * SUBSCRIBERS, burst(10, bareFrame))

    // Rounds alternate the platform and the baseline, so the machine's load falls on both.
    for (let round = 0; round < ROUNDS; round++) {
      const changes = await subscribers.measure(CHANGES * SUBSCRIBERS, spaced(insert))
      push('change_latency_p50_ms', percentile(changes.latencies, 50))
      push('change_latency_p99_ms', percentile(changes.latencies, 99))
      const bareSpaced = await subscribers.measure(CHANGES * SUBSCRIBERS, spaced(bareFrame))
      push('bare_latency_p50_ms', percentile(bareSpaced.latencies, 50))
      push('bare_latency_p99_ms', percentile(bareSpaced.latencies, 99))
      const broadcasts = await subscribers.measure(CHANGES * SUBSCRIBERS, spaced(broadcast))
      push('broadcast_latency_p50_ms', percentile(broadcasts.latencies, 50))
      push('broadcast_latency_p99_ms', percentile(broadcasts.latencies, 99))

      const changeBurst = await subscribers.measure(CHANGES * SUBSCRIBERS, burst(CHANGES, insert))
      push('change_deliveries_per_s', rate(CHANGES * SUBSCRIBERS, t0, changeBurst.lastAt))
      const bareBurst = await subscribers.measure(MESSAGES * SUBSCRIBERS, burst(MESSAGES, bareFrame))
      push('bare_deliveries_per_s', rate(MESSAGES * SUBSCRIBERS, t0, bareBurst.lastAt))
      const broadcastBurst = await subscribers.measure(MESSAGES * SUBSCRIBERS, burst(MESSAGES, broadcast))
      push('broadcast_deliveries_per_s', rate(MESSAGES * SUBSCRIBERS, t0, broadcastBurst.lastAt))
    }
    results.insert_p50_ms = [percentile(insertMs.slice(10), 50)]
    sender.close()
    bareSender.close()
    await subscribers.close()
    await served.close()
  } finally {
    subscribers.terminate()
    bare.close()
    await h.close()
  }

  const round = (value: number) => Math.round(value * 100) / 100
  const m: Record<string, number> = Object.fromEntries(Object.entries(results).map(([name, values]) => [name, round(median(values))]))
  const figures = {
    storage: h.t.db.kind,
    subscribers: SUBSCRIBERS,
    changes: CHANGES,
    messages: MESSAGES,
    spacing_ms: SPACING_MS,
    rounds: ROUNDS,
    ...m,
    rounds_change_latency_p50_ms: (results.change_latency_p50_ms ?? []).map(round),
    rounds_bare_latency_p50_ms: (results.bare_latency_p50_ms ?? []).map(round),
    loadavg: loadavg().map((value) => Math.round(value * 100) / 100),
  }
  const ratio = (a: string, b: string) => Math.round((median(results[a]!) / median(results[b]!)) * 1000) / 1000
  console.log(`bench:realtime on ${h.t.db.kind}: ${SUBSCRIBERS} subscribers, ${CHANGES} changes, ${MESSAGES} broadcasts, medians of ${ROUNDS} rounds\n`)
  console.log('| figure | platform | bare ws |')
  console.log('| --- | ---: | ---: |')
  console.log(`| the data API insert alone, p50 (ms; inside the change latency) | ${m.insert_p50_ms} | |`)
  console.log(`| change latency p50 / p99 (ms, one every ${SPACING_MS} ms) | ${m.change_latency_p50_ms} / ${m.change_latency_p99_ms} | ${m.bare_latency_p50_ms} / ${m.bare_latency_p99_ms} |`)
  console.log(`| broadcast latency p50 / p99 (ms) | ${m.broadcast_latency_p50_ms} / ${m.broadcast_latency_p99_ms} | ${m.bare_latency_p50_ms} / ${m.bare_latency_p99_ms} |`)
  console.log(`| change deliveries/s (inserts back to back) | ${m.change_deliveries_per_s} | ${m.bare_deliveries_per_s} |`)
  console.log(`| broadcast deliveries/s (back to back) | ${m.broadcast_deliveries_per_s} | ${m.bare_deliveries_per_s} |`)
  console.log(JSON.stringify({
    bench: 'realtime',
    ratios: {
      change_latency_p50_vs_bare: ratio('change_latency_p50_ms', 'bare_latency_p50_ms'),
      change_latency_p99_vs_bare: ratio('change_latency_p99_ms', 'bare_latency_p99_ms'),
      broadcast_latency_p50_vs_bare: ratio('broadcast_latency_p50_ms', 'bare_latency_p50_ms'),
      broadcast_deliveries_vs_bare: ratio('broadcast_deliveries_per_s', 'bare_deliveries_per_s'),
      change_deliveries_vs_bare: ratio('change_deliveries_per_s', 'bare_deliveries_per_s'),
    },
    figures,
  }))
}

await main()
