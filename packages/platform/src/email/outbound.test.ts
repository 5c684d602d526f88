/**
 * Outbound app email end to end: a Function calls ctx.email.send, the message is committed
 * before the call returns, and the delivery worker hands it to a real SMTP server on
 * loopback (smtp-server), whose received bytes mailparser reads back: headers, UTF-8
 * subject and bodies, the alias's address, no header a caller could inject. Retries,
 * dead-letters, partial refusals, lease expiry, a platform restart while the SMTP server is
 * down, the hourly budget, and the development mailbox without SMTP. PGlite and PostgreSQL.
 */
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { emailBundle } from './test-app.ts'
import { startTestSmtpServer, type TestSmtpServer } from './test-smtp-server.ts'

const SLUG = 'mailer'
const DOMAIN = 'mailer.localhost'
const RETRIES = [10, 20, 30]

interface OutboxRecord {
  id: string
  state: string
  attempts: number
  recipients: string[]
  from_address: string
  message_id: string
  last_error: { code: string; message: string; smtpCode?: number } | null
  rejected: string[] | null
  text_body: string | null
  html_body: string | null
  run_at: Date
}

async function deployEmailApp(h: Harness, token: string, slug: string, options: { aliases?: readonly string[] } = {}): Promise<App> {
  assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
  const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: emailBundle(slug, { ...options, inbound: false }) })
  assert.equal(res.status, 201, await res.text())
  return (await findAppBySlug(h.t.db, slug))!
}

async function send(h: Harness, message: unknown, slug = SLUG): Promise<{ status: number; body: any }> {
  const res = await h.request('/_service/functions/send', { host: slug, headers: { 'x-service-sdk': '1' }, json: { message: JSON.stringify(message) } })
  return { status: res.status, body: await res.json() }
}

async function sent(h: Harness, message: unknown): Promise<string> {
  const { status, body } = await send(h, message)
  assert.equal(status, 200, JSON.stringify(body))
  assert.match(body.id, /^[0-9a-f-]{36}$/)
  return body.id as string
}

async function outbox(h: Harness, id: string): Promise<OutboxRecord> {
  const [row] = await h.t.db.query<OutboxRecord & Record<string, unknown>>(
    `select id, state, attempts, recipients, from_address, message_id, last_error, rejected, text_body, html_body, run_at from platform.email_outbox where id = $1`, [id])
  assert.ok(row, `message ${id} exists`)
  return row
}

async function count(h: Harness): Promise<number> {
  const [row] = await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.email_outbox')
  return row!.n
}

const HELLO = { from: 'support', to: 'ada@example.com', subject: 'Hello', text: 'Hi Ada' }

