/**
 * `npm run bench:files` (issue 15): managed-file throughput beside raw disk, in one run, on
 * the local-disk storage adapter (the default):
 *
 * - `ctx.files`: a system Function uploads N zero-filled bytes it allocates itself
 *   (`files.upload`) and another downloads them (`files.download`, returning the length):
 *   the whole path from the Deno worker through the pipe (in 512 KiB pieces past 256 KiB)
 *   to storage and back, including one Function invocation per operation;
 * - the browser SDK's path: `POST /_service/files` and `GET /_service/files/<ref>` as a
 *   signed-in person through the platform's HTTP handler in process, the body streamed in
 *   1 MiB pieces and read back piece by piece (what `service.files` sends and receives);
 * - raw disk: the same bytes written to a new file in the same directory (with fdatasync,
 *   as the adapter does) and read back.
 *
 * Sizes 1 KiB, 1 MiB and 64 MiB; the median of several rounds each. Memory: the platform
 * process's peak RSS above its level before, sampled every 5 ms during each size's rounds
 * of each path, so 64 MiB can be set beside 1 MiB (the Deno worker is a separate process
 * and holds the Function's own array).
 *
 * Environment: DATABASE_URL (else the embedded PGlite). The last line is one JSON object.
 */
import { createReadStream } from 'node:fs'
import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { bundle, manifest, startHarness } from '../../packages/platform/test/harness.ts'
import { signIn } from '../../packages/platform/test/data-fixture.ts'
import { findAppBySlug } from '../../packages/platform/src/apps/apps.ts'

const KIB = 1024
const MIB = 1024 * 1024
const SIZES = [{ label: '1KiB', bytes: KIB, rounds: 40 }, { label: '1MiB', bytes: MIB, rounds: 15 }, { label: '64MiB', bytes: 64 * MIB, rounds: 3 }]

