/**
 * The push delivery worker: claims due deliveries and POSTs each to its subscription's push
 * service (web-push-request.ts). Every platform process runs one; they share the work
 * through PostgreSQL as the integration events worker does (integrations/events/), on its
 * own table rather than the jobs engine: a delivery runs no Function of the app and has no
 * queue, concurrency policy or idempotency key of an app's (docs/decisions.md).
 *
 * - Wake-ups: LISTEN on `platform_push_deliveries` (a send notifies at commit), a finished
 *   attempt, and a poll every `pollIntervalMs` (retries becoming due, PGlite, a lost notice).
 * - Claims: `for update skip locked`, oldest due first; the attempt is counted in the claim;
 *   the lease is the request timeout plus `leaseGraceSeconds`. A process that dies leaves its
 *   deliveries `running` until the lease expires; then any process counts the attempt failed
 *   (PUSH_LEASE_EXPIRED) and schedules the retry. A result is written only while the attempt
 *   is still the delivery's current one.
 * - An attempt: the subscription gone (unsubscribed, or removed after a 404/410): failed, no
 *   retry. The app not active: retried later. The endpoint's host now resolving to a private
 *   address: failed and the subscription removed. Then the POST: 2xx delivered (payload
 *   discarded); 404/410 the subscription removed, failed; 429, 5xx, timeouts and network
 *   failures retried after `retryDelaysSeconds[attempt - 1]` (or the service's Retry-After
 *   when longer, up to an hour), failed past the schedule; any other answer failed at once.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { settledWithin } from '../lib/settle.ts'
import { checkEndpointAddresses, type EndpointPolicy } from './endpoints.ts'
import {
  claimDeliveries, deleteSubscriptionById, markDelivered, markFailed, purgeFinished, PUSH_CHANNEL, recoverExpiredLeases,
  type ClaimedDelivery, type DeliveryError,
} from './queries.ts'
import type { VapidKeyStore } from './vapid-keys.ts'
import { PUSH_REQUEST_TIMEOUT_MS, sendPush, topicOf, type PushOutcome, type PushTarget } from './web-push-request.ts'

/**
 * The wait after each failed attempt, in seconds: 10 s, 30 s, 1, 2, 5, 10, 20 and 30
 * minutes, then an hour: nine retries over about two hours, then the delivery fails.
 */
export const RETRY_DELAYS_SECONDS: readonly number[] = [10, 30, 60, 120, 300, 600, 1200, 1800, 3600]
/** Delivery records are kept this long after they end. */
export const DELIVERY_RETENTION_MS = 14 * 24 * 60 * 60 * 1000
const MAX_ERROR_MESSAGE = 500
const PURGE_BATCH = 1000

export interface PushWorkerOptions {
  /** Most attempts this process runs at once. Default 32. */
  readonly capacity?: number
  /** Added to the request timeout to form the lease. Default 30. */
  readonly leaseGraceSeconds?: number
  /** Poll for due deliveries this often. Default 1000. */
  readonly pollIntervalMs?: number
  /** Longest wait for a push service's answer. Default 30 000. */
  readonly requestTimeoutMs?: number
  /** The retry schedule (tests shorten it). Default RETRY_DELAYS_SECONDS. */
  readonly retryDelaysSeconds?: readonly number[]
  /** How long `stop` waits for attempts in flight. Default 10 000. */
  readonly stopGraceMs?: number
  /** How often the 14-day retention purge runs. Default one hour. */
  readonly purgeIntervalMs?: number
}

export interface PushWorkerDeps extends PushWorkerOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  readonly vapid: VapidKeyStore
  /** The VAPID `sub` claim: a mailto: or https: URL push services may contact. */
  readonly subject: string
  readonly policy: EndpointPolicy
}

export interface PushWorker {
  /** Makes the VAPID keys if the platform has none, then listens, polls and purges. */
  start(): Promise<void>
  /** Stops claiming and waits (at most `stopGraceMs`) for attempts in flight. */
  stop(): Promise<void>
  /** One pass awaited to its end: expired leases moved on, due deliveries claimed and sent. Returns how many were sent. */
  runDue(): Promise<number>
  /** Deletes delivery records that ended more than 14 days ago; returns how many. */
  purge(): Promise<number>
}

