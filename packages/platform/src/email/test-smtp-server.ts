/**
 * Test support: a real SMTP server (smtp-server) on loopback that keeps every message it
 * accepts, raw and parsed by mailparser, with its envelope; it can answer chosen recipients
 * or the next messages with an error code, or hold a message without answering (a server
 * that hangs), to drive the delivery worker's retry and dead-letter rules.
 */
import type { AddressInfo } from 'node:net'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'

export interface ReceivedMail {
  readonly envelope: { readonly from: string; readonly to: readonly string[] }
  readonly raw: Buffer
  readonly parsed: ParsedMail
}

export interface TestSmtpServer {
  readonly port: number
  /** smtp://127.0.0.1:<port> */
  readonly url: string
  readonly received: ReceivedMail[]
  /** How many transactions reached DATA (accepted or not). */
  readonly dataCommands: () => number
  /** Answers RCPT TO of this address with `code` (5xx permanent, 4xx temporary) until cleared. */
  refuseRecipient(address: string, code: number): void
  /** Answers the next `times` messages' DATA with `code`. */
  failNextData(code: number, times?: number): void
  /** Holds every message at the end of DATA without answering until `release()`. */
  hold(): void
  release(): void
  /** How many messages are held; `dropHeld` forgets them unanswered (their client died: never accepted). */
  heldCount(): number
  dropHeld(): void
  reset(): void
  /** Resolves once `count` messages were received (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code })
}

/**
 * @example
 * const smtp = await startTestSmtpServer()
 * // ... point SMTP_URL at smtp.url, send, then:
 * await smtp.waitFor(1)
 * smtp.received[0]!.parsed.subject
 */
export async function startTestSmtpServer(options: { port?: number } = {}): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = []
  const refused = new Map<string, number>()
  let dataFailures: { code: number; times: number } | null = null
  let holding = false
  let held: (() => void)[] = []
  let dataCommands = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    // Connections a pooled client keeps open would hold close() for 30 s.
    closeTimeout: 100,
    onRcptTo(address, _session, callback) {
      const code = refused.get(address.address.toLowerCase())
      if (code !== undefined) return callback(smtpError(code, code >= 500 ? 'No such user here' : 'Try again later'))
      callback()
    },
    onData(stream, session, callback) {
      dataCommands += 1
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        const finish = () => {
          if (dataFailures !== null && dataFailures.times > 0) {
            dataFailures.times -= 1
            const { code } = dataFailures
            if (dataFailures.times === 0) dataFailures = null
            return callback(smtpError(code, code >= 500 ? 'Message refused' : 'Mailbox busy, try again later'))
          }
          const raw = Buffer.concat(chunks)
          simpleParser(raw).then((parsed) => {
            received.push({
              envelope: {
                from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
                to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
              },
              raw,
              parsed,
            })
            callback()
          }, (error: unknown) => callback(error as Error))
        }
        if (holding) held.push(finish)
        else finish()
      })
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
  })
  const port = (server.server.address() as AddressInfo).port
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    received,
    dataCommands: () => dataCommands,
    refuseRecipient(address, code) {
      refused.set(address.toLowerCase(), code)
    },
    failNextData(code, times = 1) {
      dataFailures = { code, times }
    },
    hold() {
      holding = true
    },
    heldCount: () => held.length,
    dropHeld() {
      held = []
    },
    release() {
      holding = false
      const waiting = held
      held = []
      for (const finish of waiting) finish()
    },
    reset() {
      received.length = 0
      refused.clear()
      dataFailures = null
      dataCommands = 0
    },
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`the test SMTP server received ${received.length} messages, not ${count}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
