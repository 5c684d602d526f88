/**
 * Starts the platform: configuration, storage (PGlite in SERVICE_DATA_DIR, or DATABASE_URL),
 * platform migrations, the example apps on first start, the HTTP server; prints the URLs
 * that matter, and shuts down gracefully (PGlite flushed to disk) on SIGINT/SIGTERM.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import { loadConfig } from './config.ts'
import { openDatabase } from './db/open.ts'
import { migratePlatform } from './db/migrate.ts'
import { refreshNamespaceWrappers } from './namespaces/namespaces.ts'
import { systemClock } from './lib/clock.ts'
import { createLogger } from './lib/logger.ts'
import { createPlatform } from './platform.ts'
import { deployExamples } from './deploy/examples.ts'
import { enforceConfirmationDeadlines, ensureOperatorKey } from './identity/index.ts'
import { loadMasterKey } from './lib/master-key.ts'
import { purgeFunctionLogs } from './functions/index.ts'
import { readBannerFacts, startupBanner } from './startup-banner.ts'

const config = loadConfig()
const logger = createLogger({ level: config.logLevel })
const db = await openDatabase(config, { logger })
await migratePlatform(db, { logger })
// Namespaces made by an older platform get this version's wrappers (security fixes included).
await refreshNamespaceWrappers(db)
const operatorKey = ensureOperatorKey(config)
const masterKey = loadMasterKey({ dataDir: config.dataDir, fromEnv: config.masterKey })
const platform = createPlatform({ config, db, clock: systemClock, logger, operatorKey: operatorKey.value, masterKey })
const examples = config.deployExamples
  ? await deployExamples({ db, clock: systemClock, logger, dir: config.examplesDir, baseUrl: config.baseUrl, masterKey })
  : []
const bannerFacts = await readBannerFacts(db)

const server = serve({ fetch: platform.fetch, port: config.port, hostname: config.host }, () => {
  logger.info('platform started', { url: platform.urls.base, storage: db.describe(), apps: bannerFacts.apps.length + bannerFacts.moreApps })
  console.log(startupBanner({
    urls: platform.urls,
    storage: db.describe(),
    devMailbox: !config.smtpUrl,
    operatorKey: operatorKey.source,
    facts: bannerFacts,
    deployedNow: new Set(examples.filter((e) => e.deployedNow).map((e) => e.slug)),
  }).join('\n'))
})

// Realtime sockets: WebSocket handshakes at {app_url}/_service/realtime, admitted by the app edge.
server.on('upgrade', platform.realtime.upgrade)

// The CLI finds this platform through the URL recorded in its data directory (docs/decisions.md).
server.once('listening', () => {
  try {
    mkdirSync(config.dataDir, { recursive: true })
    writeFileSync(join(config.dataDir, 'url'), `${platform.urls.base}\n`)
  } catch (error) {
    logger.warn('cannot record the platform URL for the CLI', { dataDir: config.dataDir, error: (error as Error).message })
  }
})

// Accounts that missed their 24-hour confirmation deadline: pause their apps.
const deadlines = setInterval(() => {
  enforceConfirmationDeadlines(db, systemClock).catch((error: Error) =>
    logger.error('confirmation deadline sweep failed', { error: error.message }))
}, 60 * 1000)
deadlines.unref()

// Function log lines are kept 14 days (docs/decisions.md); purged hourly.
const logRetention = setInterval(() => {
  purgeFunctionLogs(db, systemClock).catch((error: Error) =>
    logger.error('function log purge failed', { error: error.message }))
}, 60 * 60 * 1000)
logRetention.unref()

// Background jobs and cron runs: the dispatcher (shares the work with every other process
// on this database) and the 14-day retention purge.
await platform.jobs.start()
logger.info('jobs dispatcher started')
// Integration events: the delivery worker (shares the work like the jobs dispatcher) and its 14-day retention purge.
await platform.events.start()
logger.info('integration event delivery worker started')
// Web push: the VAPID key pair (made on first start), then the delivery worker (shares the work like the jobs dispatcher).
await platform.push.worker.start()
logger.info('push delivery worker started')
// App email: the outbound delivery and inbound workers (they share the work like the jobs dispatcher), their
// 14-day retention purge, and the inbound SMTP listener when INBOUND_SMTP_PORT is set.
await platform.email.start()
logger.info('email workers started', { inboundSmtp: config.email.inboundPort })
// Realtime: the row-change feed, broadcast and presence between processes, authority re-checks.
await platform.realtime.start()
logger.info('realtime started')
// Cron: one process at a time (a lease) turns due occurrences into jobs.
platform.cron.start()
logger.info('cron scheduler started')
// Integration sync: every process evaluates; a lease per connection keeps runs from overlapping.
platform.sync.start()
logger.info('integration sync scheduler started')

/**
 * One shutdown step, bounded: a step that fails or hangs is logged and the shutdown goes
 * on, so the database is always closed (PGlite flushed) and the process always exits.
 */
async function shutdownStep(step: { name: string; limitMs: number }, run: () => Promise<unknown>): Promise<void> {
  const { name, limitMs } = step
  let timer: ReturnType<typeof setTimeout> | undefined
  const outcome = await Promise.race([
    run().then(() => 'done', (error: unknown) => `failed: ${error instanceof Error ? error.message : String(error)}`),
    new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`gave up after ${limitMs} ms`), limitMs))),
  ])
  clearTimeout(timer)
  if (outcome !== 'done') logger.error('shutdown step did not finish', { step: name, outcome })
}

// At most about 40 s in all (usually much less): the job dispatcher waits up to 20 s for running attempts (an
// attempt it abandons is safe: its lease expires and another process retries it).
let stopping = false
async function shutdown(signal: string) {
  if (stopping) return
  stopping = true
  logger.info('shutting down', { signal })
  clearInterval(deadlines)
  clearInterval(logRetention)
  // Sockets are told to reconnect (1001), to another process behind the load balancer.
  await shutdownStep({ name: 'realtime', limitMs: 3_000 }, () => platform.realtime.stop())
  await shutdownStep({ name: 'cron', limitMs: 3_000 }, () => platform.cron.stop())
  // Job attempts, event deliveries and sync runs in flight end (or are abandoned to their leases) together.
  await Promise.all([
    shutdownStep({ name: 'jobs', limitMs: 21_000 }, () => platform.jobs.stop()),
    shutdownStep({ name: 'events', limitMs: 21_000 }, () => platform.events.stop()),
    shutdownStep({ name: 'push', limitMs: 11_000 }, () => platform.push.worker.stop()),
    shutdownStep({ name: 'email', limitMs: 21_000 }, () => platform.email.stop()),
    // Sync runs still going after 5 s are left to their leases (another process runs the next occurrence).
    shutdownStep({ name: 'sync', limitMs: 6_000 }, () => platform.sync.stop()),
  ])
  server.close()
  await shutdownStep({ name: 'platform', limitMs: 3_000 }, () => platform.close())
  await shutdownStep({ name: 'database', limitMs: 10_000 }, () => db.close())
  process.exit(0)
}
process.on('SIGINT', () => void shutdown('SIGINT'))
process.on('SIGTERM', () => void shutdown('SIGTERM'))
