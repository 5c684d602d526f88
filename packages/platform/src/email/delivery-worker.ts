/**
 * The delivery worker: claims queued app mail (platform.email_outbox) and delivers each
 * message once per attempt, through the SMTP server of SMTP_URL or, without one, into the
 * development mailbox. Every platform process runs one (lease-loop.ts); they share the work
 * through PostgreSQL.
 *
 * - A claim leases the message for `leaseSeconds` (the SMTP timeouts bound an attempt) and
 *   counts the attempt. A process that dies leaves it `sending` until the lease expires; then
 *   any process counts the attempt as failed (EMAIL_LEASE_EXPIRED) and queues it again after
 *   the schedule's delay. A result is written only while the attempt is the current one.
 * - SMTP: the server's acceptance ends the message `sent` (recipients it refused while taking
 *   the others are kept in `rejected`); its 5xx answer ends it `failed` at once
 *   (EMAIL_REJECTED, dead-lettered); any other failure queues it again after
 *   `retryDelaysSeconds[attempt - 1]` (about 24 hours in all), then `failed`
 *   (EMAIL_DELIVERY_FAILED). A process killed between the server's 250 and the commit of
 *   `sent` sends the message again at the lease's expiry, with the same Message-ID (a failed
 *   write of `sent` is tried again a few times first). The write of `sent` also claims the
 *   next due message for the slot it frees, in the same statement.
 * - Development mailbox: one row of platform.dev_mail per recipient and `sent`, in one
 *   transaction: exactly once.
 * - Bodies are discarded when the message ends; rows are purged 14 days after.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError, type ErrorCode } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { createLeaseLoop, type LeaseLoop } from './lease-loop.ts'
import {
  claimMessages, markFailed, markSent, markSentAndClaim, OUTBOX_CHANNEL, purgeFinishedMessages, purgeSendWindows, recoverExpiredSends,
  type ClaimedMessage, type OutboxError,
} from './outbox-queries.ts'
import { insertDevMail } from './queries.ts'
import { SmtpFailure, type SmtpSender } from './smtp-sender.ts'

/**
 * The wait after each failed attempt, in seconds: 10 s, 30 s, 1, 2, 5, 10, 20 and 30 minutes,
 * 1, 2, 4, 8 and 8 hours: fourteen attempts over about 24 hours.
 */
export const SEND_RETRY_DELAYS_SECONDS: readonly number[] = [10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 28800]
/** Outbox and inbox rows are kept this long after they end. */
export const EMAIL_RETENTION_MS = 14 * 24 * 60 * 60 * 1000
const MAX_ERROR_MESSAGE = 1000
/** A failed write of `sent` is tried again after these waits (as the jobs dispatcher does). */
const RESULT_WRITE_RETRIES_MS = [100, 500, 2000, 5000]
const PURGE_BATCH = 1000

export interface DeliveryWorkerOptions {
  /** Most messages this process sends at once (and SMTP connections it keeps). Default 8. */
  readonly capacity?: number
  /** Poll for due messages this often. Default 1000. */
  readonly pollIntervalMs?: number
  /** The lease of an attempt. Default 120 (the SMTP timeouts end an attempt well before). */
  readonly leaseSeconds?: number
  /** How long `stop` waits for attempts in flight. Default 20 000. */
  readonly stopGraceMs?: number
  /** The retry schedule (tests shorten it). Default SEND_RETRY_DELAYS_SECONDS. */
  readonly retryDelaysSeconds?: readonly number[]
}

export interface DeliveryWorkerDeps extends DeliveryWorkerOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  /** The SMTP server of SMTP_URL; null delivers into the development mailbox. */
  readonly smtp: SmtpSender | null
}

export interface DeliveryWorker extends LeaseLoop {
  /** Deletes messages that ended more than 14 days ago and send windows older than a day; returns how many messages. */
  purge(): Promise<number>
}

