/**
 * The delivery worker: claims due event deliveries and runs one attempt each through the
 * Functions host. Every platform process runs one; they share the work through PostgreSQL,
 * like the jobs dispatcher (jobs/dispatcher.ts), which it follows on a smaller scale: a
 * delivery has no queue, concurrency policy or idempotency key of an app's, so it does not
 * ride on the jobs engine (docs/decisions.md).
 *
 * - Wake-ups: LISTEN on `platform_integration_events` (emission notifies at commit), a
 *   finished attempt, and a poll every `pollIntervalMs` (retries becoming due, PGlite or a
 *   lost connection missing a notice).
 * - Claims: `for update skip locked`, oldest due first; the attempt is counted in the claim.
 *   The lease is the default Function timeout (30 s) plus `leaseGraceSeconds`, set to the
 *   handler Function's own timeout plus the grace before it runs when that differs. A process that dies
 *   leaves its deliveries `running` until the lease expires; then any process counts the
 *   attempt as failed (INTEGRATION_EVENT_LEASE_EXPIRED) and schedules the retry. A result
 *   is written only while the attempt is still the delivery's current one.
 * - An attempt, at attempt time: the consumer app active (else a failed attempt, retried);
 *   its ACTIVE production release's slot still subscribed to the type, the type still
 *   declared, the binding still the slot's live binding, standing active and granting the
 *   capability (else failed at once, no retry: the slot no longer receives it); then the
 *   slot's `events.function` runs as the app's system identity (`user: null`) with the
 *   envelope (envelope.ts). Success: delivered, payload discarded. Any failure, timeout or
 *   crash: retried after `retryDelaysSeconds[attempt - 1]` (about three hours in all), then
 *   failed, payload discarded. An attempt whose worker was killed for another invocation's
 *   timeout goes back to waiting, uncounted.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { coerceError, type ErrorCode } from '../../lib/errors.ts'
import type { Logger } from '../../lib/logger.ts'
import { attemptNotSpent, failureResponse, type FunctionFailure, type FunctionHost } from '../../functions/index.ts'
import type { IntegrationSlot } from '../../manifest/index.ts'
import { eventEnvelope } from './envelope.ts'
import {
  claimDeliveries, EVENTS_CHANNEL, setLease, markDelivered, markFailed, markNotStarted, purgeFinished, recoverExpiredLeases,
  selectSlot, type ClaimedDelivery, type DeliveryError,
} from './queries.ts'
import { bindingReceives, receivingFacts, slotHandler, type Refusal } from './subscription.ts'
import { settledWithin } from '../../lib/settle.ts'

/**
 * The wait after each failed attempt, in seconds: 10 s, 30 s, 1, 2, 5, 10, 20, 30, 45 and
 * 60 minutes: eleven attempts over about 2 h 54 min (spec 6.1: "about three hours").
 */
export const RETRY_DELAYS_SECONDS: readonly number[] = [10, 30, 60, 120, 300, 600, 1200, 1800, 2700, 3600]
/** Delivery records are kept this long after they end (spec 8: 14 days). */
export const DELIVERY_RETENTION_MS = 14 * 24 * 60 * 60 * 1000
/** The handler time a claim's lease covers until the handler's own timeout is known (the default Function timeout). */
const CLAIM_HANDLER_SECONDS = 30
const MAX_ERROR_MESSAGE = 1000
const PURGE_BATCH = 1000
const MAX_CACHED_SLOTS = 256

export interface DeliveryWorkerOptions {
  /** Most attempts this process runs at once. Default 16. */
  readonly capacity?: number
  /** Added to the handler's timeout to form the lease. Default 60. */
  readonly leaseGraceSeconds?: number
  /** Poll for due deliveries this often. Default 1000. */
  readonly pollIntervalMs?: number
  /** How long `stop` waits for running attempts. Default 20 000. */
  readonly stopGraceMs?: number
  /** The retry schedule (tests shorten it). Default RETRY_DELAYS_SECONDS. */
  readonly retryDelaysSeconds?: readonly number[]
  /** How often the 14-day retention purge runs. Default one hour. */
  readonly purgeIntervalMs?: number
}

