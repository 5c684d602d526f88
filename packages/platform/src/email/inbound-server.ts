/**
 * The inbound SMTP listener (Node adapter over smtp-server), on INBOUND_SMTP_PORT: no AUTH,
 * no STARTTLS (docs/operations.md: put a TLS-terminating relay in front where needed), SIZE
 * advertised. The SMTP rules it keeps:
 *
 * - RCPT TO: each recipient is checked at once (inbound.ts `checkRecipient`): an unknown one
 *   is refused 550 (450 while its app is paused), so no message for it is ever taken; at most
 *   `maxRecipients` per message (452 past it).
 * - Size: MAIL FROM with a SIZE over the limit is refused 552 before any data; during DATA,
 *   bytes past the limit are not kept, and the end of DATA is answered 552.
 * - The message is committed to PostgreSQL before the 250 reply (a failure to store it is
 *   451, so the sender keeps it and tries again).
 */
import type { AddressInfo } from 'node:net'
import { SMTPServer, type SMTPServerSession } from 'smtp-server'
import { coerceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import type { AcceptedRecipient, RecipientVerdict } from './inbound.ts'

export interface InboundServerDeps {
  readonly logger: Logger
  /** INBOUND_EMAIL_MAX_KB in bytes. */
  readonly maxBytes: number
  /** Recipients per message (452 past it). Default 100. */
  readonly maxRecipients?: number
  /** The name in the greeting and EHLO reply (EMAIL_DOMAIN). */
  readonly name: string
  checkRecipient(address: string): Promise<RecipientVerdict>
  /** Commits the message; throws when it cannot. */
  store(input: { mailFrom: string; recipients: readonly AcceptedRecipient[]; raw: Uint8Array }): Promise<string[]>
}

export interface InboundServer {
  /** Listens; resolves to the bound port (`port` 0 picks one). */
  listen(options: { port: number; host: string }): Promise<number>
  close(): Promise<void>
}

function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code })
}

/**
 * @example
 * const server = createInboundServer({ logger, maxBytes, name: 'example.com', checkRecipient, store })
 * const port = await server.listen({ port: 2525, host: '0.0.0.0' })
 */
export function createInboundServer(deps: InboundServerDeps): InboundServer {
  const maxRecipients = deps.maxRecipients ?? 100
  /** The accepted recipients of each session's current transaction. */
  const accepted = new Map<string, AcceptedRecipient[]>()

  function recipientsOf(session: SMTPServerSession): AcceptedRecipient[] {
    let list = accepted.get(session.id)
    if (list === undefined) accepted.set(session.id, (list = []))
    return list
  }

  const server = new SMTPServer({
    name: deps.name,
    banner: 'mail for apps',
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    size: deps.maxBytes,
    rejectOversized: true,
    logger: false,
    closeTimeout: 5_000,
    // Each RCPT TO reads the database: bound the connections one process serves at once.
    maxClients: 200,
    onMailFrom(_address, session, callback) {
      // A new transaction on the same connection starts with no recipients.
      accepted.set(session.id, [])
      callback()
    },
    onRcptTo(address, session, callback) {
      const list = recipientsOf(session)
      if (list.length >= maxRecipients) return callback(smtpError(452, `4.5.3 Too many recipients (at most ${maxRecipients} per message)`))
      deps.checkRecipient(address.address).then((verdict) => {
        if (!verdict.accepted) return callback(smtpError(verdict.code, verdict.message))
        list.push(verdict)
        callback()
      }, (error: unknown) => {
        deps.logger.error('inbound email: checking a recipient failed', { error: coerceError(error).message })
        callback(smtpError(451, '4.3.0 Temporary failure; try again later'))
      })
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      let kept = 0
      stream.on('data', (chunk: Buffer) => {
        // Past the limit nothing more is kept; smtp-server answers 552 at the end of DATA.
        if (kept + chunk.length > deps.maxBytes) {
          kept = deps.maxBytes + 1
          chunks.length = 0
          return
        }
        kept += chunk.length
        chunks.push(chunk)
      })
      stream.on('end', () => {
        const recipients = recipientsOf(session)
        accepted.delete(session.id)
        if (stream.sizeExceeded || kept > deps.maxBytes) {
          return callback(smtpError(552, `5.3.4 Message too big (at most ${deps.maxBytes} bytes)`))
        }
        const raw = new Uint8Array(Buffer.concat(chunks))
        const mailFrom = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address
        deps.store({ mailFrom, recipients, raw }).then((ids) => {
          deps.logger.info('inbound email stored', { ids, bytes: raw.byteLength, recipients: recipients.length })
          callback(null, `2.0.0 OK: queued as ${ids.join(' ')}`)
        }, (error: unknown) => {
          deps.logger.error('inbound email: storing a message failed', { error: coerceError(error).message })
          callback(smtpError(451, '4.3.0 Temporary failure storing the message; try again later'))
        })
      })
    },
    onClose(session) {
      accepted.delete(session.id)
    },
  })
  server.on('error', (error: Error) => deps.logger.warn('inbound email: SMTP listener error', { error: error.message }))

  return {
    async listen(options) {
      await new Promise<void>((resolve, reject) => {
        const onError = (error: Error) => reject(error)
        server.server.once('error', onError)
        server.listen(options.port, options.host, () => {
          server.server.off('error', onError)
          resolve()
        })
      })
      return (server.server.address() as AddressInfo).port
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
