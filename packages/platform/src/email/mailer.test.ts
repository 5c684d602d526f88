import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import { after, before, beforeEach, describe, test } from 'node:test'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { ManualClock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { ServiceError } from '../lib/errors.ts'
import { createMailer } from './mailer.ts'

const SECRET_LINK = 'http://localhost:8787/sign-in?token=svc_secret_0123456789abcdef'

function capturingLogger(): Logger & { lines: string[] } {
  const lines: string[] = []
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    lines.push(JSON.stringify({ level, message, ...fields }))
  }
  return { lines, debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') }
}

/** A real SMTP server on 127.0.0.1 that parses every message it accepts. */
async function startSmtpServer(): Promise<{ url: string; received: ParsedMail[]; close(): Promise<void> }> {
  const received: ParsedMail[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (parsed) => {
          received.push(parsed)
          callback()
        },
        (error: Error) => callback(error),
      )
    },
  })
  server.listen(0, '127.0.0.1')
  await once(server.server, 'listening')
  const { port } = server.server.address() as AddressInfo
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** A port on 127.0.0.1 nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const probe = createServer()
  probe.listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

async function devMailCount(t: TestDb): Promise<number> {
  const rows = await t.db.query<{ n: number }>('select count(*)::int as n from platform.dev_mail')
  return rows[0]?.n ?? -1
}

describe(`mailer (${backend})`, () => {
  let t: TestDb
  const clock = new ManualClock('2026-11-21T12:00:00Z')
  before(async () => {
    t = await createTestDb()
  })
  beforeEach(() => t.db.query('delete from platform.dev_mail'))
  after(() => t.cleanup())

  test('without an SMTP URL the mailer stores the message and logs recipient and subject but not the body', async () => {
    const logger = capturingLogger()
    const mailer = createMailer({ db: t.db, clock, logger, smtpUrl: null, from: 'no-reply@service.test' })
    await mailer.send({ to: 'ana@acme.test', subject: 'Sign in', text: `Open ${SECRET_LINK}`, html: `<a href="${SECRET_LINK}">Sign in</a>` })
    assert.equal(await devMailCount(t), 1)
    assert.equal(logger.lines.length, 1)
    const line = logger.lines[0] ?? ''
    assert.match(line, /ana@acme\.test/)
    assert.match(line, /Sign in/)
    assert.ok(!line.includes('svc_secret_'), 'the log line must not carry the body')
  })

  test('with an SMTP URL nodemailer delivers to, from, subject, text and html to a real SMTP server', async () => {
    const smtp = await startSmtpServer()
    try {
      const logger = capturingLogger()
      const mailer = createMailer({ db: t.db, clock, logger, smtpUrl: smtp.url, from: 'Service <no-reply@service.test>' })
      await mailer.send({ to: 'ana@acme.test', subject: 'Your sign-in link', text: `Open ${SECRET_LINK}`, html: '<p>Open</p>' })
      assert.equal(smtp.received.length, 1)
      const mail = smtp.received[0]
      assert.ok(mail)
      const to = Array.isArray(mail.to) ? mail.to[0] : mail.to
      assert.equal(to?.value[0]?.address, 'ana@acme.test')
      assert.equal(mail.from?.value[0]?.address, 'no-reply@service.test')
      assert.equal(mail.subject, 'Your sign-in link')
      assert.equal(mail.text?.trim(), `Open ${SECRET_LINK}`)
      assert.equal(typeof mail.html === 'string' ? mail.html.trim() : mail.html, '<p>Open</p>')
      assert.equal(await devMailCount(t), 0, 'SMTP mail is not also kept in the development mailbox')
      assert.ok(logger.lines.some((l) => l.includes('email sent') && l.includes('ana@acme.test')))
      assert.ok(logger.lines.every((l) => !l.includes('svc_secret_')), 'no log line carries the body')
    } finally {
      await smtp.close()
    }
  })

  test('an unreachable SMTP server fails with EMAIL_DELIVERY_FAILED and stores nothing', async () => {
    const port = await closedPort()
    const logger = capturingLogger()
    const mailer = createMailer({ db: t.db, clock, logger, smtpUrl: `smtp://user:hunter22@127.0.0.1:${port}`, from: 'no-reply@service.test' })
    await assert.rejects(mailer.send({ to: 'ana@acme.test', subject: 'Sign in', text: `Open ${SECRET_LINK}` }), (error: unknown) => {
      assert.ok(error instanceof ServiceError)
      assert.equal(error.code, 'EMAIL_DELIVERY_FAILED')
      assert.equal(error.status, 502)
      assert.match(error.message, /ana@acme\.test/)
      assert.ok(error.cause instanceof Error)
      return true
    })
    assert.equal(await devMailCount(t), 0)
    assert.ok(logger.lines.some((l) => l.includes('email delivery failed')))
    for (const line of logger.lines) {
      assert.ok(!line.includes('svc_secret_'), 'no log line carries the body')
      assert.ok(!line.includes('hunter22'), 'no log line carries the SMTP password')
    }
  })

  test('an SMTP URL that is not smtp:// or smtps:// is refused without echoing it', () => {
    assert.throws(
      () => createMailer({ db: t.db, clock, logger: capturingLogger(), smtpUrl: 'http://user:hunter22@mail.test', from: 'x@y.test' }),
      (error: unknown) => error instanceof TypeError && /smtp:\/\//.test(error.message) && !error.message.includes('hunter22'),
    )
    assert.throws(() => createMailer({ db: t.db, clock, logger: capturingLogger(), smtpUrl: 'not a url', from: 'x@y.test' }), TypeError)
  })
})
