/**
 * The cron scheduler: turns the occurrences of every enabled cron declaration of every
 * active production release into jobs (`enqueueCronRun`), which the jobs engine runs with
 * the envelope `{ source: 'service.cron', name, scheduledAt }`.
 *
 * Rules (spec 2.5, 8; times from next.ts, which also explains the DST rules):
 * - Exactly once across processes. One process at a time evaluates, holding a lease
 *   (`platform.cron_lease`); even without it each occurrence fires once, because a firing
 *   is one transaction that enqueues the job under the occurrence's idempotency key and
 *   moves the declaration's `handled_through` by compare-and-set.
 * - Coalescing. Occurrences not handled in time (the platform was down, or a tick ran
 *   late) collapse into one run: the latest occurrence within the last 24 hours; older
 *   ones are dropped.
 * - No backfill. A new declaration, one whose schedule or zone changed, or one enabled
 *   again starts at the activation of the release that brought it.
 * - Disabled declarations do not fire (their state is forgotten); manual runs still work.
 * - An app that is not active (paused until its owner confirms, suspended, archived) has
 *   its cron held: its occurrences are neither run nor marked handled, so once it is
 *   active again the missed ones coalesce as after downtime (the latest within 24 hours
 *   runs once; spec 3.1 reschedules a non-active app's pending work, spec 8 coalesces).
 *   Runs enqueued before the pause wait in the jobs engine until the app is active again.
 * - Queue capacity never drops a run: `enqueueCronRun` is not subject to the active-job
 *   limit; a busy dispatcher only delays it.
 *
 * The loop ticks once at start (catching up on what came due while no process was
 * evaluating), then just after every minute boundary and at least every `intervalMs`;
 * tests call `tick()` with a ManualClock instead.
 */
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { enqueueCronRun, listActiveCrons, type ActiveCrons } from '../jobs/index.ts'
import type { CronDeclaration } from '../manifest/index.ts'
import { latestOccurrence } from './next.ts'
import {
  acquireLease, advanceSchedule, deleteScheduleStates, listScheduleStates, releaseActivatedAt, releaseLease, startSchedule,
  type ScheduleState,
} from './queries.ts'

/** How far back missed occurrences are looked for after downtime (spec 8). */
export const COALESCE_WINDOW_MS = 24 * 60 * 60 * 1000

export interface CronSchedulerOptions {
  /** Longest wait between ticks; ticks also run just after each minute boundary. Default 15 000. */
  readonly intervalMs?: number
  /** How long a lease lasts without renewal. Default 60 000. */
  readonly leaseMs?: number
}

export interface CronSchedulerDeps extends CronSchedulerOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
}

/** What one tick did. */
export interface CronTick {
  /** Whether this process held the lease and evaluated. */
  readonly leader: boolean
  /** Occurrences enqueued as jobs. */
  readonly enqueued: number
  /** Declarations with a due occurrence held back because the app is not active (run, coalesced, when it is again). */
  readonly held: number
}

export interface CronScheduler {
  /** Starts the loop (main.ts). */
  start(): void
  /** Stops the loop, waits for a tick in progress and gives up the lease. */
  stop(): Promise<void>
  /** One evaluation at the clock's current time, if this process gets the lease. */
  tick(): Promise<CronTick>
}

/**
 * @example
 * const scheduler = createCronScheduler({ db, clock, logger })
 * scheduler.start()
 * // ... on shutdown
 * await scheduler.stop()
 */
export function createCronScheduler(deps: CronSchedulerDeps): CronScheduler {
  const { db, clock, logger } = deps
  const intervalMs = deps.intervalMs ?? 15_000
  const leaseMs = deps.leaseMs ?? 60_000
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<unknown> | undefined
  let stopped = false
  let held = false

  async function tick(): Promise<CronTick> {
    const now = clock.now()
    const leader = await acquireLease(db, { owner, now, expiresAt: new Date(now.getTime() + leaseMs) })
    held = leader
    if (!leader) return { leader, enqueued: 0, held: 0 }
    return { leader, ...(await evaluateSchedules({ db, clock, logger }, now)) }
  }

  function scheduleTick(delayMs: number): void {
    if (stopped) return
    timer = setTimeout(() => {
      running = tick()
        .catch((error: unknown) => logger.error('cron: a scheduler tick failed', { error: coerceError(error).message }))
        .finally(() => {
          running = undefined
          const now = clock.now().getTime()
          scheduleTick(Math.min(intervalMs, 60_000 - (now % 60_000) + 100))
        })
    }, delayMs)
    timer.unref()
  }

  return {
    start() {
      if (timer !== undefined || stopped) return
      // At once: catch up on what came due while no process was evaluating.
      scheduleTick(0)
    },
    async stop() {
      stopped = true
      clearTimeout(timer)
      await running
      if (!held) return
      held = false
      await releaseLease(db, owner).catch((error: unknown) =>
        logger.error('cron: could not give up the scheduler lease', { error: coerceError(error).message }))
    },
    tick,
  }
}

