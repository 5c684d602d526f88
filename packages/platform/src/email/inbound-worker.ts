/**
 * The inbound worker: claims received messages (platform.email_inbox) and invokes each app's
 * `email.inbound.function` with the inbound email event, retried like a queue job. Every
 * platform process runs one (lease-loop.ts).
 *
 * - An attempt: the app must be active (else a retryable failure, APP_NOT_ACTIVE); its active
 *   production release must still declare `email.inbound` (else failed at once,
 *   EMAIL_INBOUND_NOT_DECLARED) naming a system Function (else FUNCTION_NOT_FOUND). The event
 *   is built once (inbound-event.ts: attachments stored as the app's files) and kept on the
 *   row, so every attempt gets the same event and the same files. The Function runs as the
 *   app's system identity (`user: null`, `job: null`) under its own timeout.
 * - Outcomes, as for jobs (spec 7.1): success ends the row `done` (the raw message and the
 *   event discarded; the files stay the app's); `errors.unavailable` (503), a timeout or a
 *   crashed worker is retried after `retryDelaysSeconds[attempt - 1]` (about 1 h 45 min in
 *   all), then `failed`; any other failure is `failed` at once (dead-lettered). An attempt
 *   whose worker was killed for another invocation's timeout goes back uncounted. A process
 *   that dies leaves the row `running` until its lease expires; then any process counts the
 *   attempt (EMAIL_LEASE_EXPIRED) and retries it.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError, ServiceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { findAppByIdOrSlug } from '../apps/apps.ts'
import type { ManagedFiles } from '../files/index.ts'
import { attemptNotSpent, failureResponse, type FunctionFailure, type FunctionHost } from '../functions/index.ts'
import { buildInboundEvent } from './inbound-event.ts'
import {
  claimInbound, INBOX_CHANNEL, markInboundDone, markInboundFailed, markInboundNotStarted, purgeFinishedInbound, recoverExpiredInbound,
  saveInboundEvent, selectInboundFunction, setInboundLease, type ClaimedInbound, type InboxError,
} from './inbox-queries.ts'
import { createLeaseLoop, type LeaseLoop } from './lease-loop.ts'

/** The wait after each failed attempt, in seconds: 30 s, 2, 10, 30 and 60 minutes: six attempts over about 1 h 45 min. */
export const INBOUND_RETRY_DELAYS_SECONDS: readonly number[] = [30, 120, 600, 1800, 3600]
/** The receiver's time a claim's lease covers until its own timeout is known (the default Function timeout). */
const CLAIM_FUNCTION_SECONDS = 30
const MAX_ERROR_MESSAGE = 1000
const PURGE_BATCH = 1000

export interface InboundWorkerOptions {
  /** Most receivers this process runs at once. Default 8. */
  readonly capacity?: number
  /** Poll for due messages this often. Default 1000. */
  readonly pollIntervalMs?: number
  /** Added to the receiver's timeout to form the lease. Default 60. */
  readonly leaseGraceSeconds?: number
  /** How long `stop` waits for attempts in flight. Default 20 000. */
  readonly stopGraceMs?: number
  /** The retry schedule (tests shorten it). Default INBOUND_RETRY_DELAYS_SECONDS. */
  readonly retryDelaysSeconds?: readonly number[]
}

export interface InboundWorkerDeps extends InboundWorkerOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  /** The Functions host (a getter: the composition root builds it after this). */
  readonly host: () => FunctionHost
  /** Managed files (a getter: the composition root builds them after this). */
  readonly files: () => ManagedFiles
  /** Generic failure messages (production) in last errors. */
  readonly production: boolean
}

export interface InboundWorker extends LeaseLoop {
  /** Deletes messages that ended before `before`; returns how many. */
  purge(before: Date): Promise<number>
}

