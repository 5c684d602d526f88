/**
 * Test support for web push: a push service on loopback that records every POST and answers
 * what a test tells it, a browser's subscription keys (an ECDH P-256 pair and a random auth
 * secret, as a browser makes them), and the two checks a push service and a browser make:
 * the VAPID JWT (RFC 8292, verified with jose) and the decryption of an aes128gcm message
 * (RFC 8291 over RFC 8188), written here from the RFCs as a test oracle, independent of the
 * web-push library that encrypts.
 */
import assert from 'node:assert/strict'
import { createDecipheriv, createECDH, hkdfSync, randomBytes, type ECDH } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { decodeProtectedHeader, importJWK, jwtVerify, type JWTPayload } from 'jose'

export interface ReceivedPush {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

/** What the service answers a POST: a status (and headers), or `hold` (never answer). */
export type PushAnswer = { status: number; headers?: Record<string, string> } | 'hold'

export interface TestPushService {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  /** Every POST received, in order. */
  readonly received: ReceivedPush[]
  /** A fresh endpoint URL on this service. */
  endpoint(name: string): string
  /** Answers for one endpoint path, used in order; after the last, 201. */
  answer(name: string, ...answers: PushAnswer[]): void
  /** Resolves once `count` POSTs have arrived in all. */
  waitFor(count: number, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

export async function startPushService(): Promise<TestPushService> {
  const received: ReceivedPush[] = []
  const answers = new Map<string, PushAnswer[]>()
  const waiters: { count: number; resolve: () => void }[] = []
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const path = request.url ?? '/'
      received.push({ path, headers: request.headers, body: Buffer.concat(chunks) })
      for (const waiter of [...waiters]) if (received.length >= waiter.count) waiter.resolve()
      const queue = answers.get(path.slice(1)) ?? []
      const next = queue.shift() ?? { status: 201 }
      if (next === 'hold') return
      response.writeHead(next.status, next.headers ?? {})
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  const origin = `http://127.0.0.1:${address.port}`
  return {
    origin,
    received,
    endpoint: (name) => `${origin}/${name}`,
    answer: (name, ...list) => answers.set(name, list),
    waitFor(count, timeoutMs = 15_000) {
      if (received.length >= count) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${received.length} of ${count} pushes arrived in ${timeoutMs} ms`)), timeoutMs)
        waiters.push({ count, resolve: () => { clearTimeout(timer); resolve() } })
      })
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

/** A browser's side of a subscription: its P-256 key pair and auth secret. */
export interface BrowserKeys {
  readonly ecdh: ECDH
  /** The uncompressed public point, base64url (PushSubscription keys.p256dh). */
  readonly p256dh: string
  /** 16 random bytes, base64url (keys.auth). */
  readonly auth: string
}

export function browserKeys(): BrowserKeys {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  return { ecdh, p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') }
}

/** The subscription JSON a browser posts for `endpoint`. */
export function subscriptionJson(endpoint: string, keys: BrowserKeys): { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } } {
  return { endpoint, expirationTime: null, keys: { p256dh: keys.p256dh, auth: keys.auth } }
}

function hkdf(salt: Buffer, ikm: Buffer, info: Buffer, length: number): Buffer {
  return Buffer.from(hkdfSync('sha256', ikm, salt, info, length))
}

/**
 * Decrypts an aes128gcm push message body as the browser does (RFC 8291 section 3.4 and
 * RFC 8188 section 2), checking the header and the padding on the way.
 */
export function decryptPush(body: Buffer, keys: BrowserKeys): string {
  // RFC 8188 2.1: salt (16) | rs (uint32) | idlen (1) | keyid (idlen): here the server's ephemeral public key.
  assert.ok(body.length > 21, 'the body holds the aes128gcm header')
  const salt = body.subarray(0, 16)
  const rs = body.readUInt32BE(16)
  const idlen = body[20]!
  assert.equal(idlen, 65, 'keyid is the sender\'s uncompressed P-256 public key (RFC 8291 3.1)')
  const senderPublic = body.subarray(21, 21 + idlen)
  const records = body.subarray(21 + idlen)
  assert.ok(records.length <= rs, 'one record (RFC 8291 4: a push message is a single record)')
  // RFC 8291 3.3, 3.4: the input keying material from the ECDH secret and the auth secret.
  const ecdhSecret = keys.ecdh.computeSecret(senderPublic)
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), keys.ecdh.getPublicKey(), senderPublic])
  const ikm = hkdf(Buffer.from(keys.auth, 'base64url'), ecdhSecret, keyInfo, 32)
  // RFC 8188 2.2, 2.3: content-encryption key and nonce (the first record's: sequence number 0).
  const cek = hkdf(salt, ikm, Buffer.from('Content-Encoding: aes128gcm\0'), 16)
  const nonce = hkdf(salt, ikm, Buffer.from('Content-Encoding: nonce\0'), 12)
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce)
  decipher.setAuthTag(records.subarray(records.length - 16))
  const padded = Buffer.concat([decipher.update(records.subarray(0, records.length - 16)), decipher.final()])
  // RFC 8188 2: the last record's plaintext ends with the delimiter 0x02 then zero or more 0x00.
  let end = padded.length - 1
  while (end >= 0 && padded[end] === 0) end -= 1
  assert.equal(padded[end], 2, 'the last record ends with the 0x02 padding delimiter')
  return padded.subarray(0, end).toString('utf8')
}

/**
 * Checks the request's VAPID authorization (RFC 8292): `vapid t=<JWT>, k=<public key>`, the
 * key the platform serves, an ES256 signature that verifies with it, `aud` the endpoint's
 * origin, `exp` within 24 hours, `sub` a contact. Returns the JWT's claims.
 */
export async function verifyVapid(push: ReceivedPush, expected: { publicKey: string; endpoint: string }): Promise<JWTPayload> {
  const header = String(push.headers.authorization ?? '')
  const match = /^vapid t=([A-Za-z0-9_.-]+), k=([A-Za-z0-9_-]+)$/.exec(header)
  assert.ok(match, `Authorization is "vapid t=…, k=…": ${header}`)
  const [, token, k] = match
  assert.equal(k, expected.publicKey, 'k is the platform\'s VAPID public key')
  assert.equal(decodeProtectedHeader(token!).alg, 'ES256')
  const point = Buffer.from(k!, 'base64url')
  const key = await importJWK({
    kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url'),
  }, 'ES256')
  const { payload } = await jwtVerify(token!, key, { algorithms: ['ES256'], audience: new URL(expected.endpoint).origin })
  assert.ok(typeof payload.exp === 'number' && payload.exp * 1000 > Date.now() && payload.exp * 1000 <= Date.now() + 24 * 3600 * 1000, 'exp within 24 hours')
  assert.match(String(payload.sub), /^(mailto:|https:)/)
  return payload
}