/**
 * What the lease holder does at `now`: for each enabled declaration of each active
 * production release, enqueue its latest unhandled occurrence within the last 24 hours.
 * Safe to run from several processes at once (each occurrence still fires once); exported
 * so tests can prove that without the lease.
 */
export async function evaluateSchedules(deps: { db: Db; clock: Clock; logger: Logger }, now: Date): Promise<{ enqueued: number; held: number }> {
  const { db, logger } = deps
  const [apps, states] = await Promise.all([listActiveCrons(db), listScheduleStates(db)])
  const stateOf = new Map(states.map((state) => [stateKey(state.namespaceId, state.name), state]))
  const live = new Set<string>()
  let enqueued = 0
  let held = 0
  for (const app of apps) {
    for (const declaration of app.cron) {
      if (!declaration.enabled) continue
      const key = stateKey(app.namespaceId, declaration.name)
      live.add(key)
      try {
        const outcome = await handleDeclaration(deps, { app, declaration, state: stateOf.get(key), now })
        if (outcome === 'enqueued') enqueued += 1
        if (outcome === 'held') held += 1
      } catch (error) {
        logger.error('cron: a schedule could not be evaluated', { appId: app.appId, cron: declaration.name, error: coerceError(error).message })
      }
    }
  }
  const gone = states.filter((state) => !live.has(stateKey(state.namespaceId, state.name)))
  await deleteScheduleStates(db, gone)
  return { enqueued, held }
}

class ScheduleMoved extends Error {}

async function handleDeclaration(
  deps: { db: Db; clock: Clock; logger: Logger },
  entry: { app: ActiveCrons; declaration: CronDeclaration; state: ScheduleState | undefined; now: Date },
): Promise<'enqueued' | 'held' | 'nothing'> {
  const { db, clock, logger } = deps
  const { app, declaration, now } = entry
  const timezone = declaration.timezone ?? 'UTC'
  let handledThrough = entry.state?.handledThrough
  if (entry.state === undefined || entry.state.schedule !== declaration.schedule || entry.state.timezone !== timezone) {
    // New (or changed, or enabled again): no backfill before the release that brought it.
    const start = (await releaseActivatedAt(db, app.releaseId)) ?? now
    const started = await startSchedule(db, {
      namespaceId: app.namespaceId, name: declaration.name, schedule: declaration.schedule, timezone, handledThrough: start, now,
    })
    if (!started) return 'nothing'
    handledThrough = start
  }
  const after = new Date(Math.max(handledThrough!.getTime(), now.getTime() - COALESCE_WINDOW_MS))
  const due = latestOccurrence(declaration.schedule, { timezone, after, upTo: now })
  if (due === null) return 'nothing'
  const move = { namespaceId: app.namespaceId, name: declaration.name, from: handledThrough!, to: due, now }
  // Not active: leave it unhandled; resumed, the latest occurrence of the last 24 hours runs.
  if (app.appStatus !== 'active') return 'held'
  try {
    const jobId = await db.transaction(async (tx) => {
      const { jobId } = await enqueueCronRun(tx, clock, { appId: app.appId, namespaceId: app.namespaceId, cronName: declaration.name, scheduledAt: due })
      if (!(await advanceSchedule(tx, { ...move, jobId }))) throw new ScheduleMoved()
      return jobId
    })
    logger.debug('cron: enqueued a run', { appId: app.appId, cron: declaration.name, scheduledAt: due.toISOString(), jobId })
  } catch (error) {
    if (error instanceof ScheduleMoved) return 'nothing'
    throw error
  }
  return 'enqueued'
}

function stateKey(namespaceId: string, name: string): string {
  return `${namespaceId}\u0000${name}`
}
