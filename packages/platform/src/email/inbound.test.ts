/**
 * Inbound app email end to end (spec 6.4): a real SMTP dialogue with the platform's listener
 * on loopback (unknown recipients refused at RCPT TO, sizes refused before and at the end of
 * DATA, the message committed before the 250), then the inbound worker invoking the app's
 * system receiver with the documented event (attachments as the app's managed files, read
 * back by the receiver through ctx.files), retried like a queue job; and the owner API's
 * synthetic injection into a development namespace. PGlite and PostgreSQL.
 */
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, before, beforeEach, describe, test } from 'node:test'
import MailComposer from 'nodemailer/lib/mail-composer'
import { backend } from '../../test/test-db.ts'
import { ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { emailBundle } from './test-app.ts'

const SLUG = 'inbox'
const RETRIES = [5, 10]
const MAX_BYTES = 64 * 1024

/** One SMTP client session: each call sends a line (or nothing, for the greeting) and returns the reply. */
interface Dialogue {
  reply(line?: string): Promise<{ code: number; text: string }>
  /** Sends the message text after DATA's 354, dot-stuffed, and returns the final reply. */
  data(message: string): Promise<{ code: number; text: string }>
  close(): void
}

async function dialogue(port: number): Promise<Dialogue> {
  const socket: Socket = connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => socket.once('connect', () => resolve()).once('error', reject))
  let buffer = ''
  let waiting: (() => void) | null = null
  socket.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('latin1')
    waiting?.()
  })
  async function nextReply(): Promise<{ code: number; text: string }> {
    for (;;) {
      // A reply ends with a line "NNN text" (no dash after the code).
      const match = buffer.match(/^((?:\d{3}-[^\r\n]*\r\n)*)(\d{3}) ([^\r\n]*)\r\n/)
      if (match) {
        buffer = buffer.slice(match[0].length)
        return { code: Number(match[2]), text: match[3]! }
      }
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no SMTP reply; have ${JSON.stringify(buffer)}`)), 15_000)
        waiting = () => {
          clearTimeout(timer)
          waiting = null
          resolve()
        }
      })
    }
  }
  return {
    async reply(line) {
      if (line !== undefined) socket.write(`${line}\r\n`)
      return await nextReply()
    },
    async data(message) {
      const stuffed = message.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..')
      socket.write(`${stuffed}${stuffed.endsWith('\r\n') ? '' : '\r\n'}.\r\n`)
      return await nextReply()
    },
    close() {
      socket.destroy()
    },
  }
}

async function open(port: number): Promise<Dialogue> {
  const session = await dialogue(port)
  assert.equal((await session.reply()).code, 220)
  assert.equal((await session.reply('EHLO sender.example.com')).code, 250)
  return session
}

async function compose(options: Record<string, unknown>): Promise<string> {
  return (await new MailComposer({ date: new Date('2026-11-21T12:00:00Z'), ...options }).compile().build()).toString('latin1')
}

interface InboxRecord {
  id: string
  state: string
  attempts: number
  recipients: string[]
  mail_from: string
  raw: Uint8Array | null
  event: Record<string, unknown> | null
  last_error: { code: string; message: string } | null
  run_at: Date
}

describe(`inbound email (${backend})`, () => {
  let h: Harness
  let token: string
  let port: number
  let app: App

  before(async () => {
    h = await startHarness(undefined, {
      email: { settings: { inboundPort: 0, inboundHost: '127.0.0.1', inboundMaxBytes: MAX_BYTES }, inbound: { retryDelaysSeconds: RETRIES } },
    })
    token = (await h.createOwner('owner@acme.test')).token
    for (const [slug, options] of [[SLUG, { aliases: ['support', 'help'] }], ['quiet', { aliases: ['support'], inbound: false }], ['sleepy', {}]] as const) {
      assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
      const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: emailBundle(slug, options) })
      assert.equal(res.status, 201, await res.text())
    }
    await h.t.db.query(`update platform.apps set status = 'paused' where slug = 'sleepy'`)
    app = (await findAppBySlug(h.t.db, SLUG))!
    port = await h.platform.email.listen()
  })
  after(() => h?.close())
  beforeEach(async () => {
    await h.t.db.query(`delete from platform.email_inbox`)
    await h.t.db.query(`delete from app_inbox.received`)
  })

  async function inbox(): Promise<InboxRecord[]> {
    return [...await h.t.db.query<InboxRecord & Record<string, unknown>>(
      `select id, state, attempts, recipients, mail_from, raw, event, last_error, run_at from platform.email_inbox order by received_at, id`)]
  }

  async function received(): Promise<{ inbound_id: string; event: any; contents: string[]; environment: string; has_job: boolean }[]> {
    return [...await h.t.db.query<{ inbound_id: string; event: any; contents: string[]; environment: string; has_job: boolean }>(
      `select inbound_id, event, contents, environment, has_job from app_inbox.received order by created_at`)]
  }

  /** Sends one message to `to` through a full SMTP dialogue; returns the final reply. */
  async function deliver(to: string[], message: string, from = 'ada@example.com'): Promise<{ code: number; text: string }> {
    const session = await open(port)
    try {
      assert.equal((await session.reply(`MAIL FROM:<${from}>`)).code, 250)
      for (const rcpt of to) assert.equal((await session.reply(`RCPT TO:<${rcpt}>`)).code, 250, rcpt)
      assert.equal((await session.reply('DATA')).code, 354)
      return await session.data(message)
    } finally {
      session.close()
    }
  }

  test('mail to a declared alias (any case, with a +tag) is committed before the 250 reply; the receiver has not run yet', async () => {
    const message = await compose({ from: 'Ada <ada@example.com>', to: 'support@inbox.localhost', subject: 'Hello', text: 'Hi' })
    const reply = await deliver(['Support+T-42@Inbox.localhost', 'help@inbox.localhost'], message)
    assert.equal(reply.code, 250)
    const rows = await inbox()
    assert.equal(rows.length, 1, 'one row for the app, however many of its addresses')
    assert.match(reply.text, new RegExp(`queued as ${rows[0]!.id}`))
    assert.equal(rows[0]!.state, 'waiting')
    assert.deepEqual(rows[0]!.recipients, ['Support+T-42@inbox.localhost', 'help@inbox.localhost'])
    assert.equal(rows[0]!.mail_from, 'ada@example.com')
    assert.equal(Buffer.from(rows[0]!.raw!).toString('latin1'), message.replace(/\r?\n/g, '\r\n').replace(/\r\n$/, '') + '\r\n')
    assert.deepEqual(await received(), [])
  })

  test('a message that cannot be stored is answered 451 (the sender keeps it and tries again), never 250', async () => {
    await h.t.db.query('alter table platform.email_inbox rename to email_inbox_away')
    let reply: { code: number; text: string }
    try {
      reply = await deliver(['support@inbox.localhost'], await compose({ from: 'ada@example.com', to: 'support@inbox.localhost', subject: 'x', text: 'y' }))
    } finally {
      await h.t.db.query('alter table platform.email_inbox_away rename to email_inbox')
    }
    assert.equal(reply.code, 451)
    assert.deepEqual(await inbox(), [])
  })

  test('unknown recipients are refused at RCPT TO (550), a paused app\'s 450; with none accepted DATA is refused and nothing is stored', async () => {
    const session = await open(port)
    try {
      assert.equal((await session.reply('MAIL FROM:<ada@example.com>')).code, 250)
      for (const rcpt of ['billing@inbox.localhost', 'support@quiet.localhost', 'support@nobody.localhost', 'support@localhost',
        'support@inbox.example.com', 'support@a.inbox.localhost', '"support"@inbox.localhost']) {
        const reply = await session.reply(`RCPT TO:<${rcpt}>`)
        assert.equal(reply.code, 550, `${rcpt}: ${reply.text}`)
      }
      assert.equal((await session.reply('RCPT TO:<support@sleepy.localhost>')).code, 450)
      assert.equal((await session.reply('DATA')).code, 503)
    } finally {
      session.close()
    }
    assert.deepEqual(await inbox(), [])
  })

  test('a message for a good and a bad recipient is stored for the good one only', async () => {
    const session = await open(port)
    try {
      await session.reply('MAIL FROM:<ada@example.com>')
      assert.equal((await session.reply('RCPT TO:<nobody@inbox.localhost>')).code, 550)
      assert.equal((await session.reply('RCPT TO:<help@inbox.localhost>')).code, 250)
      assert.equal((await session.reply('DATA')).code, 354)
      assert.equal((await session.data(await compose({ from: 'ada@example.com', to: 'help@inbox.localhost', subject: 'x', text: 'y' }))).code, 250)
    } finally {
      session.close()
    }
    assert.deepEqual((await inbox()).map((row) => row.recipients), [['help@inbox.localhost']])
  })

  test('a declared SIZE over INBOUND_EMAIL_MAX_KB is refused 552 at MAIL FROM, before any data', async () => {
    const session = await open(port)
    try {
      const reply = await session.reply(`MAIL FROM:<ada@example.com> SIZE=${MAX_BYTES + 1}`)
      assert.equal(reply.code, 552)
    } finally {
      session.close()
    }
  })

  test('a message over the limit is answered 552 at the end of DATA, nothing is stored, and the session goes on', async () => {
    const session = await open(port)
    try {
      await session.reply('MAIL FROM:<ada@example.com>')
      await session.reply('RCPT TO:<support@inbox.localhost>')
      assert.equal((await session.reply('DATA')).code, 354)
      const big = await compose({ from: 'ada@example.com', to: 'support@inbox.localhost', subject: 'big', text: 'x'.repeat(MAX_BYTES) })
      assert.equal((await session.data(big)).code, 552)
      assert.deepEqual(await inbox(), [])
      // The same connection sends a small one next.
      assert.equal((await session.reply('MAIL FROM:<ada@example.com>')).code, 250)
      assert.equal((await session.reply('RCPT TO:<support@inbox.localhost>')).code, 250)
      assert.equal((await session.reply('DATA')).code, 354)
      assert.equal((await session.data(await compose({ from: 'ada@example.com', to: 'support@inbox.localhost', subject: 's', text: 't' }))).code, 250)
    } finally {
      session.close()
    }
    assert.equal((await inbox()).length, 1)
  })

  test('more than 100 recipients in one message: 452 past the hundredth', async () => {
    const session = await open(port)
    try {
      await session.reply('MAIL FROM:<ada@example.com>')
      for (let i = 0; i < 100; i++) assert.equal((await session.reply(`RCPT TO:<support+${i}@inbox.localhost>`)).code, 250)
      assert.equal((await session.reply('RCPT TO:<support+100@inbox.localhost>')).code, 452)
    } finally {
      session.close()
    }
  })

  test('the worker invokes the receiver with the documented event: decoded headers, both bodies, every header line, attachments as the app\'s files', async () => {
    const pdf = Buffer.from('%PDF-1.4 fake pdf bytes \u0000\u0001\u00ff', 'latin1')
    const message = await compose({
      from: 'Zoë Ada <ada@example.com>', to: ['support@inbox.localhost', 'Bob <bob@example.org>'], cc: 'cy@example.org',
      subject: 'Grüße ✓ 你好', text: 'Hallo ✓\nzweite Zeile', html: '<p>Hallo <b>✓</b></p>',
      headers: { 'X-Ticket': 'T-42' }, messageId: '<m1@example.com>',
      attachments: [
        { filename: 'report.pdf', contentType: 'application/pdf', content: pdf },
        { filename: 'notes/../a.txt', contentType: 'text/plain', content: 'plain ✓' },
      ],
    })
    assert.equal((await deliver(['support+T-42@inbox.localhost'], message)).code, 250)
    const [row] = await inbox()
    assert.equal(await h.platform.email.receiveDue(), 1)
    const [run] = await received()
    assert.ok(run, 'the receiver ran')
    assert.equal(run.environment, 'production')
    assert.equal(run.has_job, false)
    const event = run.event
    assert.deepEqual(Object.keys(event).sort(), ['attachments', 'from', 'headers', 'html', 'id', 'receivedAt', 'recipients', 'subject', 'text', 'to'])
    assert.equal(event.id, row!.id)
    assert.equal(event.receivedAt, h.clock.now().toISOString())
    assert.equal(event.from, 'ada@example.com')
    assert.deepEqual(event.to, ['support@inbox.localhost', 'bob@example.org'])
    assert.deepEqual(event.recipients, ['support+T-42@inbox.localhost'])
    assert.equal(event.subject, 'Grüße ✓ 你好')
    assert.equal(event.text, 'Hallo ✓\nzweite Zeile')
    assert.equal(event.html, '<p>Hallo <b>✓</b></p>')
    const header = (name: string) => event.headers.find((line: { name: string }) => line.name.toLowerCase() === name)?.value
    assert.equal(header('x-ticket'), 'T-42')
    assert.equal(header('message-id'), '<m1@example.com>')
    assert.equal(header('cc'), 'cy@example.org')
    assert.match(header('subject'), /^=\?UTF-8\?/, 'header values are as sent (encoded words kept)')
    assert.deepEqual(event.attachments.map((a: any) => ({ name: a.name, contentType: a.contentType, size: a.size })), [
      { name: 'report.pdf', contentType: 'application/pdf', size: pdf.length },
      { name: 'notes_.._a.txt', contentType: 'text/plain', size: Buffer.byteLength('plain ✓') },
    ])
    for (const attachment of event.attachments) assert.match(attachment.file, /^file_[A-Za-z0-9_-]{43}$/)
    assert.deepEqual(run.contents, [pdf.toString('hex'), Buffer.from('plain ✓').toString('hex')], 'the receiver read the bytes back with ctx.files')
    const files = await h.t.db.query<{ owner_user_id: string | null }>(`select owner_user_id from platform.files where app_id = $1`, [app.id])
    assert.ok(files.length >= 2 && files.every((file) => file.owner_user_id === null), 'the app owns the files')
    const [done] = await inbox()
    assert.equal(done!.state, 'done')
    assert.equal(done!.raw, null, 'the raw message is discarded')
    assert.equal(done!.event, null)
  })

  test('errors.unavailable is retried after the schedule with the same event and files, then failed past it', async () => {
    assert.equal((await deliver(['support@inbox.localhost'], await compose({
      from: 'ada@example.com', to: 'support@inbox.localhost', subject: 'unavailable', text: 'x',
      attachments: [{ filename: 'a.txt', content: 'a' }],
    }))).code, 250)
    await h.platform.email.receiveDue()
    let [row] = await inbox()
    assert.equal(row!.state, 'waiting')
    assert.equal(row!.attempts, 1)
    assert.equal(row!.last_error?.code, 'MAILBOX_BUSY')
    assert.equal(row!.run_at.getTime(), h.clock.now().getTime() + RETRIES[0]! * 1000)
    assert.equal(await h.platform.email.receiveDue(), 0, 'not before the delay')
    h.clock.advance(RETRIES[0]! * 1000)
    assert.equal(await h.platform.email.receiveDue(), 1)
    h.clock.advance(RETRIES[1]! * 1000)
    assert.equal(await h.platform.email.receiveDue(), 1)
    ;[row] = await inbox()
    assert.equal(row!.state, 'failed')
    assert.equal(row!.attempts, 3)
    assert.equal(row!.raw, null)
    const runs = await received()
    assert.equal(runs.length, 3)
    assert.equal(new Set(runs.map((run) => JSON.stringify(run.event))).size, 1, 'every attempt got the same event, the same files')
  })

  test('a typed error other than unavailable dead-letters the message at once', async () => {
    await deliver(['support@inbox.localhost'], await compose({ from: 'ada@example.com', to: 'support@inbox.localhost', subject: 'bad', text: 'x' }))
    await h.platform.email.receiveDue()
    const [row] = await inbox()
    assert.equal(row!.state, 'failed')
    assert.equal(row!.attempts, 1)
    assert.equal(row!.last_error?.code, 'BAD_MAIL')
  })

  test('an attempt whose process died is counted once and retried after its lease expires', async () => {
    await deliver(['support@inbox.localhost'], await compose({ from: 'ada@example.com', to: 'support@inbox.localhost', subject: 'ok', text: 'x' }))
    const past = new Date(h.clock.now().getTime() - 1000)
    await h.t.db.query(`update platform.email_inbox set state = 'running', attempts = 1, lease_owner = 'dead:1', lease_expires_at = $1`, [past])
    assert.equal(await h.platform.email.receiveDue(), 0)
    let [row] = await inbox()
    assert.equal(row!.state, 'waiting')
    assert.equal(row!.last_error?.code, 'EMAIL_LEASE_EXPIRED')
    h.clock.advance(RETRIES[0]! * 1000)
    assert.equal(await h.platform.email.receiveDue(), 1)
    ;[row] = await inbox()
    assert.equal(row!.state, 'done')
    assert.equal(row!.attempts, 2)
    assert.equal((await received()).length, 1)
  })

  test('a message whose app no longer declares email.inbound fails EMAIL_INBOUND_NOT_DECLARED; new mail to it is refused at RCPT', async () => {
    await deliver(['support@inbox.localhost'], await compose({ from: 'ada@example.com', to: 'support@inbox.localhost', subject: 'ok', text: 'x' }))
    const res = await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: emailBundle(SLUG, { aliases: ['support', 'help'], inbound: false }) })
    assert.equal(res.status, 201)
    try {
      await h.platform.email.receiveDue()
      const [row] = await inbox()
      assert.equal(row!.state, 'failed')
      assert.equal(row!.last_error?.code, 'EMAIL_INBOUND_NOT_DECLARED')
      const session = await open(port)
      await session.reply('MAIL FROM:<ada@example.com>')
      assert.equal((await session.reply('RCPT TO:<support@inbox.localhost>')).code, 550)
      session.close()
    } finally {
      const back = await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: emailBundle(SLUG, { aliases: ['support', 'help'] }) })
      assert.equal(back.status, 201)
    }
  })

  test('messages that ended are purged 14 days later', async () => {
    await deliver(['support@inbox.localhost'], await compose({ from: 'ada@example.com', to: 'support@inbox.localhost', subject: 'ok', text: 'x' }))
    await h.platform.email.receiveDue()
    h.clock.advance(15 * 24 * 3600 * 1000)
    assert.equal(await h.platform.email.purge(), 1)
    assert.deepEqual(await inbox(), [])
  })
})

describe(`inbound email per app and hour (${backend})`, () => {
  let h: Harness
  let port: number

  before(async () => {
    h = await startHarness(undefined, { email: { settings: { inboundPort: 0, inboundHost: '127.0.0.1', inboundMaxBytes: MAX_BYTES, inboundPerHour: 2 } } })
    const token = (await h.createOwner('owner@acme.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    assert.equal((await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: emailBundle(SLUG, { aliases: ['support'] }) })).status, 201)
    port = await h.platform.email.listen()
  })
  after(() => h?.close())

  test('past INBOUND_EMAIL_PER_HOUR an app\'s recipients are answered 452 (the sender tries later) until the next hour', async () => {
    const rcpt = async () => {
      const session = await open(port)
      try {
        assert.equal((await session.reply('MAIL FROM:<ada@example.com>')).code, 250)
        return (await session.reply(`RCPT TO:<support@${SLUG}.localhost>`)).code
      } finally {
        session.close()
      }
    }
    assert.deepEqual([await rcpt(), await rcpt(), await rcpt()], [250, 250, 452])
    h.clock.advance(3600_000)
    assert.equal(await rcpt(), 250, 'a new hour')
  })
})

describe(`synthetic inbound email in a development namespace (${backend})`, () => {
  let h: Harness
  let token: string

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@acme.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    for (const [path, options] of [[`/v1/apps/${SLUG}/deployments`, { aliases: ['support'] }], [`/v1/apps/${SLUG}/dev/ada/deployments`, { aliases: ['support', 'help'] }],
      [`/v1/apps/${SLUG}/dev/quiet/deployments`, { inbound: false }]] as const) {
      const res = await h.request(path, { token, json: emailBundle(SLUG, options) })
      assert.equal(res.status, 201, await res.text())
    }
  })
  after(() => h?.close())

  test('the owner injects a message: the development receiver runs at once with the event, attachments stored in the namespace, logs answered', async () => {
    const res = await ownerApi(h, token, 'POST', `/v1/apps/${SLUG}/dev/ada/email/inbound`, {
      from: 'bob@example.com', to: 'help+x@inbox.localhost', subject: 'Dev ✓', text: 'Hello', html: '<p>Hello</p>',
      headers: [{ name: 'X-Test', value: 'yes' }],
      attachments: [{ name: 'a.txt', contentType: 'text/plain', content: Buffer.from('abc').toString('base64') }],
    })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.ok, true)
    assert.equal(res.body.value.stored, res.body.event.id)
    assert.match(res.body.requestId, /^[0-9a-f-]{36}$/)
    assert.ok(Array.isArray(res.body.logs))
    const event = res.body.event
    assert.equal(event.from, 'bob@example.com')
    assert.deepEqual(event.to, ['help+x@inbox.localhost'])
    assert.deepEqual(event.recipients, ['help+x@inbox.localhost'])
    assert.equal(event.subject, 'Dev ✓')
    assert.equal(event.text, 'Hello')
    assert.equal(event.html, '<p>Hello</p>')
    assert.equal(event.headers.find((line: { name: string }) => line.name === 'X-Test')?.value, 'yes')
    assert.deepEqual(event.attachments.map((a: any) => [a.name, a.contentType, a.size]), [['a.txt', 'text/plain', 3]])
    const [schema] = await h.t.db.query<{ schema_name: string }>(`select schema_name from platform.namespaces where dev_name = 'ada'`)
    const rows = await h.t.db.query<{ environment: string; contents: string[] }>(`select environment, contents from ${schema!.schema_name}.received`)
    assert.deepEqual(rows.map((row) => ({ ...row })), [{ environment: 'development', contents: [Buffer.from('abc').toString('hex')] }])
    assert.equal((await h.t.db.query('select 1 from platform.email_inbox')).length, 0, 'nothing is queued')
  })

  test('a raw RFC 5322 message is taken as it is, to the first alias by default', async () => {
    const raw = 'From: Cy <cy@example.com>\r\nTo: support@inbox.localhost\r\nSubject: Raw\r\n\r\nBody\r\n'
    const res = await ownerApi(h, token, 'POST', `/v1/apps/${SLUG}/dev/ada/email/inbound`, { raw })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.event.subject, 'Raw')
    assert.equal(res.body.event.from, 'cy@example.com')
    assert.deepEqual(res.body.event.recipients, ['support@inbox.localhost'])
  })

  test('a failing receiver is answered with its error, without retry', async () => {
    const res = await ownerApi(h, token, 'POST', `/v1/apps/${SLUG}/dev/ada/email/inbound`, { subject: 'bad', text: 'x' })
    assert.equal(res.status, 200)
    assert.equal(res.body.ok, false)
    assert.equal(res.body.status, 400)
    assert.equal(res.body.error.code, 'BAD_MAIL')
  })

  test('refusals: no inbound receiver, an address the app does not receive at, an unknown field, no release', async () => {
    const quiet = await ownerApi(h, token, 'POST', `/v1/apps/${SLUG}/dev/quiet/email/inbound`, { text: 'x' })
    assert.equal(quiet.status, 409)
    assert.equal(quiet.body.error.code, 'EMAIL_INBOUND_NOT_DECLARED')
    for (const to of ['billing@inbox.localhost', 'support@other.localhost', 'Support <support@inbox.localhost>']) {
      const bad = await ownerApi(h, token, 'POST', `/v1/apps/${SLUG}/dev/ada/email/inbound`, { to, text: 'x' })
      assert.equal(bad.status, 400, to)
      assert.equal(bad.body.error.code, 'EMAIL_INVALID')
    }
    const injected = await ownerApi(h, token, 'POST', `/v1/apps/${SLUG}/dev/ada/email/inbound`, { subject: 'a\r\nBcc: x@example.com', text: 'x' })
    assert.equal(injected.body.error.code, 'EMAIL_INVALID')
    const unknown = await ownerApi(h, token, 'POST', `/v1/apps/${SLUG}/dev/ada/email/inbound`, { cc: 'x@example.com' })
    assert.equal(unknown.body.error.code, 'VALIDATION_FAILED')
    const none = await ownerApi(h, token, 'POST', `/v1/apps/${SLUG}/dev/nobody/email/inbound`, { text: 'x' })
    assert.equal(none.status, 404)
    assert.equal(none.body.error.code, 'DEV_NAMESPACE_NOT_FOUND')
  })

  test('another person without Edit on the app cannot inject', async () => {
    const other = await h.createOwner('eve@other.test', 'Other')
    const res = await ownerApi(h, other.token, 'POST', `/v1/apps/${SLUG}/dev/ada/email/inbound`, { text: 'x' })
    assert.ok(res.status === 404 || res.status === 403, String(res.status))
  })
})