function bounded(code: string, rawMessage: string): InboxError {
  const message = rawMessage.replaceAll('\u0000', '\ufffd')
  return { code: code.slice(0, 128), message: message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE - 1)}…` : message }
}

/** As for queue jobs: only `errors.unavailable` (503), a timeout and a crashed worker are worth another attempt. */
function isRetryable(failure: FunctionFailure): boolean {
  if (failure.kind === 'timeout' || failure.kind === 'crashed') return true
  return failure.kind === 'service' && failure.status === 503
}

/**
 * @example
 * const worker = createInboundWorker({ db, clock, logger, host: () => functions, files, production: true })
 * await worker.start()
 */
export function createInboundWorker(deps: InboundWorkerDeps): InboundWorker {
  const { db, clock, logger } = deps
  const delays = deps.retryDelaysSeconds ?? INBOUND_RETRY_DELAYS_SECONDS
  const grace = deps.leaseGraceSeconds ?? 60
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`

  function retryAt(attempt: number): Date | null {
    const wait = delays[attempt - 1]
    return wait === undefined ? null : new Date(clock.now().getTime() + wait * 1000)
  }

  async function fail(row: ClaimedInbound, error: InboxError, retryable: boolean): Promise<void> {
    const next = retryable ? retryAt(row.attempts) : null
    await markInboundFailed(db, { id: row.id, attempt: row.attempts, now: clock.now(), error, retryAt: next })
    logger.warn(next === null ? 'inbound email failed' : 'inbound email attempt failed; retrying', {
      id: row.id, attempt: row.attempts, code: error.code, ...(next === null ? {} : { retryAt: next.toISOString() }),
    })
  }

  async function attempt(row: ClaimedInbound): Promise<void> {
    const ids = { id: row.id, attempt: row.attempts }
    try {
      const app = await findAppByIdOrSlug(db, row.app_id)
      if (app === null) return // deleted: its rows went with it
      if (app.status !== 'active') return await fail(row, bounded('APP_NOT_ACTIVE', `the app "${app.slug}" is ${app.status}`), true)
      const host = deps.host()
      const name = app.activeReleaseId === null ? null : await selectInboundFunction(db, app.activeReleaseId)
      if (name === null) {
        return await fail(row, bounded('EMAIL_INBOUND_NOT_DECLARED', 'the app\'s active release declares no email.inbound receiver'), false)
      }
      const fn = await host.resolve(app, name)
      if (fn === null || fn.declaration.access !== 'system') {
        return await fail(row, bounded('FUNCTION_NOT_FOUND', `the email.inbound.function "${name}" is not a declared system Function`), false)
      }
      if (fn.declaration.timeoutSeconds !== CLAIM_FUNCTION_SECONDS) {
        await setInboundLease(db, { ...ids, until: new Date(clock.now().getTime() + (fn.declaration.timeoutSeconds + grace) * 1000) })
      }
      let event = row.event
      if (event === null) {
        if (row.raw === null) return await fail(row, bounded('INTERNAL_ERROR', 'the message is no longer kept'), false)
        try {
          event = { ...await buildInboundEvent(
            { files: deps.files(), caller: { appId: row.app_id, namespaceId: row.namespace_id, userId: null, system: true, jobId: null } },
            { id: row.id, receivedAt: new Date(row.received_at), recipients: row.recipients, raw: new Uint8Array(row.raw) },
          ) }
        } catch (thrown) {
          // Storing an attachment failed (the file storage is down, or a part is over FILES_MAX_FILE_MB).
          const error = coerceError(thrown)
          const retryable = !(error instanceof ServiceError) || error.status >= 500
          return await fail(row, bounded(error instanceof ServiceError ? error.code : 'INTERNAL_ERROR', error.message), retryable)
        }
        if (!(await saveInboundEvent(db, { ...ids, event }))) return
      }
      const result = await host.run(fn, { input: event, user: null })
      if (result.ok) {
        await markInboundDone(db, { ...ids, now: clock.now() })
        logger.info('inbound email delivered to its receiver', { id: row.id, attempt: row.attempts })
        return
      }
      if (attemptNotSpent(result.error)) return await markInboundNotStarted(db, { ...ids, now: clock.now() })
      const { body } = failureResponse(result.error, { environment: deps.production ? 'production' : 'development' })
      await fail(row, bounded(body.error.code, body.error.message), isRetryable(result.error))
    } catch (thrown) {
      // The database or the host failed us: the row stays `running` and its lease expiry retries it.
      logger.error('inbound email: an attempt could not be completed', { id: row.id, attempt: row.attempts, error: coerceError(thrown).message })
    }
  }

  const loop = createLeaseLoop<ClaimedInbound>({
    db, logger, name: 'inbound email', channel: INBOX_CHANNEL,
    capacity: deps.capacity ?? 8, pollIntervalMs: deps.pollIntervalMs ?? 1000, stopGraceMs: deps.stopGraceMs ?? 20_000,
    async maintain() {
      const error = bounded('EMAIL_LEASE_EXPIRED', 'The platform process running this receiver stopped before it finished')
      while ((await recoverExpiredInbound(db, { now: clock.now(), error, delaysSeconds: delays, limit: 500 })) === 500) { /* more */ }
    },
    claim: (limit) => claimInbound(db, { now: clock.now(), limit, owner, leaseSeconds: CLAIM_FUNCTION_SECONDS + grace }),
    attempt: async (row) => {
      await attempt(row)
      return null
    },
  })

  return {
    ...loop,
    async purge(before) {
      let total = 0
      for (;;) {
        const deleted = await purgeFinishedInbound(db, { before, limit: PURGE_BATCH })
        total += deleted
        if (deleted < PURGE_BATCH) return total
      }
    },
  }
}
