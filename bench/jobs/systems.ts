/**
 * The three job systems bench:jobs drives, behind one small interface: the platform's jobs
 * engine (a queue whose consumer is a no-op `system` Function in Deno), graphile-worker and
 * pg-boss (a no-op task in Node). Each gets a fresh database on the same PostgreSQL server,
 * dropped when it stops, and runs 32 jobs at once.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { Logger, run, makeWorkerUtils } from 'graphile-worker'
import PgBoss from 'pg-boss'
import pg from 'pg'
import { migratePlatform } from '../../packages/platform/src/db/migrate.ts'
import { openPostgres } from '../../packages/platform/src/db/postgres.ts'
import { findAppBySlug } from '../../packages/platform/src/apps/apps.ts'
import { findNamespace } from '../../packages/platform/src/namespaces/namespaces.ts'
import { systemClock } from '../../packages/platform/src/lib/clock.ts'
import { newSecret } from '../../packages/platform/src/lib/crypto.ts'
import { silentLogger } from '../../packages/platform/src/lib/logger.ts'
import type { QueueDeclaration } from '../../packages/platform/src/manifest/index.ts'
import { createPlatform } from '../../packages/platform/src/platform.ts'
import { bundle, manifest } from '../../packages/platform/test/harness.ts'

export const CONCURRENCY = 32

/** A job system under test, created with its workers stopped. */
export interface JobSystem {
  readonly name: string
  /** Starts the workers (once). */
  startWorkers(): Promise<void>
  enqueue(i: number): Promise<void>
  /** Resolves when every job enqueued so far has run. */
  drained(): Promise<void>
  /** Resolves when the database records every job enqueued so far as completed. */
  done(): Promise<void>
  stop(): Promise<void>
}

export interface Hooks {
  readonly started: (i: number) => void
  readonly completed: (i: number) => void
}

/** Polls `count` (jobs not yet completed) until it is 0. */
async function untilZero(count: () => Promise<number>): Promise<void> {
  while ((await count()) > 0) await new Promise((resolve) => setTimeout(resolve, 10))
}

async function freshDatabase(adminUrl: string, prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    },
  }
}

function drainTracker(hooks: Hooks) {
  let enqueued = 0
  let completed = 0
  let waiter: (() => void) | undefined
  return {
    enqueued: () => void (enqueued += 1),
    completed: (i: number) => {
      completed += 1
      hooks.completed(i)
      if (completed >= enqueued) waiter?.()
    },
    drained: () => (completed >= enqueued ? Promise.resolve() : new Promise<void>((resolve) => (waiter = resolve))),
  }
}

const QUEUE: QueueDeclaration = { name: 'noop', function: 'noop', concurrency: 100, maxAttempts: 3, retryDelaySeconds: 1, retryBackoff: false, timeoutSeconds: 60 }

