/**
 * The dispatcher: claims due jobs and runs one attempt each through the Functions host.
 * Every platform process runs one; they share the work through PostgreSQL (see
 * queries.ts for how a claim, one statement, stays within each queue's concurrency across
 * processes).
 *
 * - Wake-ups: LISTEN on `platform_jobs` (an enqueue of due work notifies at commit), a
 *   finished attempt (a slot is free), and a poll every `pollIntervalMs` (delayed jobs
 *   becoming due, and PGlite or a lost connection missing a notice). Successes are written
 *   in batches whose write also claims for the slots they free, in one round trip.
 * - Hand-offs: an enqueue in this process (`handOff`) may start its job in its own statement
 *   for a free slot of this dispatcher, which then runs it like a claimed one: one round trip
 *   from enqueue to start instead of two (the enqueue, then the woken claim).
 * - An attempt: the consumer is resolved from the namespace's active release at dispatch;
 *   it runs with `ctx.job = { id, queue, attempt }` and the queue's pinned
 *   `timeoutSeconds`. Success ends the job; `errors.unavailable` (503), a timeout or a
 *   crashed worker is retried while attempts remain; any other failure dead-letters it.
 *   An attempt whose worker was killed for ANOTHER invocation's timeout (a bystander), or
 *   whose invocation waited for a free worker until its timeout and never started, goes
 *   back to waiting, due at once, without counting. A result write that fails is tried
 *   again a few times (up to ~8 s) before the lease is left to retry the job.
 * - Leases: a claim leases the job for its timeout plus `leaseGraceSeconds`. A process
 *   that dies leaves its jobs `running` until the lease expires; then any process moves
 *   them on as a retryable failure of the attempt they were on (JOB_LEASE_EXPIRED). An
 *   attempt's result is written only while it is still the job's current attempt, so a
 *   late result from a presumed-dead process is ignored.
 * - Apps that are not active: claims skip their queues, so their due jobs wait, untouched
 *   (no periodic rewrite), and run in due order once the app is active again. A job
 *   claimed just before its app stopped being active goes back to waiting uncounted.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import type { CronDeclaration, QueueDeclaration } from '../manifest/index.ts'
import { attemptNotSpent, failureResponse, type FunctionFailure, type FunctionHost } from '../functions/index.ts'
import {
  claimDueJobs,
  completeAndClaim,
  JOBS_CHANNEL,
  markFailed,
  markNotActive,
  markNotStarted,
  recoverExpiredLeases,
  repairEarlyMarks,
  type ClaimedJob,
  type JobError,
} from './queries.ts'
import { settledWithin } from '../lib/settle.ts'

export interface DispatcherOptions {
  /** Most attempts this process runs at once. Default 32. */
  readonly capacity?: number
  /** Added to an attempt's timeout to form its lease. Default 60. */
  readonly leaseGraceSeconds?: number
  /** Poll for due work this often. Default 1000. */
  readonly pollIntervalMs?: number
  /**
   * How long `stop` waits for running attempts. Default 20 000. Attempts still running then
   * end when the Functions host closes (a retryable failure), or their leases expire.
   */
  readonly stopGraceMs?: number
}

export interface DispatcherDeps extends DispatcherOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  readonly functions: FunctionHost
  /** Generic failure messages (production) or detailed ones (development). */
  readonly production: boolean
}

/**
 * A free slot of a dispatcher, held for a job an enqueue may start at once (queries.ts,
 * insertJobOnce). Exactly one of `run` and `release` is called, once the enqueue has committed.
 */
export interface HandOff {
  readonly owner: string
  readonly leaseGraceSeconds: number
  /** The enqueue started this job, leased to `owner`: run it in the slot. */
  run(job: ClaimedJob): void
  /** The enqueue did not start a job: free the slot. */
  release(): void
}

