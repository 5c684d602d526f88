/**
 * The email feature's public surface: the sign-in mailer other features send through, the
 * development mailbox readers (tests use `latestDevMailTo` to follow a sign-in link) and the
 * `/_dev/mail` routes; and app email (issue 17): `createAppEmail` answers `ctx.email`, runs
 * the outbound delivery worker and its retention purge.
 */
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { createDeliveryWorker, type DeliveryWorkerOptions } from './delivery-worker.ts'
import { createSender, type EmailCall } from './send.ts'
import { createSmtpSender } from './smtp-sender.ts'

export { createMailer, type Mailer, type MailerDeps, type OutboundMessage } from './mailer.ts'
export {
  DEV_MAIL_DEFAULT_LIMIT,
  DEV_MAIL_MAX_LIMIT,
  latestDevMailTo,
  listDevMail,
  type DevMail,
} from './dev-mailbox.ts'
export { devMailRoutes } from './routes.ts'
export { emailDeliveryFailed } from './errors.ts'
export { EMAIL_RETENTION_MS, SEND_RETRY_DELAYS_SECONDS, type DeliveryWorkerOptions } from './delivery-worker.ts'
export type { EmailCall } from './send.ts'

/** What app email needs from configuration (config.ts EmailSettings). */
export interface AppEmailSettings {
  readonly domain: string
  readonly maxRecipients: number
  readonly maxMessageBytes: number
  readonly recipientsPerHour: number
}

/** Tuning a deployment (or a test) may change. */
export interface AppEmailOptions {
  /** The outbound delivery worker's tuning. */
  readonly delivery?: DeliveryWorkerOptions
  /** How often the retention purge runs. Default one hour. */
  readonly purgeIntervalMs?: number
}

export interface AppEmailDeps extends AppEmailOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  readonly settings: AppEmailSettings
  /** SMTP_URL; null delivers into the development mailbox. */
  readonly smtpUrl: string | null
}

export interface AppEmail {
  /** Answers a `ctx.email` call from a running Function. */
  answer(call: EmailCall): Promise<unknown>
  /** Starts the delivery worker and the retention purge. */
  start(): Promise<void>
  /** Stops them; waits for attempts in flight; closes the SMTP connections. */
  stop(): Promise<void>
  /** One delivery pass, awaited to its end; returns how many messages it tried. */
  deliverDue(): Promise<number>
  /** Deletes messages that ended more than 14 days ago; returns how many. */
  purge(): Promise<number>
}

/**
 * @example
 * const email = createAppEmail({ db, clock, logger, settings: config.email, smtpUrl: config.smtpUrl })
 * await email.start()
 */
export function createAppEmail(deps: AppEmailDeps): AppEmail {
  const { db, clock, logger } = deps
  const capacity = deps.delivery?.capacity ?? 8
  const smtp = deps.smtpUrl === null ? null : createSmtpSender({ url: deps.smtpUrl, maxConnections: capacity })
  const sender = createSender({ db, clock, domain: deps.settings.domain, limits: deps.settings })
  const delivery = createDeliveryWorker({ db, clock, logger, smtp, ...deps.delivery })
  let purgeTimer: ReturnType<typeof setInterval> | undefined

  return {
    answer: (call) => sender.answer(call),
    async start() {
      await delivery.start()
      const purgeNow = () => {
        delivery.purge().catch((error: unknown) => logger.error('email: the retention purge failed', { error: coerceError(error).message }))
      }
      purgeNow()
      purgeTimer = setInterval(purgeNow, deps.purgeIntervalMs ?? 60 * 60 * 1000)
      purgeTimer.unref()
    },
    async stop() {
      clearInterval(purgeTimer)
      await delivery.stop()
      smtp?.close()
    },
    deliverDue: () => delivery.runDue(),
    purge: () => delivery.purge(),
  }
}
