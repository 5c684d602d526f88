/** ctx.email.send's argument checks (message.ts): every refusal happens before anything is stored. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ServiceError } from '../lib/errors.ts'
import { readSendArgs } from './message.ts'

const LIMITS = { maxRecipients: 3, maxMessageBytes: 100 }
const base = { from: 'support', to: 'ada@example.com', subject: 'Hello', text: 'Hi there' }

function refusal(args: unknown[], code: string, field?: string): ServiceError {
  try {
    readSendArgs(args, LIMITS)
  } catch (error) {
    assert.ok(error instanceof ServiceError)
    assert.equal(error.code, code, error.message)
    if (field !== undefined) assert.equal((error.details as { field?: string }).field, field)
    return error
  }
  assert.fail('expected a refusal')
}

describe('readSendArgs', () => {
  test('a message with one or more recipients is read; repeats are dropped and domains lowercased', () => {
    assert.deepEqual(readSendArgs([base], LIMITS), { from: 'support', to: ['ada@example.com'], subject: 'Hello', text: 'Hi there', html: null, replyTo: null })
    const many = readSendArgs([{ ...base, to: ['ada@example.com', 'Bob@Example.com', 'ada@EXAMPLE.com'], html: '<p>Hi</p>', replyTo: 'help@example.com' }], LIMITS)
    assert.deepEqual(many.to, ['ada@example.com', 'Bob@example.com'])
    assert.equal(many.html, '<p>Hi</p>')
    assert.equal(many.replyTo, 'help@example.com')
  })

  for (const [field, value] of [
    ['subject', 'Hello\r\nBcc: eve@example.com'],
    ['subject', 'Hello\nX-Injected: yes'],
    ['subject', 'Hello\rX'],
    ['subject', 'Bell\u0007'],
    ['to', 'ada@example.com\r\nBcc: eve@example.com'],
    ['to', ['ada@example.com', 'eve@example.com\nX: y']],
    ['to', 'Ada <ada@example.com>'],
    ['to', 'ada@example.com, eve@example.com'],
    ['replyTo', 'help@example.com\r\nX-Injected: yes'],
    ['replyTo', 'Help <help@example.com>'],
  ] as const) {
    test(`${field} ${JSON.stringify(value)} is refused EMAIL_INVALID naming ${field}`, () => {
      refusal([{ ...base, [field]: value }], 'EMAIL_INVALID', field)
    })
  }

  test('a tab is allowed in a subject', () => {
    assert.equal(readSendArgs([{ ...base, subject: 'a\tb' }], LIMITS).subject, 'a\tb')
  })

  test('unknown fields, missing bodies, wrong types and NUL are refused', () => {
    refusal([{ ...base, cc: 'eve@example.com' }], 'EMAIL_INVALID', 'cc')
    refusal([{ ...base, headers: { 'X-A': '1' } }], 'EMAIL_INVALID', 'headers')
    refusal([{ from: 'support', to: 'ada@example.com', subject: 'x' }], 'EMAIL_INVALID', 'text')
    refusal([{ ...base, text: 5 }], 'EMAIL_INVALID', 'text')
    refusal([{ ...base, html: 'a\u0000b' }], 'EMAIL_INVALID', 'html')
    refusal([{ ...base, from: '' }], 'EMAIL_INVALID', 'from')
    refusal([{ ...base, to: [] }], 'EMAIL_INVALID', 'to')
    refusal([{ ...base, to: 5 }], 'EMAIL_INVALID', 'to')
    refusal(['support'], 'EMAIL_INVALID', 'message')
    refusal([base, {}], 'EMAIL_INVALID', 'arguments')
    refusal([{ ...base, subject: 'x'.repeat(999) }], 'EMAIL_INVALID', 'subject')
  })

  test('more recipients than EMAIL_MAX_RECIPIENTS is EMAIL_TOO_MANY_RECIPIENTS with the counts', () => {
    const error = refusal([{ ...base, to: ['a@x.com', 'b@x.com', 'c@x.com', 'd@x.com'] }], 'EMAIL_TOO_MANY_RECIPIENTS')
    assert.deepEqual(error.details, { recipients: 4, limit: 3 })
    assert.equal(error.status, 400)
  })

  test('subject, text and html past EMAIL_MAX_MESSAGE_KB in UTF-8 bytes is EMAIL_TOO_LARGE (413)', () => {
    // 5 + 2 * 48 = 101 bytes: "é" is two bytes.
    const error = refusal([{ ...base, text: 'é'.repeat(48) }], 'EMAIL_TOO_LARGE')
    assert.deepEqual(error.details, { bytes: 101, limit: 100 })
    assert.equal(error.status, 413)
    assert.ok(readSendArgs([{ ...base, text: 'é'.repeat(47), html: 'x' }], LIMITS))
  })
})