function boundedError(input: { code: string; message: string; status?: number | undefined }): DeliveryError {
  const message = input.message.replaceAll('\u0000', '\ufffd')
  return {
    code: input.code,
    message: message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE - 1)}…` : message,
    ...(input.status === undefined ? {} : { status: input.status }),
  }
}

/**
 * @example
 * const worker = createPushWorker({ db, clock, logger, vapid, subject: 'mailto:ops@example.com', policy: { allowLoopbackHttp: false } })
 * await worker.start()
 */
export function createPushWorker(deps: PushWorkerDeps): PushWorker {
  const { db, clock, logger } = deps
  const capacity = deps.capacity ?? 32
  const requestTimeoutMs = deps.requestTimeoutMs ?? PUSH_REQUEST_TIMEOUT_MS
  const leaseSeconds = Math.ceil(requestTimeoutMs / 1000) + (deps.leaseGraceSeconds ?? 30)
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

  /** The retry time after attempt `attempt` failed (at least `atLeastSeconds` away), or null past the schedule. */
  function retryAt(attempt: number, atLeastSeconds = 0): Date | null {
    const wait = delays[attempt - 1]
    return wait === undefined ? null : new Date(clock.now().getTime() + Math.max(wait, atLeastSeconds) * 1000)
  }

  async function fail(delivery: ClaimedDelivery, error: DeliveryError, retry: Date | null): Promise<void> {
    await markFailed(db, { id: delivery.id, attempt: delivery.attempts, now: clock.now(), error, retryAt: retry })
  }

  async function record(delivery: ClaimedDelivery, outcome: PushOutcome): Promise<void> {
    const ids = { id: delivery.id, attempt: delivery.attempts }
    switch (outcome.kind) {
      case 'delivered':
        await markDelivered(db, { ...ids, now: clock.now() })
        return
      case 'gone':
        await deleteSubscriptionById(db, delivery.subscription_id)
        await fail(delivery, boundedError({
          code: 'PUSH_SUBSCRIPTION_EXPIRED', status: outcome.status,
          message: `the push service answered ${outcome.status}: the subscription expired or was unsubscribed, and is removed`,
        }), null)
        return
      case 'retry':
        await fail(delivery, boundedError({ code: 'PUSH_SERVICE_UNAVAILABLE', message: outcome.message, status: outcome.status }),
          retryAt(delivery.attempts, outcome.retryAfterSeconds))
        return
      case 'rejected':
        await fail(delivery, boundedError({ code: 'PUSH_REJECTED', message: outcome.message, status: outcome.status }), null)
        return
      default:
        outcome satisfies never
    }
  }

  /** Runs one claimed attempt to its recorded result. Never rejects. */
  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    try {
      if (delivery.endpoint === null || delivery.p256dh === null || delivery.auth === null || delivery.payload === null) {
        await fail(delivery, boundedError({ code: 'PUSH_SUBSCRIPTION_GONE', message: 'the subscription was removed before the notification was sent' }), null)
        return
      }
      if (delivery.app_status !== 'active') {
        await fail(delivery, boundedError({ code: 'APP_NOT_ACTIVE', message: `the app is ${delivery.app_status ?? 'gone'}` }), retryAt(delivery.attempts))
        return
      }
      const target: PushTarget = { endpoint: delivery.endpoint, p256dh: delivery.p256dh, auth: delivery.auth }
      let refused: string | null
      try {
        refused = await checkEndpointAddresses(new URL(target.endpoint), deps.policy)
      } catch (error) {
        // Unchecked, nothing is sent (the POST's own look-up could answer a private address):
        // a name that does not resolve now may resolve later, so the attempt is retried.
        const message = `the push service's name did not resolve: ${coerceError(error).message}`
        await fail(delivery, boundedError({ code: 'PUSH_SERVICE_UNAVAILABLE', message }), retryAt(delivery.attempts))
        return
      }
      if (refused !== null) {
        await deleteSubscriptionById(db, delivery.subscription_id)
        await fail(delivery, boundedError({ code: 'PUSH_ENDPOINT_REFUSED', message: `${refused}; the subscription is removed` }), null)
        return
      }
      const topic = topicOf(delivery.payload.tag)
      const outcome = await sendPush({
        target, payload: JSON.stringify(delivery.payload), vapid: await deps.vapid.keys(), subject: deps.subject, timeoutMs: requestTimeoutMs,
        ...(topic === undefined ? {} : { topic }),
      })
      await record(delivery, outcome)
    } catch (thrown) {
      // The database or the keys failed us: the delivery stays running and its lease expiry retries it.
      logger.error('push: a delivery attempt could not be completed', { deliveryId: delivery.id, attempt: delivery.attempts, error: coerceError(thrown).message })
    }
  }

  async function maintain(): Promise<void> {
    const error = boundedError({ code: 'PUSH_LEASE_EXPIRED', message: 'The platform process sending this notification stopped before it finished' })
    while ((await recoverExpiredLeases(db, { now: clock.now(), error, delaysSeconds: delays, limit: 500 })) === 500) { /* more */ }
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
    return await claimDeliveries(db, { now: clock.now(), limit: free, owner, leaseSeconds })
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
      })
      .catch((error: unknown) => logger.error('push: a delivery pass failed', { error: coerceError(error).message }))
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
      // First start: the key pair exists before any browser asks for it.
      await deps.vapid.keys()
      started = true
      unlisten = await db.listen(PUSH_CHANNEL, () => schedulePass(), { onListen: () => schedulePass() })
      poll = setInterval(schedulePass, pollIntervalMs)
      poll.unref()
      const purgeNow = () => {
        purge().catch((error: unknown) => logger.error('push: the retention purge failed', { error: coerceError(error).message }))
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
      await settledWithin([...inFlight], deps.stopGraceMs ?? 10_000)
    },

    async runDue() {
      lastMaintenance = Date.now()
      await maintain()
      const free = capacity - inFlight.size
      if (free <= 0) return 0
      const claimed = await claimDeliveries(db, { now: clock.now(), limit: free, owner, leaseSeconds })
      await Promise.all(claimed.map(launch))
      return claimed.length
    },

    purge,
  }
}