const YAML = `functions:
  - name: put
    entrypoint: functions/put.ts
    access: system
  - name: get
    entrypoint: functions/get.ts
    access: system
`
const PUT = `
import { defineFunction, number, object } from '@service/server'
export default defineFunction({
  input: object({ size: number() }),
  async handler({ input, files }) {
    return { ref: await files.upload({ data: new Uint8Array(input.size).fill(7), name: 'bench.bin', contentType: 'application/octet-stream' }) }
  },
})`
const GET = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ ref: string() }),
  async handler({ input, files }) {
    const file = await files.download(input.ref)
    return { length: file.data.byteLength }
  },
})`

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** Peak RSS above the level at start, sampled every 5 ms while `work` runs. */
async function peakRss<T>(work: () => Promise<T>): Promise<{ value: T; peakMiB: number }> {
  globalThis.gc?.()
  const base = process.memoryUsage().rss
  let peak = base
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 5)
  try {
    const value = await work()
    peak = Math.max(peak, process.memoryUsage().rss)
    return { value, peakMiB: (peak - base) / MIB }
  } finally {
    clearInterval(timer)
  }
}

function pieces(total: number): ReadableStream<Uint8Array> {
  let sent = 0
  const piece = new Uint8Array(Math.min(total, MIB)).fill(7)
  return new ReadableStream({
    pull(controller) {
      if (sent >= total) return controller.close()
      const size = Math.min(piece.byteLength, total - sent)
      controller.enqueue(size === piece.byteLength ? piece.slice() : piece.subarray(0, size).slice())
      sent += size
    },
  })
}

async function drain(body: ReadableStream<Uint8Array> | null): Promise<number> {
  let length = 0
  if (body === null) return 0
  for await (const chunk of body) length += chunk.byteLength
  return length
}

const h = await startHarness()
const scratch = await mkdtemp(join(tmpdir(), 'bench-files-raw-'))
try {
  const { token } = await h.createOwner('bench@files.test')
  if ((await h.request('/v1/apps', { token, json: { slug: 'benchfiles', visibility: 'public' } })).status !== 201) throw new Error('app')
  const deployed = await h.request('/v1/apps/benchfiles/deployments', {
    token, json: bundle({ 'service.yaml': manifest('benchfiles', YAML), 'functions/put.ts': PUT, 'functions/get.ts': GET }),
  })
  if (deployed.status !== 201) throw new Error(await deployed.text())
  const app = (await findAppBySlug(h.t.db, 'benchfiles'))!
  const put = (await h.platform.functions.resolve(app, 'put'))!
  const get = (await h.platform.functions.resolve(app, 'get'))!
  const person = await signIn(h, 'benchfiles', 'reader@files.test')

  async function ctxUpload(size: number): Promise<string> {
    const result = await h.platform.functions.run(put, { input: { size }, user: null })
    if (!result.ok || !('value' in result)) throw new Error(JSON.stringify(result))
    return (result.value as { ref: string }).ref
  }
  async function ctxDownload(ref: string, size: number): Promise<void> {
    const result = await h.platform.functions.run(get, { input: { ref }, user: null })
    if (!result.ok || !('value' in result) || (result.value as { length: number }).length !== size) throw new Error(JSON.stringify(result))
  }
  async function sdkUpload(size: number): Promise<string> {
    const res = await h.request('/_service/files', {
      host: 'benchfiles', method: 'POST', token: person.accessToken,
      headers: { 'x-service-sdk': '1', 'content-type': 'application/octet-stream', 'x-file-name': 'bench.bin' },
      body: pieces(size), duplex: 'half',
    } as RequestInit & { duplex: 'half' })
    if (res.status !== 201) throw new Error(await res.text())
    return ((await res.json()) as { ref: string }).ref
  }
  async function sdkDownload(ref: string, size: number): Promise<void> {
    const res = await h.request(`/_service/files/${ref}`, { host: 'benchfiles', token: person.accessToken, headers: { 'x-service-sdk': '1' } })
    if (res.status !== 200 || (await drain(res.body)) !== size) throw new Error(`download ${res.status}`)
  }
  let rawSequence = 0
  async function rawWrite(size: number): Promise<string> {
    const path = join(scratch, `raw-${(rawSequence += 1)}`)
    const handle = await open(path, 'wx')
    const piece = new Uint8Array(Math.min(size, MIB)).fill(7)
    for (let written = 0; written < size; written += piece.byteLength) await handle.write(piece, 0, Math.min(piece.byteLength, size - written))
    await handle.datasync()
    await handle.close()
    return path
  }
  async function rawRead(path: string, size: number): Promise<void> {
    // Streamed in pieces, as storage and the SDK read.
    let length = 0
    for await (const chunk of createReadStream(path, { highWaterMark: 256 * KIB })) length += (chunk as Buffer).byteLength
    if (length !== size) throw new Error('raw read')
  }

  const paths = {
    ctx_files: { upload: ctxUpload, download: ctxDownload },
    browser_sdk: { upload: sdkUpload, download: sdkDownload },
    raw_disk: { upload: rawWrite, download: rawRead },
  } as const
  const figures: Record<string, number> = {}
  // Warm-up: the Functions pool and both HTTP paths.
  for (const path of Object.values(paths)) await path.download(await path.upload(KIB), KIB)

  for (const size of SIZES) {
    for (const [name, path] of Object.entries(paths)) {
      const up: number[] = []
      const down: number[] = []
      const measure = async () => {
        for (let round = 0; round < size.rounds; round += 1) {
          let started = performance.now()
          const ref = await path.upload(size.bytes)
          up.push(performance.now() - started)
          started = performance.now()
          await path.download(ref, size.bytes)
          down.push(performance.now() - started)
        }
      }
      figures[`${name}_${size.label}_peak_rss_mib`] = Math.round((await peakRss(measure)).peakMiB * 10) / 10
      const mbps = (ms: number) => Math.round((size.bytes / MIB / (ms / 1000)) * 10) / 10
      figures[`${name}_upload_${size.label}_ms`] = Math.round(median(up) * 100) / 100
      figures[`${name}_download_${size.label}_ms`] = Math.round(median(down) * 100) / 100
      figures[`${name}_upload_${size.label}_mib_s`] = mbps(median(up))
      figures[`${name}_download_${size.label}_mib_s`] = mbps(median(down))
      console.log(`${size.label.padStart(5)} ${name.padEnd(11)} upload ${median(up).toFixed(2).padStart(9)} ms (${mbps(median(up))} MiB/s)  download ${median(down).toFixed(2).padStart(9)} ms (${mbps(median(down))} MiB/s)`)
    }
  }
  const ratios: Record<string, number> = {}
  for (const size of SIZES) {
    for (const name of ['ctx_files', 'browser_sdk']) {
      for (const way of ['upload', 'download']) {
        ratios[`${name}_${way}_${size.label}_vs_raw`] = Math.round((figures[`${name}_${way}_${size.label}_ms`]! / figures[`raw_disk_${way}_${size.label}_ms`]!) * 100) / 100
      }
    }
  }
  console.log(JSON.stringify({ bench: 'files', backend: process.env.DATABASE_URL ? 'postgres' : 'pglite', ratios, figures }))
} finally {
  await h.close()
  await rm(scratch, { recursive: true, force: true })
}
