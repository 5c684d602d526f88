/**
 * Test support: a platform process for the events fault test. Run as
 * `node --import tsx test-process.ts <database url> <bundles dir> [capacity]`; it opens the
 * database, starts the event delivery worker with a short lease grace, poll and retry
 * schedule, prints `ready` and runs until it is killed (SIGKILL in the fault test) or sent
 * SIGTERM.
 */
import { openPostgres } from '../../db/postgres.ts'
import { systemClock } from '../../lib/clock.ts'
import { createLogger } from '../../lib/logger.ts'
import { createPlatform } from '../../platform.ts'

const [url, bundlesDir, capacity] = process.argv.slice(2)
if (!url || !bundlesDir) throw new Error('usage: test-process.ts <database url> <bundles dir> [capacity]')
const masterKeyHex = process.env.SERVICE_TEST_MASTER_KEY ?? ''
if (!/^[0-9a-f]{64}$/.test(masterKeyHex)) throw new Error('SERVICE_TEST_MASTER_KEY: the test platform\'s master key, 64 hex digits')
const db = openPostgres({ url, maxConnections: 4 })
const platform = createPlatform({
  bundlesDir,
  config: { baseUrl: new URL('http://localhost:8787'), production: false, smtpUrl: null, mailFrom: 'Service <no-reply@localhost>', registration: false },
  // The test's own platform's key: processes sharing a database share it, or each would take the
  // namespace logins' passwords back from the others and end their sessions.
  masterKey: new Uint8Array(Buffer.from(masterKeyHex, 'hex')),
  db,
  clock: systemClock,
  logger: createLogger({ level: 'error' }),
  operatorKey: 'svc_operator_unused',
  events: { leaseGraceSeconds: 1, pollIntervalMs: 100, capacity: Number(capacity ?? 4), retryDelaysSeconds: [0.2, 0.2, 0.2, 0.5, 1, 1, 1] },
})
await platform.events.start()
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void platform.close().then(() => db.close()).then(() => process.exit(0))
})
