/**
 * Durable background jobs (spec 2.5 queues, 2.12, 3.1, 4.3 `ctx.jobs`, 6.3, 8): the
 * feature's public surface. `createJobs` answers `ctx.jobs` calls, runs the dispatcher and
 * the 14-day retention purge; `jobRoutes` is the owner API; `deadLetterRemovedQueues` is
 * the deploy hook; `enqueueCronRun` is how cron runs become jobs.
 */
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError, ServiceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import type { FunctionHost, JobsContextCall } from '../functions/index.ts'
import type { QueueDeclaration } from '../manifest/index.ts'
import { createDispatcher, type Dispatcher, type DispatcherOptions } from './dispatcher.ts'
import { enqueueOnQueue, readEnqueueArgs, type QueueEnqueue } from './enqueue.ts'
import type { JobRow } from './queries.ts'
import { deadLetterUndeclared, findJob } from './queries.ts'
import { purgeExpiredJobs, reconcileActiveCounts } from './retention.ts'
import { jobView, type JobView } from './views.ts'
import type { Queryable } from '../db/db.ts'

export { enqueueCronRun, listActiveCrons, cronQueueName, type ActiveCrons, type CronRun } from './cron-runs.ts'
export { jobRoutes } from './routes.ts'
export { appJob, appJobScope } from './app-jobs.ts'
export { jobHistory, jobSignals, PAGE_SIZES, type JobHistory, type JobScope, type QueueTotals, type Signals } from './history.ts'
export { jobTimeline, queuePolicies, type JobTimeline, type StateCounts } from './timeline.ts'
export { JOB_LIMITS } from './enqueue.ts'
export { RETENTION_MS, purgeExpiredJobs } from './retention.ts'
export type { JobView } from './views.ts'

/** Tuning a deployment (or a test) may change. */
export interface JobsOptions extends DispatcherOptions {
  /** How often the retention purge runs. Default one hour. */
  readonly purgeIntervalMs?: number
}

export interface JobsDeps extends JobsOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  readonly functions: FunctionHost
  readonly production: boolean
}

export interface Jobs {
  /** Answers a `ctx.jobs` call (`enqueue`, `get`) from a running Function. */
  answer(call: JobsContextCall): Promise<unknown>
  /**
   * Enqueues on a declared queue as `ctx.jobs.enqueue` does once it has read the declaration:
   * a job that can start at once starts in the enqueue's statement, in a free slot of this
   * process's dispatcher (enqueue.ts, enqueueOnQueue).
   *
   * @example
   * await jobs.enqueueOnQueue({ appId, namespaceId, declaration, request, enqueuedBy: null, now: clock.now() })
   */
  enqueueOnQueue(input: Omit<QueueEnqueue, 'dispatcher'>): Promise<{ row: JobRow; created: boolean }>
  /** Starts the dispatcher and the retention purge. */
  start(): Promise<void>
  /** Stops both; waits for attempts in flight. */
  stop(): Promise<void>
  /** One dispatch pass, awaited to its end (see Dispatcher.runDue). */
  runDue(): Promise<number>
  /** Deletes terminal jobs past retention; returns how many. */
  purge(): Promise<number>
}

/**
 * @example
 * const jobs = createJobs({ db, clock, logger, functions, production: true })
 * await jobs.start()
 */
