/**
 * The sync scheduler (spec 2.6 `sync`, 8): runs a provider's sync Function (run.ts) once per
 * connection that may sync, at the occurrences of the contract's five-field `schedule` in
 * its `timezone` (default UTC), with the app cron engine's occurrence and DST rules
 * (cron/next.ts: this file evaluates nothing itself).
 *
 * Rules (decisions.md, "Integration sync"):
 * - Scope. A connection syncs while it is active (not Reconnect required), its provider app
 *   is active and publishes a contract with `sync`, and at least one live binding counts:
 *   not revoked, in an active app whose running production release still declares the slot
 *   for this integration, and standing `active` now (bindings' standingFrom: a binding that
 *   is only suspended does not count, like the broker refuses its calls). An occurrence that
 *   comes due while the connection may not sync is skipped; when nothing counts any more the
 *   row stops (next_run_at null) until something does again.
 * - Start. A first binding owes the connection a run at once: the first tick after it (within
 *   about 15 seconds) claims that run like an occurrence (the same lease, so exactly once
 *   across processes), and the schedule continues from it. A first binding is the one that
 *   starts the connection's sync (it has no row yet, also when its provider has just declared
 *   `sync`) or starts it again after it stopped because no binding counted: the counting
 *   bindings are all newer than the stop. A binding removed and made again before the next
 *   occurrence never stopped the sync, so it keeps its schedule. Resuming for another reason
 *   (a reconnection, the provider app active again, an older binding counting again) runs at
 *   the next occurrence, or catches up like downtime. A new schedule or zone (a provider
 *   deploy) starts at that deploy, as cron does.
 * - Overlap. Never two runs of one connection, across processes: the claim is a conditional
 *   update of the connection's row that sets a lease (timeout + grace). A run whose process
 *   died is taken over once the lease expires. An occurrence that comes due while a run is in
 *   progress waits for it and then runs once.
 * - No retry. A failed run is not retried; the next occurrence runs.
 * - Downtime. Missed occurrences coalesce into one run, the latest within the last 24 hours
 *   (like cron: COALESCE_WINDOW_MS).
 *
 * Every platform process runs the loop: a tick at start, then just after every minute
 * boundary and at least every `intervalMs`; tests call `tick()` with a ManualClock and
 * `idle()` to wait for the runs it started.
 */
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { coerceError } from '../../lib/errors.ts'
import type { Logger } from '../../lib/logger.ts'
import { findAppByIdOrSlug } from '../../apps/apps.ts'
import { COALESCE_WINDOW_MS, latestOccurrence, nextOccurrences } from '../../cron/index.ts'
import { findConnection } from '../connections/index.ts'
import { bindingStanding } from '../bindings/index.ts'
import { runSync, SYNC_TIMEOUT_MS, type SyncRunDeps } from './run.ts'
import { claimSync, insertSync, moveSync, selectCandidates, selectCountedBindings, type CandidateRow } from './queries.ts'
import { settledWithin } from '../../lib/settle.ts'

export interface SyncSchedulerOptions {
  /** Longest wait between ticks; ticks also run just after each minute boundary. Default 15 000. */
  readonly intervalMs?: number
  /** Runs at once in this process. Default 4. */
  readonly capacity?: number
  /** How long past its timeout a run's lease lasts before another process may take over. Default 60 000. */
  readonly leaseGraceMs?: number
  /** How long `stop` waits for runs in progress. Default 5 000; later ones are left to their leases. */
  readonly stopGraceMs?: number
}

export interface SyncSchedulerDeps extends SyncSchedulerOptions, SyncRunDeps {}

/** What one tick did. */
export interface SyncTick {
  /** Runs this process claimed and started. */
  readonly started: number
  /** Due occurrences skipped because the connection could not sync (no counting binding, Reconnect required, no sync published). */
  readonly skipped: number
}

export interface SyncScheduler {
  /** Starts the loop (main.ts). */
  start(): void
  /** Stops the loop and waits (at most `stopGraceMs`) for the runs in progress. */
  stop(): Promise<void>
  /** One evaluation at the clock's current time. */
  tick(): Promise<SyncTick>
  /** Resolves when no run started by this process is in progress. */
  idle(): Promise<void>
}

