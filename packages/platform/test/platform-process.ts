/**
 * A platform process for the multi-process tests, run as a child by platform-processes.ts:
 * `node --import tsx platform-process.ts <database url> <bundles dir> <jobs|events|sync|push|email> <capacity>`
 * with SERVICE_TEST_MASTER_KEY set. It opens the database with the test platform's master key
 * (processes sharing a database share it, or each would take the namespace logins' passwords
 * back from the others and end their sessions), starts the one worker named with short
 * leases, polls and retries (the sync scheduler ticks every 200 ms, and its Functions may
 * reach loopback, where the sync tests' reporter listens; the push worker posts to loopback
 * http endpoints, where the push tests' push service listens, with a 1 s request timeout; the email
 * workers send app mail to SERVICE_TEST_SMTP_URL, the email tests' SMTP server), prints `ready` and runs until it is
 * killed (SIGKILL in the crash tests) or sent SIGTERM. SERVICE_TEST_CLOCK_OFFSET_MS, when set,
 * shifts its clock from real time (the processes of one test share one offset, as a
 * deployment's processes share one clock), so a test reaches a schedule's occurrence in
 * seconds. The realtime worker serves the platform over HTTP (WebSocket upgrades included) on
 * 127.0.0.1:SERVICE_TEST_HTTP_PORT and runs realtime, for the tests of sockets on two processes.
 */
import type { Server } from 'node:http'
import { serve } from '@hono/node-server'
import { openPostgres } from '../src/db/postgres.ts'
import { systemClock, type Clock } from '../src/lib/clock.ts'
import { createLogger } from '../src/lib/logger.ts'
import { createPlatform } from '../src/platform.ts'

const [url, bundlesDir, worker, capacityText] = process.argv.slice(2)
if (!url || !bundlesDir || (worker !== 'jobs' && worker !== 'events' && worker !== 'sync' && worker !== 'push' && worker !== 'email' && worker !== 'realtime')) {
  throw new Error('usage: platform-process.ts <database url> <bundles dir> <jobs|events|sync|push|email|realtime> <capacity>')
}
const masterKeyHex = process.env.SERVICE_TEST_MASTER_KEY ?? ''
if (!/^[0-9a-f]{64}$/.test(masterKeyHex)) throw new Error('SERVICE_TEST_MASTER_KEY: the test platform\'s master key, 64 hex digits')
const offsetMs = Number(process.env.SERVICE_TEST_CLOCK_OFFSET_MS ?? '0')
if (!Number.isSafeInteger(offsetMs)) throw new Error('SERVICE_TEST_CLOCK_OFFSET_MS: whole milliseconds')
const clock: Clock = offsetMs === 0 ? systemClock : { now: () => new Date(Date.now() + offsetMs) }
const capacity = Number(capacityText)
const db = openPostgres({ url, maxConnections: 4 })
const platform = createPlatform({
  bundlesDir,
  config: { baseUrl: new URL('http://localhost:8787'), production: false, smtpUrl: null, mailFrom: 'Service <no-reply@localhost>', registration: false },
  masterKey: new Uint8Array(Buffer.from(masterKeyHex, 'hex')),
  db,
  clock,
  logger: createLogger({ level: 'error' }),
  operatorKey: 'svc_operator_unused',
  jobs: { leaseGraceSeconds: 1, pollIntervalMs: 100, capacity },
  events: { leaseGraceSeconds: 1, pollIntervalMs: 100, capacity, retryDelaysSeconds: [0.2, 0.2, 0.2, 0.5, 1, 1, 1] },
  sync: { intervalMs: 200, capacity },
  push: { allowLoopbackHttp: true, leaseGraceSeconds: 1, pollIntervalMs: 100, capacity, requestTimeoutMs: 1000, retryDelaysSeconds: [0.2, 0.5, 1, 1] },
  // App email over SERVICE_TEST_SMTP_URL (a test SMTP server on loopback), with 3-second leases.
  email: {
    smtpUrl: process.env.SERVICE_TEST_SMTP_URL || null,
    delivery: { leaseSeconds: 3, pollIntervalMs: 100, capacity, retryDelaysSeconds: [0.2, 0.2, 0.5, 1, 1, 1, 1, 1] },
    inbound: { leaseGraceSeconds: 1, pollIntervalMs: 100, capacity, retryDelaysSeconds: [0.2, 0.5, 1, 1] },
  },
  ...(worker === 'sync' ? { functionsAllowNet: ['127.0.0.1'] } : {}),
})
if (worker === 'jobs') await platform.jobs.start()
else if (worker === 'events') await platform.events.start()
else if (worker === 'push') await platform.push.worker.start()
else if (worker === 'email') await platform.email.start()
else if (worker === 'realtime') {
  const server = serve({ fetch: platform.fetch, port: Number(process.env.SERVICE_TEST_HTTP_PORT), hostname: '127.0.0.1' }) as Server
  server.on('upgrade', platform.realtime.upgrade)
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())))
  await platform.realtime.start()
} else platform.sync.start()
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void platform.close().then(() => db.close()).then(() => process.exit(0))
})
