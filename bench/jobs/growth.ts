/**
 * How a claim's cost grows with what waits in the jobs table (issue 14, "Growth"): claims of
 * 32 and single enqueues, timed one by one from Node (the round trip included; claims also
 * inside the server), with a
 * backlog of 3,000 jobs in one queue, 100,000 jobs in 10 queues (10 app namespaces of
 * 10,000 active jobs, the most one namespace may hold), 100,000 jobs over 100 and over 1,000
 * queues, and one queue of 3,000 jobs beside 10,000 queues that once had work and have none
 * now. The jobs are inserted directly (as the enqueue would leave them, counters and marks
 * included) so that a scenario is set up in seconds; each claim's jobs are then recorded as
 * succeeded, untimed, so no queue reaches its concurrency (100).
 *
 * Run alone: npx tsx bench/jobs/growth.ts (a throwaway PostgreSQL unless DATABASE_URL is set;
 * GROWTH_CLAIMS and GROWTH_ENQUEUES change the samples, default 30 and 200). bench:jobs runs it
 * too (JOBS_GROWTH=0 skips it) and puts its figures in its JSON line.
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import postgres from 'postgres'
import type { Db } from '../../packages/platform/src/db/db.ts'
import { migratePlatform } from '../../packages/platform/src/db/migrate.ts'
import { openPostgres } from '../../packages/platform/src/db/postgres.ts'
import { insertIdempotent } from '../../packages/platform/src/jobs/enqueue.ts'
import { claimDueJobs, markSucceeded } from '../../packages/platform/src/jobs/queries.ts'

export interface Scenario {
  readonly name: string
  /** App namespaces (one app each). */
  readonly namespaces: number
  /** Queues with due work per namespace. */
  readonly queues: number
  /** Due jobs per queue. */
  readonly jobs: number
  /** Queues that had work once and have none now, besides. */
  readonly idleQueues?: number
}

export const SCENARIOS: readonly Scenario[] = [
  { name: '3k jobs, 1 queue', namespaces: 1, queues: 1, jobs: 3000 },
  { name: '100k jobs, 10 queues', namespaces: 10, queues: 1, jobs: 10_000 },
  { name: '100k jobs, 100 queues', namespaces: 10, queues: 10, jobs: 1000 },
  { name: '100k jobs, 1,000 queues', namespaces: 10, queues: 100, jobs: 100 },
  { name: '3k jobs, 1 queue + 10,000 idle queues', namespaces: 1, queues: 1, jobs: 3000, idleQueues: 10_000 },
]

export interface GrowthFigure {
  readonly scenario: string
  readonly queued: number
  readonly claim32_p50_ms: number
  readonly claim32_p90_ms: number
  /** The same claim timed inside the server. */
  readonly claim32_in_server_p50_ms: number
  readonly claimed_per_claim: number
  readonly enqueue_p50_ms: number
}

const CLAIMS = Number(process.env.GROWTH_CLAIMS ?? 30)
const ENQUEUES = Number(process.env.GROWTH_ENQUEUES ?? 200)

function quantile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN
}

/** An organisation, an owner and `count` active apps with a production namespace each. */
async function createNamespaces(db: Db, count: number): Promise<{ appId: string; namespaceId: string }[]> {
  const [org] = await db.query<{ id: string }>(`insert into platform.organisations (name) values ('Growth') returning id`)
  const [user] = await db.query<{ id: string }>(
    `insert into platform.users (organisation_id, email) values ($1, 'growth@bench.test') returning id`, [org!.id])
  return await db.query<{ appId: string; namespaceId: string }>(
    `with apps as (
       insert into platform.apps (organisation_id, owner_id, slug, name, visibility)
       select $1, $2, 'growth-' || g, 'Growth ' || g, 'public' from generate_series(1, $3::int) g
       returning id, slug)
     insert into platform.namespaces (app_id, environment, schema_name, role_prefix)
     select a.id, 'production', 'app_' || replace(a.slug, '-', '_'), 'ns_' || substr(md5(a.slug), 1, 12) from apps a
     returning app_id as "appId", id as "namespaceId"`,
    [org!.id, user!.id, count])
}

/**
 * The jobs of a scenario, due a minute ago (one microsecond apart), with what an enqueue
 * keeps beside them: the queue's counters, the namespace's active count and, where the schema
 * has them (migration 0032), the queue's due mark.
 */
async function fill(db: Db, namespaces: readonly { appId: string; namespaceId: string }[], scenario: Scenario): Promise<void> {
  const now = new Date()
  const ids = namespaces.slice(0, scenario.namespaces).map((n) => n.namespaceId)
  await db.query(
    `insert into platform.jobs (app_id, namespace_id, kind, queue, state, payload, payload_sha256, idempotency_key,
       concurrency, max_attempts, retry_delay_seconds, retry_backoff, timeout_seconds, run_at, created_at, updated_at)
     select n.app_id, n.id, 'queue', 'q' || (g % $2), 'queued', '{"i":1}', 'x', 'k' || g,
            100, 3, 1, false, 60, $4::timestamptz - interval '1 minute' + g * interval '1 microsecond', $4, $4
       from platform.namespaces n cross join generate_series(0, $3::int - 1) g
      where n.id = any ($1::uuid[])`,
    [ids, scenario.queues, scenario.queues * scenario.jobs, now])
  if (scenario.idleQueues !== undefined) {
    await db.query(
      `insert into platform.job_queues (namespace_id, queue, claimed)
       select $1::uuid, 'idle' || g, 1 from generate_series(1, $2::int) g`, [ids[0], scenario.idleQueues])
  }
  await db.query(`insert into platform.job_queues (namespace_id, queue) select distinct namespace_id, queue from platform.jobs on conflict do nothing`)
  await db.query(`insert into platform.job_queue_ends (namespace_id, queue, ended) select namespace_id, queue, claimed from platform.job_queues`)
  await db.query(`insert into platform.job_namespaces (namespace_id, active) select namespace_id, count(*) from platform.jobs group by namespace_id`)
  const [marks] = await db.query<{ present: boolean }>(`select to_regclass('platform.job_queue_marks') is not null as present`)
  if (marks!.present) {
    await db.query(`insert into platform.job_queue_marks (namespace_id, queue, next_run_at)
                    select q.namespace_id, q.queue, (select min(j.run_at) from platform.jobs j
                      where j.namespace_id = q.namespace_id and j.queue = q.queue and j.state in ('queued', 'retry_wait'))
                      from platform.job_queues q`)
  }
  await db.exec('analyze platform.jobs; analyze platform.job_queues; analyze platform.job_queue_ends')
  if (marks!.present) await db.exec('analyze platform.job_queue_marks')
}

