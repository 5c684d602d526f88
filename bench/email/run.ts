/**
 * `npm run bench:email` (issue 17): outbound app email through the platform's durable queue
 * beside nodemailer straight to the same SMTP server, in the same run:
 *
 * - direct: 8 senders hand N messages to one pooled nodemailer transport (8 connections),
 *   each awaiting its message's 250; the figure is N over the time from the first send
 *   until the server has accepted the last;
 * - queue: 8 producers call ctx.email.send's platform side (`platform.email.answer`: the
 *   checks, the alias, the hourly budget and the commit to platform.email_outbox, without the
 *   Functions worker pipe) N times while the delivery worker (capacity 8, the same pooled
 *   transport settings) runs; the figure is N over the time from the first send until the
 *   server has accepted the last (the commit of `sent` follows; its time is reported too);
 * - accept: the producers' rate alone (N over the time until the last send returned).
 *
 * The SMTP server is smtp-server on loopback that reads each message to its end and answers
 * 250 (no parsing). Rounds alternate the two paths so a change in the machine's load falls on
 * both; figures are medians over the rounds. Storage: DATABASE_URL (PostgreSQL) or the
 * embedded PGlite. EMAIL_N (default 1000) and EMAIL_ROUNDS (default 3) change the sizes. The
 * last line is one JSON object.
 */
import type { AddressInfo } from 'node:net'
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { createTransport } from 'nodemailer'
import { SMTPServer } from 'smtp-server'
import { startHarness } from '../../packages/platform/test/harness.ts'
import { emailBundle } from '../../packages/platform/src/email/test-app.ts'
import { findAppBySlug } from '../../packages/platform/src/apps/apps.ts'
import { findNamespace } from '../../packages/platform/src/namespaces/namespaces.ts'

const N = Number(process.env.EMAIL_N ?? 1000)
const ROUNDS = Number(process.env.EMAIL_ROUNDS ?? 3)
const SENDERS = 8
const SLUG = 'benchmail'

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

/** An SMTP server that takes every message and counts it. */
async function countingServer(): Promise<{ url: string; accepted: () => number; close: () => Promise<void> }> {
  let accepted = 0
  const server = new SMTPServer({
    authOptional: true, disabledCommands: ['AUTH', 'STARTTLS'], logger: false, closeTimeout: 100,
    onData(stream, _session, callback) {
      stream.on('data', () => {})
      stream.on('end', () => {
        accepted += 1
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const { port } = server.server.address() as AddressInfo
  return { url: `smtp://127.0.0.1:${port}`, accepted: () => accepted, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 2))
}

/** `count` tasks over `workers` concurrent loops. */
async function inParallel(count: number, workers: number, task: (index: number) => Promise<unknown>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: workers }, async () => {
    while (next < count) {
      const index = next++
      await task(index)
    }
  }))
}

const message = (i: number) => ({ subject: `Bench ${i}`, text: `Hello number ${i}\n`.repeat(20), html: `<p>Hello number ${i}</p>` })

async function main(): Promise<void> {
  const smtp = await countingServer()
  const h = await startHarness(undefined, {
    email: { smtpUrl: smtp.url, settings: { recipientsPerHour: 1_000_000 }, delivery: { capacity: SENDERS, pollIntervalMs: 1000 } },
  })
  const { token } = await h.createOwner('owner@bench.test')
  await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })
  const deployed = await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: emailBundle(SLUG, { inbound: false }) })
  if (deployed.status !== 201) throw new Error(`deploy failed: ${await deployed.text()}`)
  const app = (await findAppBySlug(h.t.db, SLUG))!
  const namespace = (await findNamespace(h.t.db, app.id))!
  const transport = createTransport({ url: smtp.url, pool: true, maxConnections: SENDERS, maxMessages: Infinity })
  const direct: number[] = []
  const queue: number[] = []
  const queueSent: number[] = []
  const accept: number[] = []
  try {
    await h.platform.email.start()
    // Warm both paths (connections, prepared plans).
    await inParallel(50, SENDERS, (i) => transport.sendMail({ from: `support@${SLUG}.localhost`, to: 'warm@example.com', ...message(i) }))
    const warmStart = smtp.accepted()
    await inParallel(50, SENDERS, (i) => h.platform.email.answer({
      appId: app.id, releaseId: app.activeReleaseId!, namespaceId: namespace.id, method: 'send',
      args: [{ from: 'support', to: 'warm@example.com', ...message(i) }],
    }))
    await until(() => smtp.accepted() >= warmStart + 50)

    for (let round = 0; round < ROUNDS; round++) {
      let base = smtp.accepted()
      let t0 = performance.now()
      await inParallel(N, SENDERS, (i) => transport.sendMail({ from: `support@${SLUG}.localhost`, to: `r${i}@example.com`, ...message(i) }))
      await until(() => smtp.accepted() >= base + N)
      direct.push(N / ((performance.now() - t0) / 1000))

      base = smtp.accepted()
      t0 = performance.now()
      const ids: string[] = []
      await inParallel(N, SENDERS, async (i) => {
        const { id } = await h.platform.email.answer({
          appId: app.id, releaseId: app.activeReleaseId!, namespaceId: namespace.id, method: 'send',
          args: [{ from: 'support', to: `r${i}@example.com`, ...message(i) }],
        }) as { id: string }
        ids.push(id)
      })
      accept.push(N / ((performance.now() - t0) / 1000))
      await until(() => smtp.accepted() >= base + N)
      queue.push(N / ((performance.now() - t0) / 1000))
      await until(async () => {
        const [row] = await h.t.db.query<{ n: number }>(`select count(*)::int as n from platform.email_outbox where id = any($1::uuid[]) and state = 'sent'`, [ids])
        return row!.n === N
      })
      queueSent.push(N / ((performance.now() - t0) / 1000))
      await h.t.db.query(`delete from platform.email_outbox`)
    }
  } finally {
    transport.close()
    await h.close()
    await smtp.close()
  }
  const round = (value: number) => Math.round(value * 10) / 10
  const figures = {
    storage: h.t.db.kind,
    n: N,
    rounds: ROUNDS,
    senders: SENDERS,
    direct_msgs_per_s: round(median(direct)),
    queue_msgs_per_s: round(median(queue)),
    queue_to_sent_msgs_per_s: round(median(queueSent)),
    queue_accept_msgs_per_s: round(median(accept)),
    direct_rounds: direct.map(round),
    queue_rounds: queue.map(round),
    loadavg: loadavg().map((value) => Math.round(value * 100) / 100),
  }
  console.log(`bench:email on ${h.t.db.kind}: ${N} messages a round, ${ROUNDS} rounds, ${SENDERS} senders/connections\n`)
  console.log('| figure | messages/s (median) |')
  console.log('| --- | ---: |')
  console.log(`| nodemailer straight to the SMTP server | ${figures.direct_msgs_per_s} |`)
  console.log(`| through the durable queue, send to the server's 250 | ${figures.queue_msgs_per_s} |`)
  console.log(`| through the durable queue, send to \`sent\` committed | ${figures.queue_to_sent_msgs_per_s} |`)
  console.log(`| accepting sends alone (commit to email_outbox) | ${figures.queue_accept_msgs_per_s} |`)
  console.log(JSON.stringify({ bench: 'email', ratios: { queue_vs_direct: Math.round((median(queue) / median(direct)) * 1000) / 1000 }, figures }))
}

await main()
