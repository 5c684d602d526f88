/**
 * Web push end to end (issue 17, spec 2.10 notifications): the VAPID key pair made once and
 * sealed at rest, subscriptions through the browser SDK's routes on the app origin, and
 * `ctx.notifications.send` from a real Deno Function delivered by the worker to a push
 * service on loopback, which decrypts what it receives as a browser would (RFC 8291) and
 * checks the VAPID JWT (RFC 8292). Expired subscriptions (404, 410) are removed; 429, 5xx
 * and an unreachable service are retried; url, sizes and access are checked before anything
 * is queued.
 */
import assert from 'node:assert/strict'
import { createECDH, randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { signIn, type SignedIn } from '../../test/data-fixture.ts'
import { createPlatform } from '../platform.ts'
import { silentLogger } from '../lib/logger.ts'
import { decrypt } from '../lib/encryption.ts'
import { deriveKey } from '../lib/master-key.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { MAX_PAYLOAD_BYTES } from './send.ts'
import { pushBundle } from './test-app.ts'
import { browserKeys, decryptPush, startPushService, subscriptionJson, verifyVapid, type BrowserKeys, type TestPushService } from './test-push-service.ts'
import { VAPID_SEAL_PURPOSE } from './vapid-keys.ts'

const SDK = { 'x-service-sdk': '1' }

describe(`web push (${backend})`, () => {
  let h: Harness
  let service: TestPushService
  let ann: SignedIn
  let bob: SignedIn
  let ownerToken: string
  let ownerEmail: string
  let publicKey: string
  /** Ann's first browser (subscribed in the first delivery test). */
  let annLaptop: BrowserKeys

  before(async () => {
    service = await startPushService()
    h = await startHarness(undefined, {
      push: { allowLoopbackHttp: true, retryDelaysSeconds: [5, 10], requestTimeoutMs: 2000, leaseGraceSeconds: 1 },
    })
    ownerEmail = 'owner@push.test'
    ownerToken = (await h.createOwner(ownerEmail)).token
    for (const [slug, visibility] of [['pushbox', 'public'], ['privbox', 'private']] as const) {
      assert.equal((await h.request('/v1/apps', { token: ownerToken, json: { slug, visibility } })).status, 201)
      const res = await h.request(`/v1/apps/${slug}/deployments`, { token: ownerToken, json: pushBundle(slug, visibility) })
      assert.equal(res.status, 201, await res.text())
    }
    ann = await signIn(h, 'pushbox', 'ann@push.test')
    bob = await signIn(h, 'pushbox', 'bob@push.test')
    const res = await h.request('/_service/push/vapid-public-key', { host: 'pushbox' })
    publicKey = ((await res.json()) as { publicKey: string }).publicKey
  })
  after(async () => {
    await h?.close()
    await service?.close()
  })

  function subscribe(who: SignedIn | null, body: unknown, options: { slug?: string; headers?: Record<string, string> } = {}): Promise<Response> {
    return h.request('/_service/push/subscriptions', {
      host: options.slug ?? 'pushbox', headers: options.headers ?? SDK, json: body, ...(who === null ? {} : { token: who.accessToken }),
    })
  }

  /** Subscribes `who` with fresh browser keys at a fresh endpoint named `name`. */
  async function subscribed(who: SignedIn, name: string, slug = 'pushbox'): Promise<{ keys: BrowserKeys; endpoint: string; id: string }> {
    const keys = browserKeys()
    const endpoint = service.endpoint(name)
    const res = await subscribe(who, subscriptionJson(endpoint, keys), { slug })
    const text = await res.text()
    assert.equal(res.status, 201, text)
    return { keys, endpoint, id: (JSON.parse(text) as { id: string }).id }
  }

  /** Runs the app's notify Function with `notification` (anonymously). */
  async function notify(notification: unknown, slug = 'pushbox'): Promise<any> {
    const res = await h.request('/_service/functions/notify', { host: slug, headers: SDK, json: { notification: JSON.stringify(notification) } })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    return JSON.parse(text)
  }

  const pushesTo = (name: string) => service.received.filter((push) => push.path === `/${name}`)

  async function deliveries(notificationId: string) {
    return h.t.db.query<{ state: string; attempts: number; last_error: any; payload: unknown; subscription_id: string }>(
      'select state, attempts, last_error, payload, subscription_id from platform.push_deliveries where notification_id = $1 order by created_at, id',
      [notificationId])
  }

  test('the VAPID public key is served from every app origin, made once, its private key sealed under the master key', async () => {
    assert.match(publicKey, /^[A-Za-z0-9_-]{87}$/)
    const other = await h.request('/_service/push/vapid-public-key', { host: 'privbox', token: (await signIn(h, 'privbox', ownerEmail)).accessToken })
    assert.equal(((await other.json()) as { publicKey: string }).publicKey, publicKey)
    const rows = await h.t.db.query<{ public_key: string; private_key_sealed: string }>('select public_key, private_key_sealed from platform.push_vapid_keys')
    assert.equal(rows.length, 1)
    assert.equal(rows[0]!.public_key, publicKey)
    assert.match(rows[0]!.private_key_sealed, /^v1\./)
    const privateKey = decrypt(deriveKey(h.masterKey, 'push-vapid'), VAPID_SEAL_PURPOSE, rows[0]!.private_key_sealed)
    assert.ok(!rows[0]!.private_key_sealed.includes(privateKey), 'the stored value does not hold the key in the clear')
    const pair = createECDH('prime256v1')
    pair.setPrivateKey(Buffer.from(privateKey, 'base64url'))
    assert.equal(pair.getPublicKey().toString('base64url'), publicKey, 'the sealed private key is the served public key\'s')
    // Another process on the same database and master key serves the same pair and makes no other.
    const second = createPlatform({
      config: { baseUrl: new URL('http://localhost:8787'), production: false, smtpUrl: null, mailFrom: 'Service <no-reply@localhost>', registration: false },
      db: h.t.db, clock: h.clock, logger: silentLogger, operatorKey: 'svc_operator_unused', masterKey: h.masterKey, bundlesDir: '.tmp/push-second',
    })
    try {
      assert.equal(await second.push.publicKey(), publicKey)
    } finally {
      await second.close()
    }
    assert.equal((await h.t.db.query('select 1 from platform.push_vapid_keys')).length, 1)
  })

  test('the service worker is served from the app origin as JavaScript', async () => {
    const res = await h.request('/_service/push/sw.js', { host: 'pushbox' })
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/javascript/)
    const source = await res.text()
    assert.match(source, /showNotification/)
    assert.match(source, /notificationclick/)
  })

  test('a sent notification reaches the push service encrypted for the subscription (RFC 8291) and signed for its origin (VAPID)', async () => {
    const { keys, endpoint } = await subscribed(ann, 'ann-laptop')
    annLaptop = keys
    const sent = await notify({ userId: ann.userId, title: 'Order shipped', body: 'Your tea is on its way ☕', url: '/orders/42?tab=1#top', tag: 'order-42' })
    assert.match(sent.id, /^[0-9a-f-]{36}$/)
    assert.equal(sent.subscriptions, 1)
    assert.deepEqual((await deliveries(sent.id)).map((d) => d.state), ['waiting'])
    assert.equal(await h.platform.push.worker.runDue(), 1)
    const [push] = pushesTo('ann-laptop')
    assert.ok(push)
    assert.equal(push.headers['content-encoding'], 'aes128gcm')
    assert.equal(push.headers['content-type'], 'application/octet-stream')
    assert.equal(push.headers.ttl, '86400')
    assert.equal(push.headers.urgency, 'normal')
    assert.equal(push.headers.topic, 'order-42')
    assert.deepEqual(JSON.parse(decryptPush(push.body, keys)), {
      id: sent.id, title: 'Order shipped', body: 'Your tea is on its way ☕', url: '/orders/42?tab=1#top', tag: 'order-42',
    })
    const claims = await verifyVapid(push, { publicKey, endpoint })
    assert.equal(claims.aud, service.origin)
    assert.equal(claims.sub, 'mailto:no-reply@localhost')
    const [delivery] = await deliveries(sent.id)
    assert.equal(delivery!.state, 'delivered')
    assert.equal(delivery!.attempts, 1)
    assert.equal(delivery!.payload, null, 'the payload is discarded once delivered')
  })

  test('each subscription of the person gets the notification; a person without one, or unknown, gets none', async () => {
    const phone = await subscribed(bob, 'bob-phone')
    const desk = await subscribed(bob, 'bob-desk')
    const sent = await notify({ userId: bob.userId, title: 'Hello Bob', body: '' })
    assert.equal(sent.subscriptions, 2)
    await h.platform.push.worker.runDue()
    assert.equal(JSON.parse(decryptPush(pushesTo('bob-phone')[0]!.body, phone.keys)).id, sent.id)
    assert.equal(JSON.parse(decryptPush(pushesTo('bob-desk')[0]!.body, desk.keys)).title, 'Hello Bob')
    const nobody = await notify({ userId: randomUUID(), title: 'Anyone?', body: 'no' })
    assert.equal(nobody.subscriptions, 0)
    assert.equal((await deliveries(nobody.id)).length, 0)
  })

  test('subscribing needs the SDK header from the app origin, a signed-in person, an https public endpoint and valid keys', async () => {
    const keys = browserKeys()
    const good = subscriptionJson(service.endpoint('checks'), keys)
    const cases: [string, Response, number, string][] = [
      ['no SDK header', await subscribe(ann, good, { headers: {} }), 403, 'FORBIDDEN'],
      ['another origin', await subscribe(ann, good, { headers: { ...SDK, origin: 'http://evil.localhost:8787' } }), 403, 'FORBIDDEN'],
      ['signed out', await subscribe(null, good), 401, 'AUTH_REQUIRED'],
      ['http endpoint', await subscribe(ann, { ...good, endpoint: 'http://push.example.com/x' }), 400, 'PUSH_SUBSCRIPTION_INVALID'],
      ['private address', await subscribe(ann, { ...good, endpoint: 'https://10.1.2.3/x' }), 400, 'PUSH_SUBSCRIPTION_INVALID'],
      ['credentials', await subscribe(ann, { ...good, endpoint: 'https://u:p@push.example.com/x' }), 400, 'PUSH_SUBSCRIPTION_INVALID'],
      ['short p256dh', await subscribe(ann, { ...good, keys: { ...good.keys, p256dh: good.keys.p256dh.slice(0, 40) } }), 400, 'PUSH_SUBSCRIPTION_INVALID'],
      ['long auth', await subscribe(ann, { ...good, keys: { ...good.keys, auth: good.keys.auth + 'AAAA' } }), 400, 'PUSH_SUBSCRIPTION_INVALID'],
      ['no keys', await subscribe(ann, { endpoint: good.endpoint }), 400, 'PUSH_SUBSCRIPTION_INVALID'],
    ]
    for (const [what, res, status, code] of cases) {
      const body = (await res.json()) as { error: { code: string } }
      assert.equal(res.status, status, what)
      assert.equal(body.error.code, code, what)
    }
    assert.equal((await h.t.db.query('select 1 from platform.push_subscriptions where endpoint like $1', ['%checks'])).length, 0)
  })

  test('unsubscribing removes the person\'s subscription, and only theirs', async () => {
    const { endpoint } = await subscribed(ann, 'ann-old')
    const notTheirs = await h.request('/_service/push/subscriptions', { host: 'pushbox', method: 'DELETE', headers: SDK, token: bob.accessToken, json: { endpoint } })
    assert.deepEqual(await notTheirs.json(), { removed: false })
    const res = await h.request('/_service/push/subscriptions', { host: 'pushbox', method: 'DELETE', headers: SDK, token: ann.accessToken, json: { endpoint } })
    assert.deepEqual(await res.json(), { removed: true })
    assert.equal((await h.t.db.query('select 1 from platform.push_subscriptions where endpoint = $1', [endpoint])).length, 0)
  })

  test('an endpoint subscribed again by another person in the same browser moves to them', async () => {
    const keys = browserKeys()
    const endpoint = service.endpoint('shared-browser')
    assert.equal((await subscribe(ann, subscriptionJson(endpoint, keys))).status, 201)
    assert.equal((await subscribe(bob, subscriptionJson(endpoint, keys))).status, 201)
    const rows = await h.t.db.query<{ user_id: string }>('select user_id from platform.push_subscriptions where endpoint = $1', [endpoint])
    assert.deepEqual(rows.map((row) => row.user_id), [bob.userId])
    await h.t.db.query('delete from platform.push_subscriptions where endpoint = $1', [endpoint])
  })

  test('a person keeps at most 10 subscriptions per app: the oldest goes', async () => {
    const carl = await signIn(h, 'pushbox', 'carl@push.test')
    const endpoints: string[] = []
    for (let index = 0; index < 11; index += 1) {
      h.clock.advance(1000)
      endpoints.push((await subscribed(carl, `carl-${index}`)).endpoint)
    }
    const rows = await h.t.db.query<{ endpoint: string }>('select endpoint from platform.push_subscriptions where user_id = $1 order by created_at', [carl.userId])
    assert.deepEqual(rows.map((row) => row.endpoint), endpoints.slice(1))
  })

  test('a 404 or 410 removes the subscription and the delivery fails without a retry', async () => {
    for (const status of [404, 410]) {
      const name = `gone-${status}`
      const dave = await signIn(h, 'pushbox', `dave${status}@push.test`)
      const { id } = await subscribed(dave, name)
      service.answer(name, { status })
      const sent = await notify({ userId: dave.userId, title: 'Gone?', body: 'x' })
      await h.platform.push.worker.runDue()
      assert.equal(pushesTo(name).length, 1)
      const [delivery] = await deliveries(sent.id)
      assert.equal(delivery!.state, 'failed')
      assert.equal(delivery!.last_error.code, 'PUSH_SUBSCRIPTION_EXPIRED')
      assert.equal(delivery!.last_error.status, status)
      assert.equal((await h.t.db.query('select 1 from platform.push_subscriptions where id = $1', [id])).length, 0)
      h.clock.advance(60_000)
      await h.platform.push.worker.runDue()
      assert.equal(pushesTo(name).length, 1, 'not sent again')
      assert.equal((await notify({ userId: dave.userId, title: 'Again', body: 'x' })).subscriptions, 0)
    }
  })

  test('a 500, then a 429 with Retry-After, are retried after the backoff and the third attempt delivers the same message', async () => {
    const erin = await signIn(h, 'pushbox', 'erin@push.test')
    const { keys } = await subscribed(erin, 'flaky')
    service.answer('flaky', { status: 500 }, { status: 429, headers: { 'retry-after': '30' } })
    const sent = await notify({ userId: erin.userId, title: 'Persistent', body: 'tries' })
    await h.platform.push.worker.runDue()
    let [delivery] = await deliveries(sent.id)
    assert.equal(delivery!.state, 'waiting')
    assert.equal(delivery!.last_error.code, 'PUSH_SERVICE_UNAVAILABLE')
    assert.equal(delivery!.last_error.status, 500)
    // Not due before the first delay (5 s).
    h.clock.advance(4000)
    await h.platform.push.worker.runDue()
    assert.equal(pushesTo('flaky').length, 1)
    h.clock.advance(1000)
    await h.platform.push.worker.runDue()
    assert.equal(pushesTo('flaky').length, 2)
    ;[delivery] = await deliveries(sent.id)
    assert.equal(delivery!.last_error.status, 429)
    // Retry-After (30 s) outweighs the schedule's 10 s.
    h.clock.advance(10_000)
    await h.platform.push.worker.runDue()
    assert.equal(pushesTo('flaky').length, 2)
    h.clock.advance(20_000)
    await h.platform.push.worker.runDue()
    const pushes = pushesTo('flaky')
    assert.equal(pushes.length, 3)
    for (const push of pushes) assert.equal(JSON.parse(decryptPush(push.body, keys)).id, sent.id)
    ;[delivery] = await deliveries(sent.id)
    assert.equal(delivery!.state, 'delivered')
    assert.equal(delivery!.attempts, 3)
  })

  test('an unreachable push service is retried and the delivery fails once the schedule is spent', async () => {
    const fay = await signIn(h, 'pushbox', 'fay@push.test')
    const namespace = (await findNamespace(h.t.db, (await findAppBySlug(h.t.db, 'pushbox'))!.id))!
    const keys = browserKeys()
    // A port nothing listens on (the subscription is stored directly: routes accept the service's own endpoints only in this test).
    const dead = 'http://127.0.0.1:9/dead'
    await h.t.db.query(
      `insert into platform.push_subscriptions (id, app_id, namespace_id, user_id, endpoint, p256dh, auth, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
      [randomUUID(), namespace.appId, namespace.id, fay.userId, dead, keys.p256dh, keys.auth, h.clock.now()])
    const sent = await notify({ userId: fay.userId, title: 'Nobody home', body: 'x' })
    for (const wait of [0, 5000, 10_000]) {
      h.clock.advance(wait)
      await h.platform.push.worker.runDue()
    }
    const [delivery] = await deliveries(sent.id)
    assert.equal(delivery!.state, 'failed')
    assert.equal(delivery!.attempts, 3)
    assert.equal(delivery!.last_error.code, 'PUSH_SERVICE_UNAVAILABLE')
    assert.equal(delivery!.payload, null)
  })

  test('url stays on the app\'s origin; fields and the 3,993-byte payload are checked before anything is queued', async () => {
    const origin = h.platform.urls.app('pushbox')
    const base = { userId: ann.userId, title: 'T', body: 'B' }
    const refused: [unknown, string, string][] = [
      [{ ...base, url: 'https://evil.example/x' }, 'NOTIFICATION_INVALID', 'url'],
      [{ ...base, url: '//evil.example/x' }, 'NOTIFICATION_INVALID', 'url'],
      [{ ...base, url: '/\\evil.example/x' }, 'NOTIFICATION_INVALID', 'url'],
      [{ ...base, url: 'javascript:alert(1)' }, 'NOTIFICATION_INVALID', 'url'],
      [{ ...base, url: `${origin}.evil.example/x` }, 'NOTIFICATION_INVALID', 'url'],
      [{ ...base, title: '' }, 'NOTIFICATION_INVALID', 'title'],
      [{ ...base, body: undefined }, 'NOTIFICATION_INVALID', 'body'],
      [{ ...base, userId: 'ann' }, 'NOTIFICATION_INVALID', 'userId'],
      [{ ...base, to: ann.userId }, 'NOTIFICATION_INVALID', 'to'],
      [{ ...base, tag: 'x'.repeat(65) }, 'NOTIFICATION_INVALID', 'tag'],
    ]
    for (const [notification, code, field] of refused) {
      const result = await notify(notification)
      assert.equal(result.error, code, JSON.stringify(notification))
      assert.equal(result.details.field, field, JSON.stringify(notification))
    }
    const absolute = await notify({ ...base, url: `${origin}/a/b?c=1#d` })
    assert.equal(absolute.subscriptions >= 1, true)
    assert.deepEqual([...new Set((await deliveries(absolute.id)).map((d) => (d.payload as { url: string }).url))], ['/a/b?c=1#d'])
    // The JSON the service worker receives: exactly the limit is sent, one byte more is refused.
    const overhead = Buffer.byteLength(JSON.stringify({ id: randomUUID(), title: 'T', body: '' }))
    const fits = await notify({ ...base, body: 'x'.repeat(MAX_PAYLOAD_BYTES - overhead) })
    assert.ok(fits.id, JSON.stringify(fits))
    const tooLarge = await notify({ ...base, body: 'x'.repeat(MAX_PAYLOAD_BYTES - overhead + 1) })
    assert.equal(tooLarge.error, 'NOTIFICATION_TOO_LARGE')
    assert.deepEqual(tooLarge.details, { bytes: MAX_PAYLOAD_BYTES + 1, limit: MAX_PAYLOAD_BYTES })
    await h.platform.push.worker.runDue()
    const largest = pushesTo('ann-laptop').find((push) => (JSON.parse(decryptPush(push.body, annLaptop)) as { id: string }).id === fits.id)
    assert.equal(largest?.body.length, 4096, 'the largest notification makes a 4,096-byte push message')
  })

  test('a person who may not use a private app gets nothing from it, whatever subscriptions are stored', async () => {
    const owner = await signIn(h, 'privbox', ownerEmail)
    const mine = await subscribed(owner, 'owner-privbox', 'privbox')
    // Ann has no access: the edge admits no caller of hers (her pushbox token is pushbox's only)...
    const refused = await subscribe(ann, subscriptionJson(service.endpoint('ann-privbox'), browserKeys()), { slug: 'privbox' })
    assert.equal(refused.status, 401)
    // ...and one stored for her all the same (access since revoked, say) receives nothing.
    const app = (await findAppBySlug(h.t.db, 'privbox'))!
    const namespace = (await findNamespace(h.t.db, app.id))!
    const keys = browserKeys()
    await h.t.db.query(
      `insert into platform.push_subscriptions (id, app_id, namespace_id, user_id, endpoint, p256dh, auth, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
      [randomUUID(), app.id, namespace.id, ann.userId, service.endpoint('ann-privbox'), keys.p256dh, keys.auth, h.clock.now()])
    const call = (userId: string) => h.request('/_service/functions/notify', {
      host: 'privbox', headers: SDK, token: owner.accessToken, json: { notification: JSON.stringify({ userId, title: 'Private', body: 'p' }) },
    }).then((res) => res.json() as Promise<{ id: string; subscriptions: number }>)
    assert.equal((await call(ann.userId)).subscriptions, 0)
    const toOwner = await call(owner.userId)
    assert.equal(toOwner.subscriptions, 1)
    await h.platform.push.worker.runDue()
    assert.equal(pushesTo('ann-privbox').length, 0)
    assert.equal(JSON.parse(decryptPush(pushesTo('owner-privbox')[0]!.body, mine.keys)).title, 'Private')
  })

  test('deliveries waiting per app namespace are bounded: past the bound send fails NOTIFICATIONS_LIMIT_REACHED', async () => {
    const app = (await findAppBySlug(h.t.db, 'pushbox'))!
    const namespace = (await findNamespace(h.t.db, app.id))!
    const bounded = createPlatform({
      config: { baseUrl: new URL('http://localhost:8787'), production: false, smtpUrl: null, mailFrom: 'Service <no-reply@localhost>', registration: false },
      db: h.t.db, clock: h.clock, logger: silentLogger, operatorKey: 'svc_operator_unused', masterKey: h.masterKey, bundlesDir: '.tmp/push-bounded',
      push: { maxPending: 2 },
    })
    try {
      const send = () => bounded.push.answer({ appId: app.id, namespaceId: namespace.id, method: 'send', args: [{ userId: bob.userId, title: 'Many', body: 'm' }] })
      assert.deepEqual(((await send()) as { subscriptions: number }).subscriptions, 2)
      await assert.rejects(send(), (error: any) => error.code === 'NOTIFICATIONS_LIMIT_REACHED' && error.status === 429)
    } finally {
      await bounded.close()
    }
    await h.platform.push.worker.runDue()
  })
})