describe(`outbound email over SMTP (${backend})`, () => {
  let h: Harness
  let smtp: TestSmtpServer
  let token: string

  before(async () => {
    smtp = await startTestSmtpServer()
    h = await startHarness(undefined, { email: { smtpUrl: smtp.url, settings: { recipientsPerHour: 60 }, delivery: { retryDelaysSeconds: RETRIES } } })
    token = (await h.createOwner('owner@acme.test')).token
    await deployEmailApp(h, token, SLUG)
  })
  after(async () => {
    await h?.close()
    await smtp?.close()
  })
  beforeEach(async () => {
    smtp.reset()
    // Each test starts with a fresh hourly budget and no queued mail.
    h.clock.advance(60 * 60 * 1000)
    await h.t.db.query(`delete from platform.email_outbox`)
  })

  test('send commits the message and returns its id before anything is delivered', async () => {
    const id = await sent(h, HELLO)
    const row = await outbox(h, id)
    assert.equal(row.state, 'queued')
    assert.equal(row.attempts, 0)
    assert.deepEqual(row.recipients, ['ada@example.com'])
    assert.equal(row.from_address, `support@${DOMAIN}`)
    assert.equal(row.message_id, `<${id}@${DOMAIN}>`)
    assert.equal(smtp.dataCommands(), 0, 'nothing reached the SMTP server yet')
  })

  test('the worker delivers it: the alias address, UTF-8 subject and bodies, reply-to, Message-ID, and no other header', async () => {
    const subject = 'Grüße ✓ 你好 — a long subject line that nodemailer has to fold because it is well over seventy-eight characters'
    const text = 'Hallo Ada,\nüber 100 € — ✓\n\n.\n.leading dot line\r\nend'
    const html = '<p>Hallo <b>Ada</b> — ✓ 你好</p>'
    const id = await sent(h, { from: 'support', to: ['ada@example.com', 'Bob@Example.org'], subject, text, html, replyTo: 'help@example.com' })
    assert.equal(await h.platform.email.deliverDue(), 1)
    await smtp.waitFor(1)
    const [mail] = smtp.received
    assert.deepEqual(mail!.envelope, { from: `support@${DOMAIN}`, to: ['ada@example.com', 'Bob@example.org'] })
    const parsed = mail!.parsed
    assert.deepEqual(parsed.from?.value.map((a) => a.address), [`support@${DOMAIN}`])
    assert.deepEqual((Array.isArray(parsed.to) ? parsed.to : [parsed.to!]).flatMap((to) => to.value.map((a) => a.address)), ['ada@example.com', 'Bob@example.org'])
    assert.deepEqual(parsed.replyTo?.value.map((a) => a.address), ['help@example.com'])
    assert.equal(parsed.subject, subject)
    assert.equal(parsed.text, text.replace(/\r\n/g, '\n'))
    assert.equal(parsed.html, html)
    assert.equal(parsed.messageId, `<${id}@${DOMAIN}>`)
    const raw = mail!.raw.toString('latin1')
    assert.ok(!/[^\x00-\x7f]/.test(raw), 'the message is 7-bit on the wire (encoded words and quoted-printable or base64)')
    const headerNames = parsed.headerLines.map((line) => line.key).sort()
    assert.deepEqual([...new Set(headerNames)], ['content-type', 'date', 'from', 'message-id', 'mime-version', 'reply-to', 'subject', 'to'])
    const row = await outbox(h, id)
    assert.equal(row.state, 'sent')
    assert.equal(row.attempts, 1)
    assert.equal(row.text_body, null, 'the bodies are discarded once sent')
    assert.equal(row.html_body, null)
  })

  test('the alias may be written as its full address', async () => {
    await sent(h, { ...HELLO, from: `no-reply@${DOMAIN}` })
    await h.platform.email.deliverDue()
    await smtp.waitFor(1)
    assert.equal(smtp.received[0]!.envelope.from, `no-reply@${DOMAIN}`)
  })

  for (const [field, value] of [
    ['subject', 'Hello\r\nBcc: eve@example.com'],
    ['subject', 'Hello\nX-Injected: yes'],
    ['to', 'ada@example.com\r\nBcc: eve@example.com'],
    ['to', 'Ada <ada@example.com>, eve@example.com'],
    ['replyTo', 'help@example.com\r\nX-Injected: yes'],
  ] as const) {
    test(`a line break or list in ${field} is refused EMAIL_INVALID (400) and nothing is queued`, async () => {
      const { status, body } = await send(h, { ...HELLO, [field]: value })
      assert.equal(status, 400)
      assert.equal(body.error.code, 'EMAIL_INVALID')
      assert.equal(await count(h), 0)
    })
  }

  test('an alias the release does not declare is EMAIL_ALIAS_NOT_DECLARED naming the declared ones; another app\'s address too', async () => {
    for (const from of ['billing', 'support@other.localhost', 'Support']) {
      const { status, body } = await send(h, { ...HELLO, from })
      assert.equal(status, 400)
      assert.equal(body.error.code, 'EMAIL_ALIAS_NOT_DECLARED')
      assert.deepEqual(body.error.details.aliases, ['support', 'no-reply'])
    }
    assert.equal(await count(h), 0)
  })

  test('more than EMAIL_MAX_RECIPIENTS is EMAIL_TOO_MANY_RECIPIENTS; more than EMAIL_MAX_MESSAGE_KB is EMAIL_TOO_LARGE (413)', async () => {
    const many = Array.from({ length: 51 }, (_, i) => `r${i}@example.com`)
    const tooMany = await send(h, { ...HELLO, to: many })
    assert.equal(tooMany.status, 400)
    assert.equal(tooMany.body.error.code, 'EMAIL_TOO_MANY_RECIPIENTS')
    const large = await send(h, { ...HELLO, text: 'x'.repeat(512 * 1024) })
    assert.equal(large.status, 413)
    assert.equal(large.body.error.code, 'EMAIL_TOO_LARGE')
    assert.equal(await count(h), 0)
  })

  test('the app sends to at most EMAIL_RECIPIENTS_PER_HOUR recipients per clock hour: past it EMAIL_RATE_LIMITED (429) with the wait; the next hour it sends again', async () => {
    await sent(h, { ...HELLO, to: Array.from({ length: 50 }, (_, i) => `r${i}@example.com`) })
    await sent(h, { ...HELLO, to: Array.from({ length: 10 }, (_, i) => `s${i}@example.com`) })
    const { status, body } = await send(h, HELLO)
    assert.equal(status, 429)
    assert.equal(body.error.code, 'EMAIL_RATE_LIMITED')
    assert.equal(body.error.details.limit, 60)
    assert.ok(body.error.details.retryAfterSeconds >= 1 && body.error.details.retryAfterSeconds <= 3600)
    assert.equal(await count(h), 2, 'the refused message was not queued')
    h.clock.advance(body.error.details.retryAfterSeconds * 1000)
    await sent(h, HELLO)
  })

  test('a temporary SMTP failure (451) is retried after the schedule\'s delay and then delivered once', async () => {
    const id = await sent(h, HELLO)
    smtp.failNextData(451)
    await h.platform.email.deliverDue()
    let row = await outbox(h, id)
    assert.equal(row.state, 'queued')
    assert.equal(row.attempts, 1)
    assert.equal(row.last_error?.code, 'EMAIL_DELIVERY_FAILED')
    assert.equal(row.last_error?.smtpCode, 451)
    assert.equal(row.run_at.getTime(), h.clock.now().getTime() + RETRIES[0]! * 1000)
    assert.equal(await h.platform.email.deliverDue(), 0, 'not due before the delay')
    h.clock.advance(RETRIES[0]! * 1000)
    assert.equal(await h.platform.email.deliverDue(), 1)
    await smtp.waitFor(1)
    row = await outbox(h, id)
    assert.equal(row.state, 'sent')
    assert.equal(row.attempts, 2)
    assert.equal(smtp.received.length, 1)
  })

  test('temporary failures past the schedule end the message failed with the last error', async () => {
    const id = await sent(h, HELLO)
    smtp.failNextData(421, RETRIES.length + 1)
    for (let attempt = 0; attempt <= RETRIES.length; attempt++) {
      assert.equal(await h.platform.email.deliverDue(), 1)
      if (attempt < RETRIES.length) h.clock.advance(RETRIES[attempt]! * 1000)
    }
    const row = await outbox(h, id)
    assert.equal(row.state, 'failed')
    assert.equal(row.attempts, RETRIES.length + 1)
    assert.equal(row.last_error?.code, 'EMAIL_DELIVERY_FAILED')
    assert.equal(row.text_body, null)
  })

  test('a permanent refusal (550 for every recipient) dead-letters the message at once: EMAIL_REJECTED, no retry', async () => {
    smtp.refuseRecipient('nobody@example.com', 550)
    const id = await sent(h, { ...HELLO, to: 'nobody@example.com' })
    await h.platform.email.deliverDue()
    const row = await outbox(h, id)
    assert.equal(row.state, 'failed')
    assert.equal(row.attempts, 1)
    assert.equal(row.last_error?.code, 'EMAIL_REJECTED')
    assert.equal(row.last_error?.smtpCode, 550)
    assert.equal(row.text_body, null)
    h.clock.advance(3600 * 1000)
    assert.equal(await h.platform.email.deliverDue(), 0)
    assert.equal(smtp.received.length, 0)
  })

  test('a 554 to the message itself is permanent too', async () => {
    const id = await sent(h, HELLO)
    smtp.failNextData(554)
    await h.platform.email.deliverDue()
    const row = await outbox(h, id)
    assert.equal(row.state, 'failed')
    assert.equal(row.last_error?.smtpCode, 554)
  })

  test('recipients the server refuses while it takes the message for the others are kept; the message is sent once to the rest', async () => {
    smtp.refuseRecipient('gone@example.com', 550)
    const id = await sent(h, { ...HELLO, to: ['ada@example.com', 'gone@example.com'] })
    await h.platform.email.deliverDue()
    await smtp.waitFor(1)
    assert.deepEqual(smtp.received[0]!.envelope.to, ['ada@example.com'])
    const row = await outbox(h, id)
    assert.equal(row.state, 'sent')
    assert.deepEqual(row.rejected, ['gone@example.com'])
  })

  test('an attempt whose process died (lease expired) is counted once, queued again after the delay and delivered once', async () => {
    const id = await sent(h, HELLO)
    const past = new Date(h.clock.now().getTime() - 1000)
    await h.t.db.query(`update platform.email_outbox set state = 'sending', attempts = 1, lease_owner = 'dead:1', lease_expires_at = $2 where id = $1`, [id, past])
    assert.equal(await h.platform.email.deliverDue(), 0)
    let row = await outbox(h, id)
    assert.equal(row.state, 'queued')
    assert.equal(row.attempts, 1)
    assert.equal(row.last_error?.code, 'EMAIL_LEASE_EXPIRED')
    h.clock.advance(RETRIES[0]! * 1000)
    assert.equal(await h.platform.email.deliverDue(), 1)
    await smtp.waitFor(1)
    row = await outbox(h, id)
    assert.equal(row.state, 'sent')
    assert.equal(row.attempts, 2)
  })

  test('messages accepted while the SMTP server is down survive a platform restart and are delivered exactly once', async () => {
    const port = smtp.port
    await smtp.close()
    const ids = [await sent(h, HELLO), await sent(h, { ...HELLO, to: 'bob@example.com' }), await sent(h, { ...HELLO, to: 'cy@example.com' })]
    await h.platform.email.deliverDue()
    for (const id of ids) {
      const row = await outbox(h, id)
      assert.equal(row.state, 'queued', 'a refused connection is temporary')
      assert.equal(row.last_error?.code, 'EMAIL_DELIVERY_FAILED')
    }
    // The platform stops; another starts over the same database; the SMTP server is back.
    await h.platform.close()
    smtp = await startTestSmtpServer({ port })
    const clock = h.clock.now()
    const restarted = await startHarness(h.t, { email: { smtpUrl: smtp.url, delivery: { retryDelaysSeconds: RETRIES } } })
    restarted.clock.set(new Date(clock.getTime() + RETRIES[0]! * 1000))
    h = restarted
    assert.equal(await h.platform.email.deliverDue(), 3)
    assert.equal(await h.platform.email.deliverDue(), 0)
    await smtp.waitFor(3)
    assert.deepEqual(smtp.received.map((mail) => mail.parsed.messageId).sort(), ids.map((id) => `<${id}@${DOMAIN}>`).sort(), 'each exactly once')
    for (const id of ids) assert.equal((await outbox(h, id)).state, 'sent')
  })

  test('with the worker running, concurrent sends are each delivered exactly once (a slot\'s write of sent claims its next message)', async () => {
    await h.platform.email.start()
    try {
      const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => sent(h, { ...HELLO, to: `p${i}@example.com`, subject: `Parallel ${i}` })))
      await smtp.waitFor(20)
      for (let i = 0; i < 100; i++) {
        const rows = await h.t.db.query<{ state: string }>(`select state from platform.email_outbox where id = any($1::uuid[])`, [ids])
        if (rows.every((row) => row.state === 'sent')) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
      assert.deepEqual(smtp.received.map((mail) => mail.parsed.messageId).sort(), ids.map((id) => `<${id}@${DOMAIN}>`).sort())
      const states = await h.t.db.query<{ state: string; attempts: number }>(`select state, attempts from platform.email_outbox where id = any($1::uuid[])`, [ids])
      assert.ok(states.every((row) => row.state === 'sent' && row.attempts === 1))
    } finally {
      await h.platform.email.stop()
    }
  })

  test('messages that ended are purged 14 days later', async () => {
    const id = await sent(h, HELLO)
    await h.platform.email.deliverDue()
    h.clock.advance(13 * 24 * 3600 * 1000)
    assert.equal(await h.platform.email.purge(), 0)
    h.clock.advance(2 * 24 * 3600 * 1000)
    assert.equal(await h.platform.email.purge(), 1)
    assert.equal((await h.t.db.query('select 1 from platform.email_outbox where id = $1', [id])).length, 0)
  })
})