export function createJobs(deps: JobsDeps): Jobs {
  const dispatcher: Dispatcher = createDispatcher(deps)
  let purgeTimer: ReturnType<typeof setInterval> | undefined

  async function declaredQueue(appId: string, devName: string, queue: string): Promise<QueueDeclaration> {
    const rows = await deps.db.query<{ queue: QueueDeclaration | null }>(
      `select (select q from jsonb_array_elements(coalesce(manifest -> 'queues', '[]')) q where q ->> 'name' = $3) as queue
         from platform.releases where app_id = $1 and dev_name = $2 and status = 'active'`,
      [appId, devName, queue],
    )
    const declaration = rows[0]?.queue
    if (!declaration) throw new ServiceError('QUEUE_NOT_DECLARED', `The queue "${queue}" is not declared in service.yaml`, { details: { queue } })
    return declaration
  }

  async function enqueue(call: JobsContextCall): Promise<JobView> {
    const request = readEnqueueArgs(call.args)
    if (call.namespace === null) throw new ServiceError('APP_NOT_DEPLOYED', 'this app has no namespace yet')
    const namespace = call.namespace
    const work = (async () => {
      const declaration = await declaredQueue(call.appId, call.devName, request.queue)
      const { row } = await enqueueOnQueue(deps.db, {
        appId: call.appId, namespaceId: namespace.id, declaration, request, enqueuedBy: call.userId, now: deps.clock.now(), dispatcher,
      })
      return jobView(row)
    })()
    if (request.timeoutMs === null) return await work
    // The timeout bounds only this request: an enqueue that commits after it still stands,
    // and the producer's retry with the same key gets that job.
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ServiceError('ENQUEUE_TIMEOUT',
        `The enqueue did not finish within ${request.timeoutMs} ms; retry with the same idempotency key`)), request.timeoutMs!)
    })
    work.catch(() => {})
    try {
      return await Promise.race([work, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  async function get(call: JobsContextCall): Promise<JobView | null> {
    const [jobId] = call.args
    if (typeof jobId !== 'string') throw new ServiceError('VALIDATION_FAILED', 'jobs.get needs a job id', { details: { field: 'jobId' } })
    if (call.namespace === null || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(jobId)) return null
    const row = await findJob(deps.db, { appId: call.appId, namespaceId: call.namespace.id, jobId })
    return row === undefined ? null : jobView(row)
  }

  return {
    async answer(call) {
      switch (call.method) {
        case 'enqueue':
          return await enqueue(call)
        case 'get':
          return await get(call)
        default:
          throw new ServiceError('BAD_REQUEST', `ctx.jobs has no method "${call.method}"`)
      }
    },

    async start() {
      await dispatcher.start()
      const purge = () => {
        purgeExpiredJobs(deps.db, deps.clock).catch((error: unknown) =>
          deps.logger.error('jobs: the retention purge failed', { error: coerceError(error).message }))
        reconcileActiveCounts(deps.db).then(
          (fixed) => { if (fixed > 0) deps.logger.warn('jobs: active-job counters set right', { namespaces: fixed }) },
          (error: unknown) => deps.logger.error('jobs: reconciling active-job counters failed', { error: coerceError(error).message }))
      }
      purge()
      purgeTimer = setInterval(purge, deps.purgeIntervalMs ?? 60 * 60 * 1000)
      purgeTimer.unref()
    },

    async stop() {
      clearInterval(purgeTimer)
      await dispatcher.stop()
    },

    enqueueOnQueue: (input) => enqueueOnQueue(deps.db, { ...input, dispatcher }),
    runDue: () => dispatcher.runDue(),
    purge: () => purgeExpiredJobs(deps.db, deps.clock),
  }
}

/**
 * The deploy hook: in the transaction that activates a release, dead-letters the pending
 * jobs of queues (and cron runs of cron entries) the new release no longer declares, with
 * QUEUE_NOT_ACTIVE (CRON_NOT_ACTIVE). Running attempts finish; restoring the declaration
 * later does not bring the jobs back.
 *
 * @example
 * await deadLetterRemovedQueues(tx, { namespaceId, queues: manifest.queues.map((q) => q.name), crons: manifest.cron.map((c) => c.name), now })
 */
export async function deadLetterRemovedQueues(
  tx: Queryable,
  options: { namespaceId: string; queues: readonly string[]; crons: readonly string[]; now: Date },
): Promise<number> {
  return await deadLetterUndeclared(tx, {
    ...options,
    queueError: { code: 'QUEUE_NOT_ACTIVE', message: 'The queue was removed from service.yaml before this job ran' },
    cronError: { code: 'CRON_NOT_ACTIVE', message: 'The cron entry was removed from service.yaml before this run' },
  })
}
