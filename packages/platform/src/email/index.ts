/**
 * The email feature's public surface: the sign-in mailer other features send through, the
 * development mailbox readers (tests use `latestDevMailTo` to follow a sign-in link) and the
 * `/_dev/mail` routes; and app email (issue 17): `createAppEmail` answers `ctx.email`, runs
 * the outbound delivery worker, the inbound SMTP listener (when INBOUND_SMTP_PORT is set) and
 * the inbound worker, their retention purge, and serves the owner API's development
 * injection of inbound mail.
 */
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import type { ManagedFiles } from '../files/index.ts'
import type { FunctionHost } from '../functions/index.ts'
import { createDeliveryWorker, EMAIL_RETENTION_MS, type DeliveryWorkerOptions } from './delivery-worker.ts'
import { checkRecipient, storeInbound } from './inbound.ts'
import { createRateLimiter } from '../db/rate-limit.ts'
import { createInboundServer, type InboundServer } from './inbound-server.ts'
import { createInboundWorker, type InboundWorkerOptions } from './inbound-worker.ts'
import { emailOwnerRoutes } from './owner-routes.ts'
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
export { INBOUND_RETRY_DELAYS_SECONDS, type InboundWorkerOptions } from './inbound-worker.ts'
export type { EmailCall } from './send.ts'
export type { InboundEmailEvent } from './inbound-event.ts'

/** What app email needs from configuration (config.ts EmailSettings). */
export interface AppEmailSettings {
  readonly domain: string
  readonly maxRecipients: number
  readonly maxMessageBytes: number
  readonly recipientsPerHour: number
  /** INBOUND_SMTP_PORT (0: any free port, for tests); null keeps the listener off. */
  readonly inboundPort: number | null
  readonly inboundHost: string
  readonly inboundMaxBytes: number
  /** INBOUND_EMAIL_PER_HOUR: recipients an app accepts per clock hour (452 past it). */
  readonly inboundPerHour: number
}

/** Tuning a deployment (or a test) may change. */
export interface AppEmailOptions {
  /** The outbound delivery worker's tuning. */
  readonly delivery?: DeliveryWorkerOptions
  /** The inbound worker's tuning. */
  readonly inbound?: InboundWorkerOptions
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
  /** The Functions host (a getter: the composition root builds it after this). */
  readonly host: () => FunctionHost
  /** Inbound attachments are stored as managed files (a getter: the composition root builds them after this). */
  readonly files: () => ManagedFiles
  /** Generic failure messages (production) in inbound last errors. */
  readonly production: boolean
}

export interface AppEmail {
  /** Answers a `ctx.email` call from a running Function. */
  answer(call: EmailCall): Promise<unknown>
  /** Starts the delivery and inbound workers, the retention purge and (with a port) the inbound SMTP listener. */
  start(): Promise<void>
  /** Starts only the inbound SMTP listener (start() does too); resolves to its port. */
  listen(): Promise<number>
  /** Stops them; waits for attempts in flight; closes the SMTP connections. */
  stop(): Promise<void>
  /** One delivery pass, awaited to its end; returns how many messages it tried. */
  deliverDue(): Promise<number>
  /** One inbound pass, awaited to its end; returns how many receivers it ran. */
  receiveDue(): Promise<number>
  /** Deletes outbound and inbound messages that ended more than 14 days ago; returns how many. */
  purge(): Promise<number>
  /** The owner API's development injection (`/v1/apps/...`). */
  readonly routes: ReturnType<typeof emailOwnerRoutes>
}

/**
 * @example
 * const email = createAppEmail({ db, clock, logger, settings: config.email, smtpUrl: config.smtpUrl, host: () => functions, files: () => files, production: config.production })
 * await email.start()
 */
export function createAppEmail(deps: AppEmailDeps): AppEmail {
  const { db, clock, logger } = deps
  const capacity = deps.delivery?.capacity ?? 8
  const smtp = deps.smtpUrl === null ? null : createSmtpSender({ url: deps.smtpUrl, maxConnections: capacity })
  const sender = createSender({ db, clock, domain: deps.settings.domain, limits: deps.settings })
  const delivery = createDeliveryWorker({ db, clock, logger, smtp, ...deps.delivery })
  const inbound = createInboundWorker({ db, clock, logger, host: deps.host, files: deps.files, production: deps.production, ...deps.inbound })
  const settings = deps.settings
  const inboundLimiter = createRateLimiter({ db, clock })
  let listener: InboundServer | null = null
  let listening: Promise<number> | null = null
  let purgeTimer: ReturnType<typeof setInterval> | undefined

  function listen(): Promise<number> {
    if (settings.inboundPort === null) return Promise.reject(new Error('inbound email is off: INBOUND_SMTP_PORT is not set'))
    if (listening === null) {
      const server = createInboundServer({
        logger, maxBytes: settings.inboundMaxBytes, name: settings.domain,
        checkRecipient: async (address) => {
          const verdict = await checkRecipient({ db, emailDomain: settings.domain }, address)
          if (!verdict.accepted) return verdict
          // Anyone on the internet can send: each app takes a bounded number an hour (each
          // becomes stored mail, files and a Function run); the sender keeps the rest for later.
          const hit = await inboundLimiter.hit({ name: 'inbound-email:app', limit: settings.inboundPerHour, windowSeconds: 3600 }, verdict.appId)
          return hit.allowed ? verdict : { accepted: false, code: 452, message: '4.2.2 The app has received as much mail as it may this hour; try again later' }
        },
        store: (input) => storeInbound({ db, clock }, input),
      })
      listener = server
      listening = server.listen({ port: settings.inboundPort, host: settings.inboundHost })
      listening.then((port) => logger.info('inbound SMTP listening', { host: settings.inboundHost, port }), () => {})
    }
    return listening
  }

  async function purge(): Promise<number> {
    const before = new Date(clock.now().getTime() - EMAIL_RETENTION_MS)
    return (await delivery.purge()) + (await inbound.purge(before))
  }

  return {
    answer: (call) => sender.answer(call),
    async start() {
      await delivery.start()
      await inbound.start()
      if (settings.inboundPort !== null) await listen()
      const purgeNow = () => {
        purge().catch((error: unknown) => logger.error('email: the retention purge failed', { error: coerceError(error).message }))
      }
      purgeNow()
      purgeTimer = setInterval(purgeNow, deps.purgeIntervalMs ?? 60 * 60 * 1000)
      purgeTimer.unref()
    },
    listen,
    async stop() {
      clearInterval(purgeTimer)
      // New mail is refused (the sender retries) before the workers stop.
      await listening?.catch(() => {})
      await listener?.close()
      await Promise.all([delivery.stop(), inbound.stop()])
      smtp?.close()
    },
    deliverDue: () => delivery.runDue(),
    receiveDue: () => inbound.runDue(),
    purge,
    routes: emailOwnerRoutes({
      db, clock, host: deps.host, files: deps.files, emailDomain: settings.domain, maxBytes: settings.inboundMaxBytes,
    }),
  }
}