/** Candidates looked at per tick. */
const BATCH = 500
/** Bindings read per due occurrence to find one that stands active. */
const BINDINGS_CHECKED = 20

/**
 * @example
 * const sync = createSyncScheduler({ db, clock, logger, keyring, invokeProvider, accessToken })
 * sync.start()
 * // ... on shutdown
 * await sync.stop()
 */
export function createSyncScheduler(deps: SyncSchedulerDeps): SyncScheduler {
  const { db, clock, logger } = deps
  const intervalMs = deps.intervalMs ?? 15_000
  const capacity = deps.capacity ?? 4
  const leaseGraceMs = deps.leaseGraceMs ?? 60_000
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  const inFlight = new Set<Promise<unknown>>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let ticking: Promise<unknown> | undefined
  let stopped = false

  async function tick(): Promise<SyncTick> {
    const now = clock.now()
    let started = 0
    let skipped = 0
    for (const row of await selectCandidates(db, { now, limit: BATCH })) {
      try {
        const done = await consider(row, now)
        if (done === 'started') started += 1
        if (done === 'skipped') skipped += 1
      } catch (error) {
        logger.error('integration sync: a connection could not be evaluated', { connectionId: row.connection_id, error: coerceError(error).message })
      }
    }
    return { started, skipped }
  }

  async function consider(row: CandidateRow, now: Date): Promise<'started' | 'skipped' | 'nothing'> {
    const sync = row.sync
    const boundSince = row.bound_since === null ? null : new Date(row.bound_since)
    const mayRun = sync !== null && row.connection_status === 'active' && boundSince !== null
    const activeSince = row.connection_status === 'active' ? new Date(row.status_changed_at) : null
    // Occurrences at or before this never run: older than the coalescing window, or before
    // the connection was active and bound.
    const floor = (handledThrough: Date) =>
      latest(handledThrough, new Date(now.getTime() - COALESCE_WINDOW_MS), mayRun ? boundSince : null, activeSince)
    let state: SyncState | null = row.has_row
      ? { schedule: row.schedule!, timezone: row.timezone!, handledThrough: new Date(row.handled_through!), nextRunAt: row.next_run_at === null ? null : new Date(row.next_run_at) }
      : null
    if (mayRun && (state === null || state.nextRunAt === null || state.schedule !== sync.schedule || state.timezone !== sync.timezone)) {
      // Start: a first binding, a resumed connection, or the contract's new schedule (from its deploy on).
      // A first binding: none before, a first run still owed, or every counting binding made after the sync stopped.
      const firstBinding = state === null || owesFirstRun(state) || (state.nextRunAt === null && boundSince.getTime() > state.handledThrough.getTime())
      let handledThrough = earliest(now, latest(boundSince, activeSince))
      if (state !== null && !firstBinding) {
        const changed = state.schedule !== sync.schedule || state.timezone !== sync.timezone
        handledThrough = changed ? earliest(now, row.published_at === null ? now : new Date(row.published_at)) : state.handledThrough
      }
      // A first binding's run is due at once (next_run_at = handled_through); otherwise the next occurrence.
      const nextRunAt = firstBinding ? handledThrough : nextAfter(sync, floor(handledThrough))
      const fresh = { schedule: sync.schedule, timezone: sync.timezone, handledThrough, nextRunAt }
      const made = state === null
        ? await insertSync(db, { connectionId: row.connection_id, ...fresh, now })
        : await moveSync(db, { connectionId: row.connection_id, from: state.handledThrough, fromNextRunAt: state.nextRunAt, ...fresh, now })
      if (!made) return 'nothing'
      state = fresh
    }
    if (state === null || state.nextRunAt === null || state.nextRunAt > now) return 'nothing'
    const move = {
      connectionId: row.connection_id, from: state.handledThrough, fromNextRunAt: state.nextRunAt, schedule: state.schedule, timezone: state.timezone, now,
    }
    const after = floor(state.handledThrough)
    // A first run handles everything up to now; a scheduled one, the latest occurrence due.
    const due = owesFirstRun(state) ? now : latestOccurrence(state.schedule, { timezone: state.timezone, after, upTo: now })
    if (!mayRun) {
      // Stopped until the connection may sync again; what came due meanwhile is skipped.
      await moveSync(db, { ...move, handledThrough: due ?? state.handledThrough, nextRunAt: null })
      return due === null ? 'nothing' : 'skipped'
    }
    if (due === null) {
      await moveSync(db, { ...move, handledThrough: state.handledThrough, nextRunAt: nextAfter(state, after) })
      return 'nothing'
    }
    // Full: leave it due; this process's next tick, or another process, runs it.
    if (inFlight.size >= capacity || stopped) return 'nothing'
    const nextRunAt = nextAfter(state, due)
    if (!(await standsActive(row.connection_id))) {
      await moveSync(db, { ...move, handledThrough: due, nextRunAt })
      return 'skipped'
    }
    const runId = randomUUID()
    const claimed = await claimSync(db, {
      connectionId: row.connection_id, from: state.handledThrough, fromNextRunAt: state.nextRunAt, due, nextRunAt,
      runningUntil: new Date(now.getTime() + SYNC_TIMEOUT_MS + leaseGraceMs), owner, runId, now,
    })
    if (!claimed) return 'nothing'
    logger.debug('integration sync: run started', { connectionId: row.connection_id, scheduledAt: due.toISOString() })
    const running: Promise<unknown> = runSync(deps, { connectionId: row.connection_id, runId }).finally(() => inFlight.delete(running))
    inFlight.add(running)
    return 'started'
  }

  /** Whether a counting binding of the connection stands active now (revocations found on the way are stored). */
  async function standsActive(connectionId: string): Promise<boolean> {
    const connection = await findConnection(db, connectionId)
    if (!connection) return false
    for (const row of await selectCountedBindings(db, { connectionId, limit: BINDINGS_CHECKED })) {
      const consumer = await findAppByIdOrSlug(db, row.consumer_app_id)
      if (!consumer) continue
      const binding = {
        id: row.id, consumerAppId: row.consumer_app_id, slot: row.slot, connectionId: row.connection_id, userId: row.user_id,
        createdBy: row.created_by, capabilities: row.capabilities, createdAt: new Date(row.created_at),
      }
      if (await bindingStanding({ db, clock }, { binding, connection, consumer, providerAppId: connection.providerAppId }) === 'active') return true
    }
    return false
  }

  function scheduleTick(delayMs: number): void {
    if (stopped) return
    timer = setTimeout(() => {
      ticking = tick()
        .catch((error: unknown) => logger.error('integration sync: a scheduler tick failed', { error: coerceError(error).message }))
        .finally(() => {
          ticking = undefined
          const now = clock.now().getTime()
          scheduleTick(Math.min(intervalMs, 60_000 - (now % 60_000) + 100))
        })
    }, delayMs)
    timer.unref()
  }

  async function idle(): Promise<void> {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight])
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
      await ticking
      await settledWithin([idle()], deps.stopGraceMs ?? 5_000)
      if (inFlight.size > 0) logger.warn('integration sync: runs still in progress at shutdown are left to their leases', { runs: inFlight.size })
    },
    tick,
    idle,
  }
}

/** A connection's row as a tick reads it. */
interface SyncState {
  readonly schedule: string
  readonly timezone: string
  readonly handledThrough: Date
  readonly nextRunAt: Date | null
}

/** Whether the row owes the connection the first run after a first binding (queries.ts: next_run_at not after handled_through). */
function owesFirstRun(state: SyncState): boolean {
  return state.nextRunAt !== null && state.nextRunAt.getTime() <= state.handledThrough.getTime()
}

function nextAfter(schedule: { schedule: string; timezone: string }, from: Date): Date | null {
  return nextOccurrences(schedule.schedule, { timezone: schedule.timezone, from, count: 1 })[0] ?? null
}

function latest(...instants: (Date | null)[]): Date {
  let out = new Date(-8.64e15)
  for (const at of instants) if (at !== null && at.getTime() > out.getTime()) out = at
  return out
}

function earliest(a: Date, b: Date): Date {
  return a.getTime() <= b.getTime() ? a : b
}