describe(`outbound email without SMTP: the development mailbox (${backend})`, () => {
  let h: Harness

  before(async () => {
    h = await startHarness()
    const { token } = await h.createOwner('owner@acme.test')
    await deployEmailApp(h, token, SLUG)
  })
  after(() => h?.close())

  test('each recipient gets the message in the development mailbox, exactly once', async () => {
    const { body } = await send(h, { from: 'support', to: ['ada@example.com', 'bob@example.com'], subject: 'Dev ✓', text: 'Hi', html: '<p>Hi</p>' })
    assert.equal(await h.platform.email.deliverDue(), 1)
    assert.equal(await h.platform.email.deliverDue(), 0)
    const rows = await h.t.db.query<{ to_address: string; from_address: string; subject: string; text_body: string; html_body: string }>(
      `select to_address, from_address, subject, text_body, html_body from platform.dev_mail order by to_address`)
    assert.deepEqual(rows.map((row) => ({ ...row })), [
      { to_address: 'ada@example.com', from_address: `support@${DOMAIN}`, subject: 'Dev ✓', text_body: 'Hi', html_body: '<p>Hi</p>' },
      { to_address: 'bob@example.com', from_address: `support@${DOMAIN}`, subject: 'Dev ✓', text_body: 'Hi', html_body: '<p>Hi</p>' },
    ])
    assert.equal((await outbox(h, body.id)).state, 'sent')
  })
})
