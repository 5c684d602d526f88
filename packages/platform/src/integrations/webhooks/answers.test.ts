/**
 * The pure pieces of the webhook receiver: the sender's answer for each provider outcome,
 * which headers reach the Function, and the exact text of a body.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { MAX_WEBHOOK_RESULT_BYTES, UNAVAILABLE, senderAnswer } from './answers.ts'
import { exactText } from './body.ts'
import { forwardedHeaders } from './headers.ts'

describe('webhook answers', () => {
  test('a value answers 200 with it; no value answers 200 null', () => {
    assert.deepEqual(senderAnswer({ ok: true, value: { received: true } }), { status: 200, body: { received: true } })
    assert.deepEqual(senderAnswer({ ok: true, value: undefined }), { status: 200, body: null })
  })

  test('a value over 1 MiB of JSON answers 503', () => {
    assert.equal(senderAnswer({ ok: true, value: 'x'.repeat(MAX_WEBHOOK_RESULT_BYTES) }), UNAVAILABLE)
  })

  test('typed 401 and 403 keep their status; 400, 404, 409, 422 and 429 become 400; details stay', () => {
    const typed = (status: number) => senderAnswer({ ok: false, kind: 'typed', error: { status, code: 'C', message: 'm', details: { a: 1 } } })
    for (const status of [401, 403]) assert.deepEqual(typed(status), { status, body: { error: { code: 'C', message: 'm', details: { a: 1 } } } })
    for (const status of [400, 404, 409, 422, 429]) assert.equal(typed(status).status, 400)
  })

  test('typed 503, failures and timeouts answer the same generic 503', () => {
    assert.equal(senderAnswer({ ok: false, kind: 'typed', error: { status: 503, code: 'DOWN', message: 'secret reason' } }), UNAVAILABLE)
    assert.equal(senderAnswer({ ok: false, kind: 'failed', message: 'exploded' }), UNAVAILABLE)
    assert.equal(senderAnswer({ ok: false, kind: 'timeout' }), UNAVAILABLE)
    assert.equal(UNAVAILABLE.status, 503)
  })
})

describe('webhook headers', () => {
  test('cookies, forwarding, hop-by-hop and x-service-* headers are removed, others kept sorted and lower-cased', () => {
    const headers = new Headers([
      ['X-Signature', 'v1=ab'], ['Cookie', 'a=b'], ['X-Forwarded-For', '10.0.0.1'], ['X-Forwarded', 'for=1'], ['Forwarded', 'for=2'],
      ['Via', '1.1 p'], ['X-Real-IP', '10.0.0.2'], ['CF-Connecting-IP', '10.0.0.3'], ['X-Service-Sdk', '1'], ['Content-Type', 'text/plain'],
      ['Proxy-Authorization', 'Basic x'], ['Accept', 'a'], ['Accept', 'b'],
    ])
    assert.deepEqual(forwardedHeaders(headers), [
      { name: 'accept', value: 'a, b' }, { name: 'content-type', value: 'text/plain' }, { name: 'x-signature', value: 'v1=ab' },
    ])
  })
})

describe('webhook body text', () => {
  test('UTF-8 is decoded exactly, a byte-order mark kept; other bytes are refused', () => {
    assert.equal(exactText(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d])), '\uFEFF{}')
    assert.equal(exactText(new TextEncoder().encode('caf\u00e9 \u{1F600}\r\n')), 'caf\u00e9 \u{1F600}\r\n')
    assert.equal(exactText(new Uint8Array([0x63, 0x61, 0x66, 0xe9])), null, 'Latin-1 é')
    assert.equal(exactText(new Uint8Array([0xed, 0xa0, 0x80])), null, 'an encoded surrogate')
  })
})
