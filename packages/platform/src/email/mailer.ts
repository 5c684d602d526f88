/**
 * Outbound email. With an SMTP URL configured, messages go out through nodemailer; without
 * one they land in the development mailbox (`platform.dev_mail`, shown at /_dev/mail).
 * Bodies carry sign-in secrets, so nothing here ever logs them: log lines name the
 * recipient and subject only, and the SMTP URL (which may hold a password) is never logged.
 */
import { createTransport } from 'nodemailer'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { coerceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { emailDeliveryFailed } from './errors.ts'
import { insertDevMail } from './queries.ts'

export interface OutboundMessage {
  to: string
  subject: string
  text: string
  html?: string
}

export interface Mailer {
  /** Delivers one message; throws EMAIL_DELIVERY_FAILED when the SMTP server does not take it. */
  send(message: OutboundMessage): Promise<void>
}

export interface MailerDeps {
  db: Db
  clock: Clock
  logger: Logger
  /** smtp:// or smtps:// URL, credentials included; null keeps mail in the development mailbox. */
  smtpUrl: string | null
  /** The From address of every message, e.g. "Service <no-reply@example.com>". */
  from: string
}

/**
 * Sign-in and confirmation mail waits on the SMTP server, so give up well before the
 * nodemailer defaults (2 minutes to connect, 10 minutes idle). Query parameters on the SMTP
 * URL (e.g. `?connectionTimeout=30000`) override these.
 */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/**
 * Builds the platform's mailer.
 *
 * @example
 * const mailer = createMailer({ db, clock, logger, smtpUrl: config.smtpUrl, from: config.mailFrom })
 * await mailer.send({ to: 'ana@acme.test', subject: 'Your sign-in link', text: `Open ${link}` })
 */
export function createMailer(deps: MailerDeps): Mailer {
  return deps.smtpUrl === null ? devMailboxMailer(deps) : smtpMailer(deps, deps.smtpUrl)
}

function devMailboxMailer(deps: MailerDeps): Mailer {
  return {
    async send(message) {
      const stored = await insertDevMail(deps.db, {
        to: message.to,
        from: deps.from,
        subject: message.subject,
        text: message.text,
        html: message.html ?? null,
        createdAt: deps.clock.now(),
      })
      deps.logger.info('email stored in the development mailbox', {
        to: message.to,
        subject: message.subject,
        id: stored.id,
      })
    },
  }
}

function smtpMailer(deps: MailerDeps, smtpUrl: string): Mailer {
  assertSmtpUrl(smtpUrl)
  // One transport for the process: without pooling it opens a connection per message and
  // holds nothing open in between, so there is nothing to close on shutdown.
  const transport = createTransport({ ...SMTP_TIMEOUTS, url: smtpUrl })
  return {
    async send(message) {
      try {
        const info = await transport.sendMail({
          from: deps.from,
          to: message.to,
          subject: message.subject,
          text: message.text,
          ...(message.html === undefined ? {} : { html: message.html }),
        })
        deps.logger.info('email sent', { to: message.to, subject: message.subject, messageId: info.messageId })
      } catch (thrown) {
        const error = coerceError(thrown)
        const smtpCode = (error as { code?: unknown }).code
        deps.logger.warn('email delivery failed', {
          to: message.to,
          subject: message.subject,
          error: error.message,
          ...(typeof smtpCode === 'string' ? { smtpCode } : {}),
        })
        throw emailDeliveryFailed(
          `the email to ${message.to} could not be delivered through the configured SMTP server (${error.message}); check SMTP_URL and that the server is reachable`,
          { cause: error },
        )
      }
    },
  }
}

/** Refuses anything but smtp:// and smtps:// without echoing the URL (it may hold a password). */
function assertSmtpUrl(smtpUrl: string): void {
  let protocol: string
  try {
    protocol = new URL(smtpUrl).protocol
  } catch {
    throw new TypeError('the SMTP URL is not a valid URL; use smtp://user:pass@host:587 or smtps://user:pass@host:465')
  }
  if (protocol !== 'smtp:' && protocol !== 'smtps:') {
    throw new TypeError(`the SMTP URL must start with smtp:// or smtps://, not ${protocol}//`)
  }
}
