/**
 * The loop both email workers run (delivery-worker.ts for the outbox, inbound-worker.ts for
 * the inbox), the integration events delivery worker's on a smaller scale: every platform
 * process runs one per queue and they share the work through PostgreSQL. Wake-ups: LISTEN
 * on the queue's channel (an insert notifies at commit), a finished attempt (a slot is
 * free), and a poll every `pollIntervalMs` (retries becoming due, and PGlite or a lost
 * connection missing a notice). Each pass first moves on expired leases (`maintain`, at most
 * once per poll interval), then claims up to the free capacity; `attempt` runs one claimed
 * item to its recorded result and never rejects. An attempt may claim the next item with the
 * write of its result (one round trip for both, when `claimNext`); that item runs in the same
 * slot at once.
 */
import type { Db } from '../db/db.ts'
import { coerceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { settledWithin } from '../lib/settle.ts'

export interface LeaseLoopOptions {
  /** Most attempts this process runs at once. */
  readonly capacity: number
  /** Poll for due work this often. */
  readonly pollIntervalMs: number
  /** How long `stop` waits for attempts in flight. */
  readonly stopGraceMs: number
}

export interface LeaseLoopDeps<T> extends LeaseLoopOptions {
  readonly db: Db
  readonly logger: Logger
  /** Names the loop in log lines, e.g. "email delivery". */
  readonly name: string
  readonly channel: string
  /** Moves expired leases on. */
  maintain(): Promise<void>
  claim(limit: number): Promise<T[]>
  /** Runs one claimed item to its recorded result; never rejects. Resolves to an item it claimed next (only when `claimNext`), or null. */
  attempt(item: T, options: { claimNext: boolean }): Promise<T | null>
}

export interface LeaseLoop {
  start(): Promise<void>
  /** Stops claiming and waits (at most `stopGraceMs`) for attempts in flight. */
  stop(): Promise<void>
  /** One pass awaited to its end: expired leases moved on, due items claimed and run. Returns how many ran. */
  runDue(): Promise<number>
}

/**
 * @example
 * const loop = createLeaseLoop({ db, logger, name: 'email delivery', channel: OUTBOX_CHANNEL, capacity: 16, pollIntervalMs: 1000, stopGraceMs: 20_000, maintain, claim, attempt })
 * await loop.start()
 */
export function createLeaseLoop<T>(deps: LeaseLoopDeps<T>): LeaseLoop {
  const inFlight = new Set<Promise<void>>()
  let started = false
  let stopped = false
  let passing = false
  let again = false
  let poll: ReturnType<typeof setInterval> | undefined
  let unlisten: (() => Promise<void>) | undefined
  let lastMaintenance = 0

  function launch(item: T): Promise<void> {
    const running = (async () => {
      let next: T | null = item
      // No new claims once stopping; an item claimed already still runs (stop waits for it).
      while (next !== null) next = await deps.attempt(next, { claimNext: started && !stopped })
    })().finally(() => {
      inFlight.delete(running)
      schedulePass()
    })
    inFlight.add(running)
    return running
  }

  async function pass(): Promise<T[]> {
    if (Date.now() - lastMaintenance >= deps.pollIntervalMs) {
      lastMaintenance = Date.now()
      await deps.maintain()
    }
    const free = deps.capacity - inFlight.size
    if (free <= 0) return []
    return await deps.claim(free)
  }

  function schedulePass(): void {
    if (!started || stopped) return
    if (passing) {
      again = true
      return
    }
    passing = true
    pass()
      .then((claimed) => {
        for (const item of claimed) void launch(item)
        // Full hands: there may be more; a finished attempt looks again.
      })
      .catch((error: unknown) => deps.logger.error(`${deps.name}: a pass failed`, { error: coerceError(error).message }))
      .finally(() => {
        passing = false
        if (again) {
          again = false
          schedulePass()
        }
      })
  }

  return {
    async start() {
      if (started) return
      started = true
      // A (re)established subscription may have missed notices: look at once.
      unlisten = await deps.db.listen(deps.channel, () => schedulePass(), { onListen: () => schedulePass() })
      poll = setInterval(schedulePass, deps.pollIntervalMs)
      poll.unref()
      schedulePass()
    },

    async stop() {
      stopped = true
      clearInterval(poll)
      await unlisten?.().catch(() => {})
      while (passing) await new Promise((resolve) => setTimeout(resolve, 5))
      await settledWithin([...inFlight], deps.stopGraceMs)
    },

    async runDue() {
      lastMaintenance = Date.now()
      await deps.maintain()
      const free = deps.capacity - inFlight.size
      if (free <= 0) return 0
      const claimed = await deps.claim(free)
      await Promise.all(claimed.map(launch))
      return claimed.length
    },
  }
}
