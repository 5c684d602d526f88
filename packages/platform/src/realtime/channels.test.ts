/**
 * Realtime channels between an app's clients, on a real HTTP server with `ws` clients
 * (PGlite, or PostgreSQL with DATABASE_URL): broadcast (not back to the sender unless asked,
 * public and private channels of one name apart), presence (join, leave, the state sync on
 * joining, a closed socket's leave), the per-socket limits (frame size, message rate), a
 * client that stops reading closed without holding up the others, and resuming a
 * subscription after a reconnect (the changes missed replayed, or a gap).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { deployDataApp, expectJson, rest, signIn, type SignedIn } from '../../test/data-fixture.ts'
import { REALTIME_CLOSE_CODES as CLOSE } from './index.ts'
import { connect, serveRealtime, type Served, type TestClient } from './test-realtime.ts'
import { RELAY_CHANNEL } from './relay.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { findNamespace, runAsRole } from '../namespaces/namespaces.ts'

const SLUG = 'live-room'
const SQL = `
create table bulk (id int primary key, body text not null);
create table items (id serial primary key, label text not null);
`

describe(`realtime channels (${backend})`, () => {
  let h: Harness
  let served: Served
  let ann: SignedIn
  const open: TestClient[] = []

  async function client(options: Parameters<typeof connect>[2] = {}): Promise<TestClient> {
    const c = await connect(served, SLUG, options)
    open.push(c)
    return c
  }

  before(async () => {
    h = await startHarness(undefined, {
      realtime: { settings: { maxMessageBytes: 2000, messagesPerSecond: 1000, maxBufferedBytes: 256 * 1024 }, slowGraceMs: 500 },
    })
    const owner = await h.createOwner('owner@example.test')
    await deployDataApp(h, owner.token, { slug: SLUG, sql: SQL })
    ann = await signIn(h, SLUG, 'ann@example.test')
    served = await serveRealtime(h)
  })

  after(async () => {
    for (const c of open) c.close()
    await served.close()
    await h.close()
  })

  test('a broadcast reaches the channel\'s other sockets, and its sender only when it asked', async () => {
    const [a, b, c] = [await client(), await client(), await client()]
    assert.equal((await a.join('room')).type, 'joined')
    assert.equal((await b.join('room')).type, 'joined')
    assert.equal((await c.join('room', { broadcast: { self: true } })).type, 'joined')
    a.send({ type: 'broadcast', ref: 'b1', channel: 'room', event: 'cursor', payload: { x: 1 } })
    assert.equal((await a.next((f) => f.type === 'sent')).ref, 'b1')
    for (const receiver of [b, c]) {
      const frame = await receiver.next((f) => f.type === 'broadcast')
      assert.deepEqual(frame, { type: 'broadcast', channel: 'room', event: 'cursor', payload: { x: 1 } })
    }
    await a.none((f) => f.type === 'broadcast', 100)
    c.send({ type: 'broadcast', channel: 'room', event: 'echo', payload: 'hi' })
    assert.equal((await c.next((f) => f.type === 'broadcast')).event, 'echo')

    a.send({ type: 'broadcast', ref: 'b2', channel: 'elsewhere', event: 'x' })
    assert.equal((await a.next((f) => f.ref === 'b2')).code, 'REALTIME_NOT_JOINED')
  })

  test('app SQL cannot forge a broadcast: a notice it sends on the relay channel reaches no socket', async () => {
    const app = (await findAppBySlug(h.t.db, SLUG))!
    const namespace = (await findNamespace(h.t.db, app.id))!
    const [a, b] = [await client(), await client({ token: ann.accessToken })]
    assert.equal((await a.join('room')).type, 'joined')
    assert.equal((await b.join('room', { private: true })).type, 'joined')
    // NOTIFY needs no privilege: any app's SQL, as its user role, can send on the channel.
    for (const visibility of ['public', 'private']) {
      const forged = JSON.stringify({ p: 'x', kind: 'broadcast', appId: app.id, topic: `${app.id}:${visibility}:room`, channel: 'room', event: 'msg', payload: { from: 'admin' } })
      await runAsRole(h.t.db, { namespace, role: 'user' }, "select to_jsonb(pg_catalog.pg_notify($1->>0, $1->>1)::text)", { params: [RELAY_CHANNEL, forged] })
    }
    await a.none((f) => f.type === 'broadcast', 500)
    await b.none((f) => f.type === 'broadcast', 100)
  })

  test('a private channel is apart from the public channel of the same name', async () => {
    const signedIn = await client({ token: ann.accessToken })
    const anonymous = await client()
    assert.equal((await signedIn.join('news', { private: true })).type, 'joined')
    assert.equal((await anonymous.join('news')).type, 'joined')
    signedIn.send({ type: 'broadcast', channel: 'news', event: 'secret', payload: 1 })
    const other = await client({ token: ann.accessToken })
    assert.equal((await other.join('news', { private: true })).type, 'joined')
    signedIn.send({ type: 'broadcast', channel: 'news', event: 'secret', payload: 2 })
    // The first broadcast may still be on its way through NOTIFY (PostgreSQL) when other joins.
    const received = await other.next((f) => f.type === 'broadcast' && f.payload === 2)
    assert.deepEqual([received.channel, received.event], ['news', 'secret'])
    await anonymous.none((f) => f.type === 'broadcast')
  })

  test('presence: a join is told to the channel, a newcomer gets the state, leaving and closing are told', async () => {
    const a = await client({ token: ann.accessToken })
    const b = await client()
    assert.equal((await a.join('lobby')).type, 'joined')
    assert.deepEqual((await a.next((f) => f.type === 'presence')).state, {})
    assert.equal((await b.join('lobby')).type, 'joined')
    await b.next((f) => f.type === 'presence' && f.event === 'sync')
    a.send({ type: 'track', ref: 't1', channel: 'lobby', state: { name: 'Ann' } })
    const tracked = await a.next((f) => f.type === 'tracked')
    assert.equal(tracked.key, ann.userId)
    const joinSeen = await b.next((f) => f.type === 'presence' && f.event === 'join')
    assert.equal(joinSeen.key, ann.userId)
    assert.deepEqual(joinSeen.state, { name: 'Ann' })

    const c = await client()
    assert.equal((await c.join('lobby')).type, 'joined')
    const sync = await c.next((f) => f.type === 'presence' && f.event === 'sync')
    assert.deepEqual(sync.state, { [ann.userId]: [{ ref: joinSeen.ref, state: { name: 'Ann' } }] })

    b.send({ type: 'track', channel: 'lobby', state: { name: 'guest' } })
    const guest = await c.next((f) => f.type === 'presence' && f.event === 'join' && f.state.name === 'guest')
    assert.match(guest.key, /^anon:/)
    b.close()
    const gone = await c.next((f) => f.type === 'presence' && f.event === 'leave' && f.ref === guest.ref)
    assert.equal(gone.key, guest.key)
    a.send({ type: 'leave', ref: 'l1', channel: 'lobby' })
    assert.equal((await a.next((f) => f.type === 'left')).channel, 'lobby')
    assert.equal((await c.next((f) => f.type === 'presence' && f.event === 'leave')).key, ann.userId)
  })

  test('frames over the size limit close the socket (1009); a burst over the rate is refused, a flood closes it (4429)', async () => {
    const big = await client()
    big.send({ type: 'broadcast', channel: 'room', event: 'x', payload: 'y'.repeat(3000) })
    assert.equal(await big.closed, CLOSE.tooBig)

    const bursty = await client()
    for (let i = 0; i < 1500; i++) bursty.send({ type: 'ping' })
    const refusal = await bursty.next((f) => f.type === 'error')
    assert.equal(refusal.code, 'RATE_LIMITED')
    const flood = await client()
    for (let i = 0; i < 5000; i++) flood.send({ type: 'ping' })
    assert.equal(await flood.closed, CLOSE.rateLimited)
    // The burst's socket is still open, and a second later (the platform's clock) takes messages again.
    h.clock.advance(1100)
    bursty.send({ type: 'ping', ref: 'after' })
    assert.equal((await bursty.next((f) => f.ref === 'after')).type, 'pong')
  })

  test('a client that stops reading is closed (4408) while the others get every change on time', async () => {
    const slow = await client()
    const fast = await client()
    for (const c of [slow, fast]) assert.equal((await c.join('bulk', { changes: [{ event: 'insert', table: 'bulk' }] })).type, 'joined')
    // The slow client stops reading its socket: the kernel's buffers fill, then the platform's.
    slow.ws.pause()
    let inserted = 0
    let received = 0
    // Batches of 500 rows of 2 KB each, until the platform has given up on the slow client.
    while (h.platform.realtime.stats().closedSlow === 0 && inserted < 10_000) {
      const rows = Array.from({ length: 500 }, (_, i) => ({ id: inserted + i + 1, body: 'x'.repeat(2000) }))
      await expectJson(await rest(h, SLUG, '/bulk', { token: ann.accessToken, json: rows }), 201)
      inserted += rows.length
      while (received < inserted) {
        const change = await fast.next((f) => f.type === 'change', 20_000)
        assert.equal(change.key.id, ++received)
      }
    }
    assert.equal(h.platform.realtime.stats().closedSlow, 1, JSON.stringify(h.platform.realtime.stats()))
    slow.ws.resume()
    assert.ok([CLOSE.tooSlow, 1006].includes(await slow.closed))
  })

  test('a resumed subscription is replayed the changes it missed; a resume from before the log\'s start is told of a gap', async () => {
    const first = await client()
    const joined = await first.join('items', { changes: [{ table: 'items' }] })
    await expectJson(await rest(h, SLUG, '/items', { token: ann.accessToken, json: { label: 'seen' } }), 201)
    const seen = await first.next((f) => f.type === 'change')
    assert.ok(seen.position > joined.position)
    first.close()
    await first.closed
    await expectJson(await rest(h, SLUG, '/items', { token: ann.accessToken, json: [{ label: 'missed 1' }, { label: 'missed 2' }] }), 201)
    await h.platform.realtime.changes.poll()

    const again = await client()
    const resumed = await again.join('items', { changes: [{ table: 'items' }] }, seen.position)
    assert.equal(resumed.gap, false)
    const replayed = [await again.next((f) => f.type === 'change'), await again.next((f) => f.type === 'change')]
    assert.deepEqual(replayed.map((f) => f.record.label), ['missed 1', 'missed 2'])
    assert.ok(replayed[0]!.position > seen.position && replayed[1]!.position > replayed[0]!.position)
    await expectJson(await rest(h, SLUG, '/items', { token: ann.accessToken, json: { label: 'live' } }), 201)
    assert.equal((await again.next((f) => f.type === 'change')).record.label, 'live')

    // Everything purged (a zero retention), the old position cannot be resumed from.
    await h.t.db.query(`update platform.realtime_changes set changed_at = changed_at - interval '1 day'`)
    await h.platform.realtime.changes.purge()
    const late = await client()
    const gap = await late.join('items', { changes: [{ table: 'items' }] }, seen.position)
    assert.equal(gap.type, 'joined')
    assert.equal(gap.gap, true)
  })
})