export interface DeliveryWorkerDeps extends DeliveryWorkerOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  /** The Functions host (a getter: the composition root builds it after this). */
  readonly host: () => FunctionHost
  /** Generic failure messages (production) or detailed ones (development) in last errors. */
  readonly production: boolean
}

export interface DeliveryWorker {
  /** Starts listening, polling and the retention purge. */
  start(): Promise<void>
  /** Stops claiming and waits (at most `stopGraceMs`) for attempts in flight. */
  stop(): Promise<void>
  /** One pass awaited to its end: expired leases moved on, due deliveries claimed and run. Returns how many ran. */
  runDue(): Promise<number>
  /** Deletes delivery records that ended more than 14 days ago; returns how many. */
  purge(): Promise<number>
}

export function boundedError(input: { code: string; message: string; status?: number }): DeliveryError {
  const message = input.message.replaceAll('\u0000', '\ufffd')
  return {
    code: input.code.slice(0, 128),
    message: message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE - 1)}…` : message,
    ...(input.status === undefined ? {} : { status: input.status }),
  }
}

/**
 * @example
 * const worker = createDeliveryWorker({ db, clock, logger, host: () => functions, production: true })
 * await worker.start()
 */
export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, clock, logger } = deps
  const capacity = deps.capacity ?? 16
  const grace = deps.leaseGraceSeconds ?? 60
  const pollIntervalMs = deps.pollIntervalMs ?? 1000
  const delays = deps.retryDelaysSeconds ?? RETRY_DELAYS_SECONDS
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  const inFlight = new Set<Promise<void>>()
  let started = false
  let stopped = false
  let passing = false
  let again = false
  let poll: ReturnType<typeof setInterval> | undefined
  let purgeTimer: ReturnType<typeof setInterval> | undefined
  let unlisten: (() => Promise<void>) | undefined
  /** Slot declarations by release and slot (a release never changes). */
  const slots = new Map<string, Promise<IntegrationSlot | null>>()

  function slotOf(releaseId: string, slot: string): Promise<IntegrationSlot | null> {
    const key = `${releaseId}:${slot}`
    let entry = slots.get(key)
    if (entry === undefined) {
      if (slots.size >= MAX_CACHED_SLOTS) slots.delete(slots.keys().next().value!)
      entry = selectSlot(db, { releaseId, slot })
      entry.catch(() => slots.delete(key))
      slots.set(key, entry)
    }
    return entry
  }

  /** The retry time after attempt `attempt` failed, or null past the schedule. */
  function retryAt(attempt: number): Date | null {
    const wait = delays[attempt - 1]
    return wait === undefined ? null : new Date(clock.now().getTime() + wait * 1000)
  }

  async function refuse(delivery: ClaimedDelivery, refusal: Refusal): Promise<void> {
    await markFailed(db, { id: delivery.id, attempt: delivery.attempts, now: clock.now(), error: boundedError(refusal), retryAt: null })
  }

  /** Runs one claimed attempt to its recorded result. Never rejects. */
  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    const ids = { id: delivery.id, attempt: delivery.attempts }
    try {
      const facts = await receivingFacts(db, { consumerAppId: delivery.consumer_app_id, slot: delivery.slot, integration: delivery.integration_name })
      if (facts === null) return // the app was deleted: its deliveries went with it
      const app = facts.consumer
      if (app.status !== 'active') {
        await markFailed(db, {
          ...ids, now: clock.now(), retryAt: retryAt(delivery.attempts),
          error: boundedError({ code: 'APP_NOT_ACTIVE', message: `the app "${app.slug}" is ${app.status}` }),
        })
        return
      }
      const declaration = app.activeReleaseId === null ? null : await slotOf(app.activeReleaseId, delivery.slot)
      const slot = slotHandler(declaration, { integration: delivery.integration_name, type: delivery.type })
      if (!('handler' in slot)) return await refuse(delivery, slot)
      const receives = await bindingReceives({ db, clock }, facts, {
        bindingId: delivery.binding_id, providerAppId: delivery.provider_app_id, type: delivery.type, slotCapabilities: declaration!.capabilities,
      })
      if (receives !== true) return await refuse(delivery, receives)
      const fn = await deps.host().resolve(app, slot.handler)
      if (fn === null || fn.declaration.access !== 'system') {
        return await refuse(delivery, { code: 'FUNCTION_NOT_FOUND' satisfies ErrorCode, message: `the slot's events.function "${slot.handler}" is not a declared system Function` })
      }
      if (fn.declaration.timeoutSeconds !== CLAIM_HANDLER_SECONDS) {
        await setLease(db, { ...ids, until: new Date(clock.now().getTime() + (fn.declaration.timeoutSeconds + grace) * 1000) })
      }
      const result = await deps.host().run(fn, {
        input: eventEnvelope({
          id: delivery.event_id, type: delivery.type, occurredAt: new Date(delivery.occurred_at), slot: delivery.slot, provider: delivery.provider,
          bindingId: delivery.binding_id, data: delivery.data ?? {},
        }),
        user: null,
      })
      if (result.ok) {
        await markDelivered(db, { ...ids, now: clock.now() })
        return
      }
      if (attemptNotSpent(result.error)) {
        await markNotStarted(db, { ...ids, now: clock.now() })
        return
      }
      const { status, body } = failureResponse(result.error, { environment: deps.production ? 'production' : 'development' })
      await markFailed(db, {
        ...ids, now: clock.now(), retryAt: retryAt(delivery.attempts), error: boundedError({ code: body.error.code, message: body.error.message, status }),
      })
    } catch (thrown) {
      // The database or the host failed us: the delivery stays running and its lease expiry retries it.
      logger.error('events: a delivery attempt could not be completed', { deliveryId: delivery.id, attempt: delivery.attempts, error: coerceError(thrown).message })
    }
  }

  async function maintain(): Promise<void> {
    const error = boundedError({ code: 'INTEGRATION_EVENT_LEASE_EXPIRED', message: 'The platform process running this attempt stopped before it finished' })
    while ((await recoverExpiredLeases(db, { now: clock.now(), error, delaysSeconds: delays, limit: 500 })) === 500) { /* more */ }
  }

  async function claim(limit: number): Promise<ClaimedDelivery[]> {
    // One statement (select for update skip locked, then update): its own transaction.
    return await claimDeliveries(db, { now: clock.now(), limit, owner, leaseSeconds: CLAIM_HANDLER_SECONDS + grace })
  }

  function launch(delivery: ClaimedDelivery): Promise<void> {
    const running = attempt(delivery).finally(() => {
      inFlight.delete(running)
      schedulePass()
    })
    inFlight.add(running)
    return running
  }

  let lastMaintenance = 0
  async function pass(): Promise<ClaimedDelivery[]> {
    if (Date.now() - lastMaintenance >= pollIntervalMs) {
      lastMaintenance = Date.now()
      await maintain()
    }
    const free = capacity - inFlight.size
    if (free <= 0) return []
    return await claim(free)
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
        for (const delivery of claimed) void launch(delivery)
        // Full hands: there may be more due work once a slot frees (launch's finally looks again).
      })
      .catch((error: unknown) => logger.error('events: a delivery pass failed', { error: coerceError(error).message }))
      .finally(() => {
        passing = false
        if (again) {
          again = false
          schedulePass()
        }
      })
  }

  async function purge(): Promise<number> {
    const before = new Date(clock.now().getTime() - DELIVERY_RETENTION_MS)
    let total = 0
    for (;;) {
      const deleted = await purgeFinished(db, { before, limit: PURGE_BATCH })
      total += deleted
      if (deleted < PURGE_BATCH) return total
    }
  }

  return {
    async start() {
      if (started) return
      started = true
      unlisten = await db.listen(EVENTS_CHANNEL, () => schedulePass(), { onListen: () => schedulePass() })
      poll = setInterval(schedulePass, pollIntervalMs)
      poll.unref()
      const purgeNow = () => {
        purge().catch((error: unknown) => logger.error('events: the retention purge failed', { error: coerceError(error).message }))
      }
      purgeNow()
      purgeTimer = setInterval(purgeNow, deps.purgeIntervalMs ?? 60 * 60 * 1000)
      purgeTimer.unref()
      schedulePass()
    },

    async stop() {
      stopped = true
      clearInterval(poll)
      clearInterval(purgeTimer)
      await unlisten?.().catch(() => {})
      while (passing) await new Promise((resolve) => setTimeout(resolve, 5))
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

    purge,
  }
}