async function empty(db: Db): Promise<void> {
  await db.exec('truncate platform.jobs, platform.job_queues, platform.job_namespaces cascade')
}

async function measureScenario(db: Db, namespaces: readonly { appId: string; namespaceId: string }[], scenario: Scenario): Promise<GrowthFigure> {
  await fill(db, namespaces, scenario)
  const claims: number[] = []
  const inServer: number[] = []
  let claimed = 0
  for (let k = 0; k < CLAIMS + 3; k++) {
    // Timed twice: from Node (claimDueJobs, the call the dispatcher makes), and inside the
    // server (the same function, the time from the statement's start to its last row), which
    // a busy machine's scheduling of Node and of the connection touches less.
    const t0 = performance.now()
    const jobs = await claimDueJobs(db, { now: new Date(), limit: 32, owner: 'growth', leaseGraceSeconds: 60 })
    const t1 = performance.now()
    await markSucceeded(db, { attempts: jobs.map((job) => ({ id: job.id, attempt: job.attempts })), now: new Date() })
    const [timed] = await db.query<{ ids: string[] | null; attempts: number[] | null; ms: number }>(
      `select array_agg(id) as ids, array_agg(attempts) as attempts,
              extract(epoch from clock_timestamp() - statement_timestamp())::float8 * 1000 as ms
         from platform.claim_jobs($1::timestamptz, 32, 'growth', 60)`, [new Date()])
    await markSucceeded(db, { attempts: (timed!.ids ?? []).map((id, i) => ({ id, attempt: timed!.attempts![i]! })), now: new Date() })
    if (k >= 3) {
      claims.push(t1 - t0)
      inServer.push(timed!.ms)
      claimed += jobs.length
    }
  }
  if (claimed < CLAIMS * 16) throw new Error(`${scenario.name}: the claims took ${claimed} jobs; the scenario is not set up right`)
  const enqueues: number[] = []
  const target = namespaces[0]!
  for (let k = 0; k < ENQUEUES; k++) {
    const now = new Date()
    const t0 = performance.now()
    await insertIdempotent(db, {
      appId: target.appId, namespaceId: target.namespaceId, kind: 'queue', queue: 'q0', payload: { i: k }, payloadSha256: 'x',
      idempotencyKey: `growth-${k}`, enqueuedBy: null, concurrency: 100, maxAttempts: 3, retryDelaySeconds: 1, retryBackoff: false,
      timeoutSeconds: 60, runAt: now, now,
    }, null)
    enqueues.push(performance.now() - t0)
  }
  const queued = scenario.namespaces * scenario.queues * scenario.jobs
  await empty(db)
  return {
    scenario: scenario.name,
    queued,
    claim32_p50_ms: Number(quantile(claims, 0.5).toFixed(2)),
    claim32_p90_ms: Number(quantile(claims, 0.9).toFixed(2)),
    claim32_in_server_p50_ms: Number(quantile(inServer, 0.5).toFixed(2)),
    claimed_per_claim: Number((claimed / CLAIMS).toFixed(1)),
    enqueue_p50_ms: Number(quantile(enqueues, 0.5).toFixed(2)),
  }
}

/** Runs every scenario on a fresh database of the server at `adminUrl`, printing a line each. */
export async function measureGrowth(adminUrl: string, scenarios: readonly Scenario[] = SCENARIOS): Promise<GrowthFigure[]> {
  const name = `bench_jobs_growth_${randomBytes(4).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const db = openPostgres({ url: url.toString(), maxConnections: 2 })
  try {
    await migratePlatform(db)
    const namespaces = await createNamespaces(db, Math.max(...scenarios.map((s) => s.namespaces)))
    const figures: GrowthFigure[] = []
    for (const scenario of scenarios) {
      const figure = await measureScenario(db, namespaces, scenario)
      console.log(`growth  ${figure.scenario.padEnd(38)} claim of 32 p50 ${figure.claim32_p50_ms.toFixed(2)} ms  p90 ${figure.claim32_p90_ms.toFixed(2)} ms  in server p50 ${figure.claim32_in_server_p50_ms.toFixed(2)} ms  (${figure.claimed_per_claim} jobs each)  enqueue p50 ${figure.enqueue_p50_ms.toFixed(2)} ms`)
      figures.push(figure)
    }
    return figures
  } finally {
    await db.close()
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadavg } = await import('node:os')
  const { startServer } = await import('../data/postgres.ts')
  const server = startServer(process.env.DATABASE_URL)
  try {
    console.log(`load average ${loadavg()[0]!.toFixed(1)}`)
    await measureGrowth(server.adminUrl)
    console.log(`load average ${loadavg()[0]!.toFixed(1)}`)
  } finally {
    server.stop()
  }
}