export interface Dispatcher {
  /**
   * A free slot for a job the caller is about to enqueue, or null (not started, stopping, or
   * every slot taken or promised).
   */
  handOff(): HandOff | null
  /** Starts listening and polling. */
  start(): Promise<void>
  /** Stops claiming and waits (at most `stopGraceMs`) for the attempts in flight to end. */
  stop(): Promise<void>
  /**
   * One pass, awaited to the end: expired leases are moved on,
   * then due jobs are claimed (up to the free capacity) and their attempts run to their
   * result. Returns how many attempts it ran. For tests and tools; `start` runs passes itself.
   */
  runDue(): Promise<number>
}

/** Bounded error text kept on a job: the latest failure's code and message. */
const MAX_ERROR_MESSAGE = 1000

export function boundedError(code: string, rawMessage: string): JobError {
  // jsonb cannot hold U+0000; a Function's error message may contain it.
  const message = rawMessage.replaceAll('\u0000', '\ufffd')
  return { code, message: message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE - 1)}…` : message }
}

/**
 * Failed once, a result write is tried again after these waits: the Function has run, and
 * a lost write would run it again at its lease's expiry (or dead-letter a last attempt).
 */
const RESULT_WRITE_RETRIES_MS = [100, 500, 2000, 5000]

/** Only `errors.unavailable` (503), a timeout and a crashed worker are worth another attempt. */
export function isRetryable(failure: FunctionFailure): boolean {
  if (failure.kind === 'timeout' || failure.kind === 'crashed') return true
  return failure.kind === 'service' && failure.status === 503
}

interface Declarations {
  readonly queues: ReadonlyMap<string, QueueDeclaration>
  readonly cron: ReadonlyMap<string, CronDeclaration>
}

interface Success {
  readonly id: string
  readonly attempt: number
  /** `refilled`: the write also claimed work for the slot this attempt frees. */
  readonly settle: (outcome: { refilled: boolean } | { error: unknown }) => void
}

const MAX_CACHED = 256

/**
 * @example
 * const dispatcher = createDispatcher({ db, clock, logger, functions, production: true })
 * await dispatcher.start()
 * // ... on shutdown
 * await dispatcher.stop()
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, clock, logger } = deps
  const capacity = deps.capacity ?? 32
  const leaseGraceSeconds = deps.leaseGraceSeconds ?? 60
  const pollIntervalMs = deps.pollIntervalMs ?? 1000
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  const inFlight = new Set<Promise<void>>()
  /** A release's queue and cron declarations (a release never changes). */
  const declarations = new Map<string, Promise<Declarations>>()
  /** A namespace's development name ('' for production; never changes). */
  const devNames = new Map<string, Promise<string>>()
  /** Apps as last read; used while the claim saw the same status and active release. */
  const apps = new Map<string, App>()
  /** Successful attempts waiting to be recorded together. */
  let successes: Success[] = []
  /** A write of successes is in flight. */
  let flushing = false
  /** Slots promised to claims in flight (a pass, a write of successes that claims too, an enqueue's hand-off). */
  let reserved = 0
  /** Hand-offs whose enqueue is in flight (`stop` waits for them). */
  let handOffs = 0
  /**
   * A pass found no free slot while some were only promised (to a claim in flight or a
   * hand-off): run one when they are given back, since that claim may have missed the work
   * the pass was woken for.
   */
  let passWanted = false
  let lastNudge = 0
  let started = false
  let stopped = false
  let passing = false
  let again = false
  let poll: ReturnType<typeof setInterval> | undefined
  let unlisten: (() => Promise<void>) | undefined

  function declarationsOf(releaseId: string): Promise<Declarations> {
    let entry = declarations.get(releaseId)
    if (entry === undefined) {
      if (declarations.size >= MAX_CACHED) declarations.delete(declarations.keys().next().value!)
      entry = db
        .query<{ queues: QueueDeclaration[] | null; cron: CronDeclaration[] | null }>(
          `select manifest -> 'queues' as queues, manifest -> 'cron' as cron from platform.releases where id = $1`, [releaseId])
        .then((rows) => ({
          queues: new Map((rows[0]?.queues ?? []).map((queue) => [queue.name, queue])),
          cron: new Map((rows[0]?.cron ?? []).map((cron) => [cron.name, cron])),
        }))
      entry.catch(() => declarations.delete(releaseId))
      declarations.set(releaseId, entry)
    }
    return entry
  }

  function devNameOf(namespaceId: string): Promise<string> {
    let entry = devNames.get(namespaceId)
    if (entry === undefined) {
      if (devNames.size >= MAX_CACHED) devNames.delete(devNames.keys().next().value!)
      entry = db
        .query<{ dev_name: string }>(`select dev_name from platform.namespaces where id = $1`, [namespaceId])
        .then((rows) => {
          if (rows[0] === undefined) throw new Error(`namespace ${namespaceId} not found`)
          return rows[0].dev_name
        })
      entry.catch(() => devNames.delete(namespaceId))
      devNames.set(namespaceId, entry)
    }
    return entry
  }

  /** The job's app, read again unless the claim saw the cached status and active release. */
  async function appOf(job: ClaimedJob): Promise<App | null> {
    const cached = apps.get(job.app_id)
    if (cached !== undefined && cached.status === job.app_status && cached.activeReleaseId === job.app_release_id) return cached
    const app = await findAppBySlug(db, job.app_slug)
    if (app !== null) {
      if (apps.size >= MAX_CACHED) apps.delete(apps.keys().next().value!)
      apps.set(app.id, app)
    }
    return app
  }

  /**
   * Records a successful attempt with the others of the same moment, in one round trip that
   * also claims work for the slots they free: at once when no such write is in flight, else
   * with every success that arrives meanwhile, as soon as that write ends (so the batch grows
   * with the database's latency). Resolves to whether the slot was refilled.
   */
  function succeeded(job: { id: string; attempt: number }): Promise<boolean> {
    return new Promise((resolve, reject) => {
      successes.push({ ...job, settle: (outcome) => ('error' in outcome ? reject(outcome.error) : resolve(outcome.refilled)) })
      if (successes.length === 1 && !flushing) setImmediate(flushSuccesses)
    })
  }

  /** This process claimed all it asked for: there may be more; let the other processes look too (at most every 100 ms). */
  function nudgeWhenFull(claimed: number, asked: number): void {
    if (asked === 0 || claimed < asked || Date.now() - lastNudge < 100) return
    lastNudge = Date.now()
    db.notify(JOBS_CHANNEL, '').catch(() => {})
  }

  /** Runs a result write, retrying a failed one after RESULT_WRITE_RETRIES_MS. */
  async function writeResult<T>(what: string, write: () => Promise<T>): Promise<T> {
    for (let retry = 0; ; retry += 1) {
      try {
        return await write()
      } catch (error) {
        const wait = RESULT_WRITE_RETRIES_MS[retry]
        if (wait === undefined) throw error
        logger.warn('jobs: writing a result failed; trying again', { what, retryInMs: wait, error: coerceError(error).message })
        await new Promise((resolve) => setTimeout(resolve, wait))
      }
    }
  }

  function flushSuccesses(): void {
    const batch = successes
    successes = []
    flushing = true
    // The batch's attempts hold their slots until they settle; the write claims for them once
    // the successes are recorded. Only for them: other free slots stay free for a pass or an
    // enqueue's hand-off while the write is in flight (reserving them too made an enqueue
    // just after a success find no slot). No claims outside start/stop.
    const limit = started && !stopped ? Math.max(0, Math.min(batch.length, capacity - (inFlight.size - batch.length) - reserved)) : 0
    reserved += limit
    writeResult('successes', () => completeAndClaim(db, { attempts: batch, now: clock.now(), limit, owner, leaseGraceSeconds })).then(
      (claimed) => {
        for (const job of claimed) void launch(job)
        reserved -= limit
        passIfWanted()
        batch.forEach((success) => success.settle({ refilled: limit > 0 }))
        nudgeWhenFull(claimed.length, limit)
        // Full hands (more may be due), or slots the write could not claim for: a pass, once
        // the batch's attempts have left their slots.
        if ((limit > 0 && claimed.length === limit) || limit < batch.length) setImmediate(schedulePass)
      },
      (error: unknown) => {
        reserved -= limit
        passIfWanted()
        batch.forEach((success) => success.settle({ error: error ?? new Error('recording successes failed') }))
      },
    ).finally(() => {
      flushing = false
      if (successes.length > 0) flushSuccesses()
    })
  }

  async function activeReleaseOf(app: App, devName: string): Promise<string | null> {
    if (devName === '') return app.activeReleaseId
    const rows = await db.query<{ id: string }>(
      `select id from platform.releases where app_id = $1 and dev_name = $2 and status = 'active'`, [app.id, devName])
    return rows[0]?.id ?? null
  }

  async function maintain(): Promise<void> {
    const now = clock.now()
    const error = boundedError('JOB_LEASE_EXPIRED', 'The platform process running this attempt stopped before it finished')
    while ((await recoverExpiredLeases(db, { now, error, limit: 500 })) === 500) { /* more expired leases */ }
    await repairEarlyMarks(db, { now, limit: 100 })
  }

  async function claim(limit: number): Promise<ClaimedJob[]> {
    return await claimDueJobs(db, { now: clock.now(), limit, owner, leaseGraceSeconds })
  }

  /**
   * Runs one claimed attempt to its recorded result. Never rejects. Resolves to whether its
   * slot was refilled already (a success written together with the next claim).
   */
  async function attempt(job: ClaimedJob): Promise<boolean> {
    const ids = { id: job.id, attempt: job.attempts }
    try {
      const devName = await devNameOf(job.namespace_id)
      const app = await appOf(job)
      if (app === null) {
        // Gone since the claim (deleted: its jobs go with it), or its slug changed: release
        // the job uncounted; the next claim reads the app afresh.
        await markNotStarted(db, { ...ids, now: clock.now(), runAt: clock.now() })
        return false
      }
      if (app.status !== 'active') {
        // Claims skip the queues of apps that are not active: it waits there, uncounted.
        await markNotStarted(db, { ...ids, now: clock.now(), runAt: clock.now() })
        return false
      }
      const releaseId = await activeReleaseOf(app, devName)
      const declared = releaseId === null ? null : await declarationsOf(releaseId)
      let functionName: string | undefined
      if (job.kind === 'queue') {
        functionName = declared?.queues.get(job.queue)?.function
        if (functionName === undefined) {
          await markNotActive(db, { ...ids, now: clock.now(), error: boundedError('QUEUE_NOT_ACTIVE', `The queue "${job.queue}" is no longer declared`) })
          return false
        }
      } else {
        const cronName = job.queue.slice('cron:'.length)
        functionName = declared?.cron.get(cronName)?.function
        if (functionName === undefined) {
          await markNotActive(db, { ...ids, now: clock.now(), error: boundedError('CRON_NOT_ACTIVE', `The cron "${cronName}" is no longer declared`) })
          return false
        }
      }
      const fn = devName === '' ? await deps.functions.resolve(app, functionName) : await deps.functions.resolveDev(app, devName, functionName)
      if (fn === null || fn.declaration.access !== 'system') {
        await markFailed(db, { ...ids, now: clock.now(), retryable: false, error: boundedError('FUNCTION_NOT_FOUND', `The consumer "${functionName}" is not a declared system Function`) })
        return false
      }
      const result = await deps.functions.run(fn, {
        input: job.payload,
        user: null,
        job: job.kind === 'queue' ? { id: job.id, queue: job.queue, attempt: job.attempts } : null,
        ...(job.timeout_seconds === null ? {} : { timeoutMs: job.timeout_seconds * 1000 }),
      })
      if (result.ok) return await succeeded(ids)
      if (attemptNotSpent(result.error)) {
        // Another invocation's timeout killed the worker, or no worker was free before the
        // timeout: not this job's failure. Run again at once, uncounted (a waiting attempt
        // is bounded by the timeout, so a full pool costs a claim per timeout, not a loop).
        await writeResult('not started', () => markNotStarted(db, { ...ids, now: clock.now(), runAt: clock.now() }))
        return false
      }
      const environment = deps.production && devName === '' ? 'production' : 'development'
      const { body } = failureResponse(result.error, { environment })
      const error = boundedError(body.error.code, body.error.message)
      await writeResult('failure', () => markFailed(db, { ...ids, now: clock.now(), retryable: isRetryable(result.error), error }))
    } catch (thrown) {
      // The database or the host failed us: the job stays running and its lease expiry retries it.
      logger.error('jobs: an attempt could not be completed', { jobId: job.id, attempt: job.attempts, error: coerceError(thrown).message })
    }
    return false
  }

  function launch(job: ClaimedJob): Promise<void> {
    const running = attempt(job).then((refilled) => {
      inFlight.delete(running)
      if (!refilled) schedulePass()
    })
    inFlight.add(running)
    return running
  }

  let lastMaintenance = 0
  async function pass(): Promise<void> {
    if (Date.now() - lastMaintenance >= pollIntervalMs) {
      lastMaintenance = Date.now()
      await maintain()
    }
    const free = capacity - inFlight.size - reserved
    if (free <= 0) {
      if (reserved > 0) passWanted = true
      return
    }
    reserved += free
    try {
      const claimed = await claim(free)
      for (const job of claimed) void launch(job)
      // Full hands: there may be more due work (under a steady load, most passes).
      nudgeWhenFull(claimed.length, free)
    } finally {
      reserved -= free
    }
  }

  function passIfWanted(): void {
    if (!passWanted) return
    passWanted = false
    setImmediate(schedulePass)
  }

  function schedulePass(): void {
    if (!started || stopped) return
    if (passing) {
      again = true
      return
    }
    passing = true
    pass()
      .catch((error: unknown) => logger.error('jobs: a dispatch pass failed', { error: coerceError(error).message }))
      .finally(() => {
        passing = false
        if (again) {
          again = false
          schedulePass()
        }
      })
  }

  return {
    handOff() {
      if (!started || stopped || capacity - inFlight.size - reserved <= 0) return null
      reserved += 1
      handOffs += 1
      let settled = false
      const settle = () => {
        if (settled) return false
        settled = true
        reserved -= 1
        handOffs -= 1
        return true
      }
      return {
        owner,
        leaseGraceSeconds,
        run(job) {
          if (settle()) void launch(job)
        },
        release() {
          if (settle()) passIfWanted()
        },
      }
    },

    async start() {
      if (started) return
      started = true
      // Leases compare instants written by one process with another's clock: one clock per
      // deployment (NTP) is an operational requirement (docs/operations.md). Say when it is not.
      db.query<{ now: Date }>('select now() as now').then((rows) => {
        const skewMs = clock.now().getTime() - new Date(rows[0]!.now).getTime()
        if (Math.abs(skewMs) > 10_000) {
          logger.warn("jobs: this process's clock differs from the database's; job leases need one clock per deployment (NTP)", { skewMs })
        }
      }, () => {})
      // A (re)established subscription may have missed notices: look at once.
      unlisten = await db.listen(JOBS_CHANNEL, () => schedulePass(), { onListen: () => schedulePass() })
      poll = setInterval(schedulePass, pollIntervalMs)
      poll.unref()
      schedulePass()
    },

    async stop() {
      stopped = true
      clearInterval(poll)
      await unlisten?.().catch(() => {})
      // A pass, a write of successes or an enqueue's hand-off in flight may still claim: wait
      // for it, so that every attempt this process starts is in `inFlight` below.
      while (passing || flushing || handOffs > 0) await new Promise((resolve) => setTimeout(resolve, 5))
      await settledWithin([...inFlight], deps.stopGraceMs ?? 20_000)
    },

    async runDue() {
      lastMaintenance = Date.now()
      await maintain()
      const free = capacity - inFlight.size
      if (free <= 0) return 0
      const claimed = await claim(free)
      await Promise.all(claimed.map(launch))
      return claimed.length
    },
  }
}