export function boundedError(input: { code: ErrorCode; message: string; smtpCode?: number | undefined }): OutboxError {
  const message = input.message.replaceAll('\u0000', '\ufffd')
  return {
    code: input.code,
    message: message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE - 1)}…` : message,
    ...(input.smtpCode === undefined ? {} : { smtpCode: input.smtpCode }),
  }
}

/** Thrown inside the development mailbox's transaction when the attempt is no longer current: nothing is stored. */
class NotCurrent extends Error {}

/**
 * @example
 * const worker = createDeliveryWorker({ db, clock, logger, smtp: config.smtpUrl ? createSmtpSender({ url: config.smtpUrl, maxConnections: 8 }) : null })
 * await worker.start()
 */
export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, clock, logger } = deps
  const delays = deps.retryDelaysSeconds ?? SEND_RETRY_DELAYS_SECONDS
  const leaseSeconds = deps.leaseSeconds ?? 120
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`

  /** Runs a write of `sent`, trying a failed one again after RESULT_WRITE_RETRIES_MS. */
  async function persistently<T>(write: () => Promise<T>): Promise<T> {
    for (let retry = 0; ; retry += 1) {
      try {
        return await write()
      } catch (error) {
        const wait = RESULT_WRITE_RETRIES_MS[retry]
        if (wait === undefined) throw error
        logger.warn('email: recording a sent message failed; trying again', { retryInMs: wait, error: coerceError(error).message })
        await new Promise((resolve) => setTimeout(resolve, wait))
      }
    }
  }

  function retryAt(attempt: number): Date | null {
    const wait = delays[attempt - 1]
    return wait === undefined ? null : new Date(clock.now().getTime() + wait * 1000)
  }

  async function intoDevMailbox(message: ClaimedMessage): Promise<void> {
    const now = clock.now()
    try {
      await db.transaction(async (tx) => {
        for (const to of message.recipients) {
          await insertDevMail(tx, { to, from: message.from_address, subject: message.subject, text: message.text_body ?? '', html: message.html_body, createdAt: now })
        }
        if (!(await markSent(tx, { id: message.id, attempt: message.attempts, now, rejected: [] }))) throw new NotCurrent()
      })
      logger.info('email stored in the development mailbox', { id: message.id, recipients: message.recipients.length })
    } catch (error) {
      if (!(error instanceof NotCurrent)) throw error
    }
  }

  /** Resolves to the message claimed next with the write of `sent` (when `claimNext`), or null. */
  async function overSmtp(message: ClaimedMessage, smtp: SmtpSender, claimNext: boolean): Promise<ClaimedMessage | null> {
    const ids = { id: message.id, attempt: message.attempts }
    try {
      const { rejected } = await smtp.send({
        from: message.from_address, to: message.recipients, replyTo: message.reply_to, subject: message.subject,
        text: message.text_body, html: message.html_body, messageId: message.message_id, date: new Date(message.created_at),
      })
      logger.info('email sent', { id: message.id, recipients: message.recipients.length, rejected: rejected.length })
      // The server has the message: losing this write would send it again at the lease's expiry.
      if (!claimNext) {
        await persistently(() => markSent(db, { ...ids, now: clock.now(), rejected }))
        return null
      }
      const [next] = await persistently(() => markSentAndClaim(db, { ...ids, now: clock.now(), rejected, limit: 1, owner, leaseSeconds }))
      return next ?? null
    } catch (thrown) {
      if (!(thrown instanceof SmtpFailure)) throw thrown
      const next = thrown.permanent ? null : retryAt(message.attempts)
      const error = thrown.permanent
        ? boundedError({ code: 'EMAIL_REJECTED', message: `The SMTP server refused the message: ${thrown.message}`, smtpCode: thrown.smtpCode })
        : boundedError({ code: 'EMAIL_DELIVERY_FAILED', message: `The SMTP server did not take the message: ${thrown.message}`, smtpCode: thrown.smtpCode })
      await markFailed(db, { ...ids, now: clock.now(), error, retryAt: next })
      logger.warn(next === null ? 'email failed' : 'email delivery failed; retrying', {
        id: message.id, attempt: message.attempts, error: error.message, ...(thrown.smtpCode === undefined ? {} : { smtpCode: thrown.smtpCode }),
        ...(next === null ? {} : { retryAt: next.toISOString() }),
      })
      return null
    }
  }

  async function attempt(message: ClaimedMessage, options: { claimNext: boolean }): Promise<ClaimedMessage | null> {
    try {
      if (deps.smtp === null) await intoDevMailbox(message)
      else return await overSmtp(message, deps.smtp, options.claimNext)
    } catch (thrown) {
      // The database failed us: the message stays `sending` and its lease expiry retries it.
      logger.error('email: a delivery attempt could not be completed', { id: message.id, attempt: message.attempts, error: coerceError(thrown).message })
    }
    return null
  }

  const loop = createLeaseLoop<ClaimedMessage>({
    db, logger, name: 'email delivery', channel: OUTBOX_CHANNEL,
    capacity: deps.capacity ?? 8, pollIntervalMs: deps.pollIntervalMs ?? 1000, stopGraceMs: deps.stopGraceMs ?? 20_000,
    async maintain() {
      const error = boundedError({ code: 'EMAIL_LEASE_EXPIRED', message: 'The platform process sending this message stopped before it finished' })
      while ((await recoverExpiredSends(db, { now: clock.now(), error, delaysSeconds: delays, limit: 500 })) === 500) { /* more */ }
    },
    claim: (limit) => claimMessages(db, { now: clock.now(), limit, owner, leaseSeconds }),
    attempt,
  })

  return {
    ...loop,
    async purge() {
      const now = clock.now().getTime()
      await purgeSendWindows(db, new Date(now - 24 * 60 * 60 * 1000))
      const before = new Date(now - EMAIL_RETENTION_MS)
      let total = 0
      for (;;) {
        const deleted = await purgeFinishedMessages(db, { before, limit: PURGE_BATCH })
        total += deleted
        if (deleted < PURGE_BATCH) return total
      }
    },
  }
}
