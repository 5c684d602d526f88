/**
 * The platform under test, in its own process (so the load generator does not share its
 * event loop): PostgreSQL through DATABASE_URL's driver adapter or PGlite in memory, platform
 * migrations, `createPlatform` served by @hono/node-server on a loopback port, exactly as
 * `main.ts` serves it, then the benchmark app. Driven by the parent over IPC (protocol.ts).
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { serve } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import type { Db } from '../../packages/platform/src/db/db.ts'
import { migratePlatform } from '../../packages/platform/src/db/migrate.ts'
import { openPglite } from '../../packages/platform/src/db/pglite.ts'
import { openPostgres } from '../../packages/platform/src/db/postgres.ts'
import { systemClock } from '../../packages/platform/src/lib/clock.ts'
import { newSecret } from '../../packages/platform/src/lib/crypto.ts'
import { silentLogger } from '../../packages/platform/src/lib/logger.ts'
import { createPlatform, type Platform } from '../../packages/platform/src/platform.ts'
import { countingDb } from './counting-db.ts'
import { prepareFixture } from './fixture.ts'
import type { FromServer, ToServer } from './protocol.ts'

function send(message: FromServer): void {
  process.send?.(message)
}

let db: ReturnType<typeof countingDb> | undefined
let stopServer: (() => void) | undefined
let profiling: { requests: number; serverMs: number } | null = null

async function start(message: Extract<ToServer, { type: 'start' }>): Promise<void> {
  let raw: Db
  if (message.storage === 'postgres') {
    if (!message.databaseUrl) throw new Error('postgres storage needs a database URL')
    raw = openPostgres({ url: message.databaseUrl })
  } else {
    raw = await openPglite()
  }
  await migratePlatform(raw)
  const counted = countingDb(raw)
  db = counted

  let platform: Platform | undefined
  const fetch = async (request: Request): Promise<Response> => {
    if (!platform) return new Response('starting', { status: 503 })
    if (!profiling) return platform.fetch(request)
    const t0 = performance.now()
    const response = await platform.fetch(request)
    profiling.requests++
    profiling.serverMs += performance.now() - t0
    return response
  }
  const port = await new Promise<number>((resolve) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(info.port))
    stopServer = () => server.close()
  })
  const operatorKey = newSecret('svc_operator_')
  const masterKey = new Uint8Array(randomBytes(32))
  platform = createPlatform({
    config: {
      baseUrl: new URL(`http://localhost:${port}`),
      production: true,
      smtpUrl: null,
      mailFrom: 'Bench <no-reply@localhost>',
      registration: false,
      ...(message.appPoolSize !== undefined ? { appPoolSize: message.appPoolSize } : {}),
    },
    db: counted,
    clock: systemClock,
    logger: silentLogger,
    operatorKey,
    masterKey,
  })
  const fixture = await prepareFixture(
    { platform, db: counted, clock: systemClock, port, operatorKey, masterKey },
    { rows: message.rows, categories: message.categories, ...(message.extraApps ? { extraApps: message.extraApps } : {}) },
  )
  send({ type: 'ready', fixture: { port, ...fixture } })
}

async function stop(): Promise<void> {
  stopServer?.()
  await db?.close()
  process.exit(0)
}

process.on('message', (message: ToServer) => {
  switch (message.type) {
    case 'start':
      start(message).catch((error: unknown) => {
        send({ type: 'failed', message: error instanceof Error ? error.stack ?? error.message : String(error) })
      })
      return
    case 'profile':
      if (message.on) {
        profiling = { requests: 0, serverMs: 0 }
        db?.setCounting(true)
      } else {
        const profile = profiling && db ? { ...profiling, statements: db.statements() } : null
        db?.setCounting(false)
        profiling = null
        send({ type: 'profile', profile })
      }
      return
    case 'stop':
      void stop()
      return
  }
})
// The benchmark went away (crashed or was interrupted): do not outlive it.
process.on('disconnect', () => void stop())