/** The platform: createPlatform over PostgreSQL, an app with a queue consumed by a no-op system Function. */
export async function startPlatformJobs(adminUrl: string, hooks: Hooks): Promise<JobSystem> {
  const database = await freshDatabase(adminUrl, 'bench_jobs_platform')
  const db = openPostgres({ url: database.url, maxConnections: 10 })
  await migratePlatform(db)
  const bundlesDir = mkdtempSync(join(tmpdir(), 'bench-jobs-'))
  const operatorKey = newSecret('svc_operator_')
  const platform = createPlatform({
    bundlesDir, db, clock: systemClock, logger: silentLogger, operatorKey,
    config: { baseUrl: new URL('http://localhost:8787'), production: true, smtpUrl: null, mailFrom: 'Bench <bench@localhost>', registration: false },
    masterKey: new Uint8Array(randomBytes(32)),
    jobs: { capacity: CONCURRENCY },
  })
  const call = async (path: string, token: string, body: unknown) => {
    const res = await platform.fetch(new Request(`http://localhost:8787${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    }))
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as Record<string, unknown>
  }
  const { token } = (await call('/v1/operator/users', operatorKey, { email: 'bench@acme.test', company: 'Bench' })) as { token: string }
  await call('/v1/apps', token, { slug: 'jobbench', visibility: 'public' })
  await call('/v1/apps/jobbench/deployments', token, bundle({
    'service.yaml': manifest('jobbench', `functions:
  - name: noop
    entrypoint: functions/noop.ts
    access: system
queues:
  - name: noop
    function: noop
    concurrency: 100
    maxAttempts: 3
    retryDelaySeconds: 1
    timeoutSeconds: 60
`),
    'functions/noop.ts': `
      import { defineFunction, number, object } from '@service/server'
      export default defineFunction({ input: object({ i: number() }), handler: () => null })`,
  }))
  const app = (await findAppBySlug(db, 'jobbench'))!
  const namespace = (await findNamespace(db, app.id))!
  const tracker = drainTracker(hooks)
  // Time the attempt's start where the dispatcher hands it to the Functions host, and its end
  // when the host answers (the job is marked succeeded right after).
  const run = platform.functions.run.bind(platform.functions)
  platform.functions.run = async (fn, options) => {
    const i = (options.input as { i: number }).i
    hooks.started(i)
    const result = await run(fn, options)
    queueMicrotask(() => tracker.completed(i))
    return result
  }
  return {
    name: 'platform',
    startWorkers: () => platform.jobs.start(),
    async enqueue(i) {
      tracker.enqueued()
      // What ctx.jobs.enqueue runs once it has read the queue's declaration: with a free slot,
      // the enqueue starts the job for this process's dispatcher.
      await platform.jobs.enqueueOnQueue({
        appId: app.id, namespaceId: namespace.id, declaration: QUEUE, enqueuedBy: null, now: systemClock.now(),
        request: { queue: 'noop', payload: { i }, idempotencyKey: `job-${i}`, delaySeconds: 0, timeoutMs: null },
      })
    },
    drained: tracker.drained,
    done: () => untilZero(async () => (await db.query<{ n: number }>(`select count(*)::int as n from platform.jobs where state <> 'succeeded'`))[0]!.n),
    async stop() {
      await platform.close()
      await db.close()
      rmSync(bundlesDir, { recursive: true, force: true })
      await database.drop()
    },
  }
}

/** graphile-worker: LISTEN/NOTIFY plus polling, a no-op task. */
export async function startGraphileWorker(adminUrl: string, hooks: Hooks): Promise<JobSystem> {
  const database = await freshDatabase(adminUrl, 'bench_jobs_graphile')
  const tracker = drainTracker(hooks)
  // One pool we end ourselves, so dropping the database afterwards finds no connection left.
  const pool = new pg.Pool({ connectionString: database.url, max: CONCURRENCY + 2 })
  pool.on('error', () => {})
  const utils = await makeWorkerUtils({ pgPool: pool })
  await utils.migrate()
  let runner: Awaited<ReturnType<typeof run>> | undefined
  const startRunner = async () => {
    runner = await run({
    pgPool: pool,
    concurrency: CONCURRENCY,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: new Logger(() => () => {}),
    taskList: {
      noop: async (payload) => {
        const i = (payload as { i: number }).i
        hooks.started(i)
        queueMicrotask(() => tracker.completed(i))
      },
    },
    })
  }
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  return {
    name: 'graphile-worker',
    startWorkers: startRunner,
    async enqueue(i) {
      tracker.enqueued()
      await utils.addJob('noop', { i })
    },
    drained: tracker.drained,
    // Completed jobs are deleted.
    done: () => untilZero(async () => (await sql<{ n: number }[]>`select count(*)::int as n from graphile_worker.jobs`)[0]!.n),
    async stop() {
      await runner?.stop()
      await utils.release()
      await pool.end()
      await sql.end()
      await database.drop()
    },
  }
}

/** pg-boss: polling (0.5 s, its minimum), a no-op handler over batches of up to 32. */
export async function startPgBoss(adminUrl: string, hooks: Hooks): Promise<JobSystem> {
  const database = await freshDatabase(adminUrl, 'bench_jobs_pgboss')
  const tracker = drainTracker(hooks)
  const boss = new PgBoss({ connectionString: database.url, max: 10 })
  boss.on('error', () => {})
  await boss.start()
  await boss.createQueue('noop')
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  return {
    name: 'pg-boss',
    async startWorkers() {
      await boss.work<{ i: number }>('noop', { batchSize: CONCURRENCY, pollingIntervalSeconds: 0.5 }, async (jobs: PgBoss.Job<{ i: number }>[]) => {
        for (const job of jobs) hooks.started(job.data.i)
        queueMicrotask(() => {
          for (const job of jobs) tracker.completed(job.data.i)
        })
      })
    },
    async enqueue(i) {
      tracker.enqueued()
      await boss.send('noop', { i })
    },
    drained: tracker.drained,
    done: () => untilZero(async () => (await sql<{ n: number }[]>`select count(*)::int as n from pgboss.job where name = 'noop' and state <> 'completed'`)[0]!.n),
    async stop() {
      await boss.stop({ graceful: false, wait: true })
      await sql.end()
      await database.drop()
    },
  }
}
