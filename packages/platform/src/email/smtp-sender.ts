/**
 * The Node adapter that hands app mail to the SMTP server of SMTP_URL through nodemailer: a
 * pooled transport (up to `maxConnections` connections kept open between messages, so a
 * queue of messages does not reconnect for each), and the rule that sorts its failures:
 * the server's 5xx answer is permanent (the message is dead-lettered), everything else (4xx,
 * refused or lost connections, timeouts, and a refused login, which the operator fixes) is
 * temporary and retried. Bodies and the SMTP URL (it may hold a password) are never logged.
 */
import { createTransport } from 'nodemailer'
import { coerceError } from '../lib/errors.ts'

export interface SmtpMessage {
  readonly from: string
  readonly to: readonly string[]
  readonly replyTo: string | null
  readonly subject: string
  readonly text: string | null
  readonly html: string | null
  /** `<id@domain>`. */
  readonly messageId: string
  readonly date: Date
}

export interface SmtpSender {
  /** Resolves with the recipients the server refused while taking the message for the others; throws an SmtpFailure. */
  send(message: SmtpMessage): Promise<{ rejected: string[] }>
  close(): void
}

/** A delivery attempt that did not reach the server's acceptance. */
export class SmtpFailure extends Error {
  override name = 'SmtpFailure'
  /** The server's 5xx answer: sending again would be refused again. */
  readonly permanent: boolean
  readonly smtpCode: number | undefined

  constructor(message: string, facts: { permanent: boolean; smtpCode: number | undefined; cause: unknown }) {
    super(message, { cause: facts.cause })
    this.permanent = facts.permanent
    this.smtpCode = facts.smtpCode
  }
}

/** Connection, greeting and per-command socket timeouts; SMTP_URL query parameters override them. */
export const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/**
 * @example
 * const sender = createSmtpSender({ url: 'smtp://user:pass@smtp.example.com:587', maxConnections: 4 })
 * await sender.send({ from: 'support@tasks.example.com', to: ['ada@example.com'], replyTo: null, subject: 'Hi', text: 'Hello', html: null, messageId: '<1@tasks.example.com>', date: new Date() })
 */
export function createSmtpSender(options: { url: string; maxConnections: number }): SmtpSender {
  const open = () => createTransport({ ...SMTP_TIMEOUTS, pool: true, maxConnections: options.maxConnections, maxMessages: Infinity, url: options.url })
  // Opened on first use and again after close(), so a stopped worker that starts again sends.
  let transport: ReturnType<typeof open> | null = null
  return {
    async send(message) {
      try {
        transport ??= open()
        const info = await transport.sendMail({
          envelope: { from: message.from, to: [...message.to] },
          from: message.from,
          to: [...message.to],
          ...(message.replyTo === null ? {} : { replyTo: message.replyTo }),
          subject: message.subject,
          ...(message.text === null ? {} : { text: message.text }),
          ...(message.html === null ? {} : { html: message.html }),
          messageId: message.messageId,
          date: message.date,
          // Addresses were parsed strictly already; nodemailer must not reinterpret them.
          disableFileAccess: true,
          disableUrlAccess: true,
        })
        return { rejected: (info.rejected as unknown[]).map((entry) => (typeof entry === 'string' ? entry : String((entry as { address?: unknown }).address))) }
      } catch (thrown) {
        throw smtpFailure(thrown)
      }
    },
    close() {
      transport?.close()
      transport = null
    },
  }
}

/**
 * Sorts a nodemailer failure: permanent only for the server's 5xx answer to the envelope or
 * the message (not to the login).
 */
export function smtpFailure(thrown: unknown): SmtpFailure {
  const error = coerceError(thrown)
  const facts = error as { code?: unknown; responseCode?: unknown }
  const smtpCode = typeof facts.responseCode === 'number' ? facts.responseCode : undefined
  const permanent = facts.code !== 'EAUTH' && smtpCode !== undefined && smtpCode >= 500 && smtpCode < 600
  return new SmtpFailure(error.message, { permanent, smtpCode, cause: error })
}
