/**
 * Realtime on a real HTTP server with `ws` clients (PGlite, or PostgreSQL with DATABASE_URL):
 * the handshake admitted exactly as the data API admits a caller (cookie, session JWT,
 * `svc_app_` token, anonymous on a public app; a private app's 401 and 403), row changes
 * under row-level security (two people each see only their rows; deletes only to those
 * who could read the row; equality filters), resuming after a reconnect, broadcast and
 * presence, and the socket closed when its authority ends.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { appUrl, deployDataApp, expectJson, rest, revealAppToken, signIn, type SignedIn } from '../../test/data-fixture.ts'
import { REALTIME_CLOSE_CODES as CLOSE } from './index.ts'
import { signedInBrowser } from '../../test/sign-in-flow.ts'
import { connect, cookieHeader, refused, serveRealtime, type Served, type TestClient } from './test-realtime.ts'

const NOTES_SQL = `
create table notes (
  id serial primary key,
  owner_id uuid not null default auth.uid(),
  list int not null default 1,
  body text not null
);
alter table notes enable row level security;
create policy notes_read on notes for select using (owner_id = auth.uid() or list = 0);
create policy notes_insert on notes for insert with check (owner_id = auth.uid());
create policy notes_update on notes for update using (owner_id = auth.uid()) with check (owner_id = auth.uid());
create policy notes_delete on notes for delete using (owner_id = auth.uid());
create table keyless (body text);
`

const SLUG = 'live-notes'
const PRIVATE = 'live-private'

describe(`realtime sockets (${backend})`, () => {
  let h: Harness
  let served: Served
  let owner: { token: string; userId: string }
  let alice: SignedIn
  let bob: SignedIn
  const open: TestClient[] = []

  async function client(slug: string, options: Parameters<typeof connect>[2] = {}): Promise<TestClient> {
    const c = await connect(served, slug, options)
    open.push(c)
    return c
  }

  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@example.test')
    await deployDataApp(h, owner.token, { slug: SLUG, sql: NOTES_SQL })
    await deployDataApp(h, owner.token, { slug: PRIVATE, sql: NOTES_SQL, visibility: 'private' })
    alice = await signIn(h, SLUG, 'alice@example.test')
    bob = await signIn(h, SLUG, 'bob@example.test')
    served = await serveRealtime(h)
  })

  after(async () => {
    for (const c of open) c.close()
    await served.close()
    await h.close()
  })

  test('a plain GET of the socket path answers 426, and other paths refuse the upgrade with 404', async () => {
    const res = await h.request('/_service/realtime', { host: SLUG })
    assert.equal(res.status, 426)
    assert.equal((await res.json()).error.code, 'UPGRADE_REQUIRED')
    const other = await refused(connect(served, SLUG, { path: '/elsewhere' }))
    assert.equal(other.status, 404)
  })

  test('a public app takes anonymous sockets; a private app refuses them with the edge\'s 401 and a stranger with 403', async () => {
    const anonymous = await client(SLUG)
    assert.equal((await anonymous.join('lobby')).type, 'joined')
    const unknownApp = await refused(connect(served, 'no-such-app'))
    assert.equal(unknownApp.status, 404)
    assert.equal(unknownApp.body.error.code, 'APP_NOT_FOUND')
    const noOne = await refused(connect(served, PRIVATE))
    assert.equal(noOne.status, 401)
    assert.equal(noOne.body.error.code, 'AUTH_REQUIRED')
    const stranger = await signedInBrowser(h, 'stranger@example.test')
    void stranger
    // Bob signed in to the public app; his token is for that app only.
    const wrongApp = await refused(connect(served, PRIVATE, { token: bob.accessToken }))
    assert.equal(wrongApp.status, 401)
  })

  test('a signed-in socket from another origin is refused (the cookie rides along with any page\'s WebSocket)', async () => {
    const foreign = await refused(connect(served, SLUG, { cookie: cookieHeader(alice.browser, SLUG), origin: appUrl('other-app') }))
    assert.equal(foreign.status, 403)
    const own = await client(SLUG, { cookie: cookieHeader(alice.browser, SLUG), origin: appUrl(SLUG) })
    assert.equal((await own.join('x')).type, 'joined')
  })

  test('row changes reach only the people who may read the row, as the data API would answer them', async () => {
    const a = await client(SLUG, { cookie: cookieHeader(alice.browser, SLUG), origin: appUrl(SLUG) })
    const b = await client(SLUG, { token: bob.accessToken })
    const anonymous = await client(SLUG)
    for (const c of [a, b, anonymous]) {
      const joined = await c.join('notes', { changes: [{ event: '*', table: 'notes' }] })
      assert.equal(joined.type, 'joined', JSON.stringify(joined))
      assert.equal(typeof joined.position, 'number')
    }
    const mine = await expectJson(await rest(h, SLUG, '/notes', { token: alice.accessToken, json: { body: 'alice private' }, headers: { prefer: 'return=representation' } }), 201)
    const insert = await a.next((f) => f.type === 'change')
    assert.equal(insert.event, 'insert')
    assert.equal(insert.table, 'notes')
    assert.deepEqual(insert.key, { id: mine[0].id })
    assert.equal(insert.record.body, 'alice private')
    assert.equal(insert.record.owner_id, alice.userId)
    await b.none((f) => f.type === 'change')
    await anonymous.none((f) => f.type === 'change', 50)

    // A row in the public list: everyone who may read it gets it.
    await expectJson(await rest(h, SLUG, '/notes', { token: bob.accessToken, json: { body: 'bob public', list: 0 } }), 201)
    for (const c of [a, b, anonymous]) {
      const change = await c.next((f) => f.type === 'change')
      assert.equal(change.record.body, 'bob public')
    }

    // An update and a delete of Alice's private row: only Alice, and the delete carries the key alone.
    await expectJson(await rest(h, SLUG, `/notes?id=eq.${mine[0].id}`, { method: 'PATCH', token: alice.accessToken, json: { body: 'alice edited' } }), 204)
    const update = await a.next((f) => f.type === 'change')
    assert.equal(update.event, 'update')
    assert.equal(update.record.body, 'alice edited')
    assert.ok(update.position > insert.position)
    await expectJson(await rest(h, SLUG, `/notes?id=eq.${mine[0].id}`, { method: 'DELETE', token: alice.accessToken }), 204)
    const deleted = await a.next((f) => f.type === 'change')
    assert.equal(deleted.event, 'delete')
    assert.deepEqual(deleted.key, { id: mine[0].id })
    assert.equal(deleted.record, undefined)
    await b.none((f) => f.type === 'change')
    await anonymous.none((f) => f.type === 'change', 50)
  })

  test('a delete reaches those who could read the row before, only them', async () => {
    const a = await client(SLUG, { token: alice.accessToken })
    const b = await client(SLUG, { token: bob.accessToken })
    for (const c of [a, b]) assert.equal((await c.join('deletes', { changes: [{ event: 'delete', table: 'notes' }] })).type, 'joined')
    const [shared] = await expectJson(await rest(h, SLUG, '/notes', { token: bob.accessToken, json: { body: 'to go', list: 0 }, headers: { prefer: 'return=representation' } }), 201)
    const [own] = await expectJson(await rest(h, SLUG, '/notes', { token: bob.accessToken, json: { body: 'bob only' }, headers: { prefer: 'return=representation' } }), 201)
    await expectJson(await rest(h, SLUG, `/notes?id=in.(${shared.id},${own.id})`, { method: 'DELETE', token: bob.accessToken }), 204)
    const bobs = [await b.next((f) => f.type === 'change'), await b.next((f) => f.type === 'change')]
    assert.deepEqual(bobs.map((f) => f.key.id).sort(), [shared.id, own.id].sort())
    const alices = await a.next((f) => f.type === 'change')
    assert.deepEqual(alices.key, { id: shared.id })
    await a.none((f) => f.type === 'change')
  })

  test('an equality filter narrows a subscription; a bad filter or table is refused at join', async () => {
    const b = await client(SLUG, { token: bob.accessToken })
    const joined = await b.join('public-list', { changes: [{ event: 'insert', table: 'notes', filter: 'list=eq.0' }] })
    assert.equal(joined.type, 'joined')
    await expectJson(await rest(h, SLUG, '/notes', { token: bob.accessToken, json: { body: 'in list 7', list: 7 } }), 201)
    await expectJson(await rest(h, SLUG, '/notes', { token: bob.accessToken, json: { body: 'in list 0', list: 0 } }), 201)
    const change = await b.next((f) => f.type === 'change')
    assert.equal(change.record.body, 'in list 0')
    await b.none((f) => f.type === 'change')

    const badValue = await b.join('bad-value', { changes: [{ table: 'notes', filter: 'list=eq.seven' }] })
    assert.equal(badValue.code, 'REALTIME_FILTER_INVALID')
    const badColumn = await b.join('bad-column', { changes: [{ table: 'notes', filter: 'nope=eq.1' }] })
    assert.equal(badColumn.code, 'REALTIME_FILTER_INVALID')
    const noKey = await b.join('no-key', { changes: [{ table: 'keyless' }] })
    assert.equal(noKey.code, 'REALTIME_TABLE_NO_PRIMARY_KEY')
    const missing = await b.join('missing', { changes: [{ table: 'nothing_here' }] })
    assert.equal(missing.code, 'REALTIME_TABLE_NOT_FOUND')
  })

  test('an svc_app_ token acts as the app\'s owner, as on the data API', async () => {
    const ownerBrowser = await signedInBrowser(h, 'owner@example.test')
    const token = await revealAppToken(h, { ownerToken: owner.token, ownerBrowser, slug: SLUG })
    const asOwner = await client(SLUG, { token })
    assert.equal((await asOwner.join('owner-notes', { changes: [{ table: 'notes' }] })).type, 'joined')
    const [row] = await expectJson(await rest(h, SLUG, '/notes', { token, json: { body: 'by the owner' }, headers: { prefer: 'return=representation' } }), 201)
    assert.equal(row.owner_id, owner.userId)
    const change = await asOwner.next((f) => f.type === 'change')
    assert.equal(change.record.body, 'by the owner')
  })

  test('sockets opened with a session close (4401) once that session signs out', async () => {
    const dave = await signIn(h, SLUG, 'dave@example.test')
    const byCookie = await client(SLUG, { cookie: cookieHeader(dave.browser, SLUG), origin: appUrl(SLUG) })
    const byToken = await client(SLUG, { token: dave.accessToken })
    const bystander = await client(SLUG, { token: bob.accessToken })
    for (const c of [byCookie, byToken, bystander]) assert.equal((await c.join('d')).type, 'joined')
    await h.platform.realtime.recheck()
    const signedOut = await dave.browser.fetch(`${appUrl(SLUG)}/_service/auth/sign-out`, {
      method: 'POST', headers: { 'x-service-sdk': '1', origin: appUrl(SLUG), accept: 'application/json' },
    })
    assert.equal(signedOut.status, 200)
    await h.platform.realtime.recheck()
    assert.equal(await byCookie.closed, CLOSE.authRequired)
    assert.equal(await byToken.closed, CLOSE.authRequired)
    bystander.send({ type: 'ping', ref: 'still' })
    assert.equal((await bystander.next((f) => f.type === 'pong')).ref, 'still')
  })

  test('a socket opened with an svc_app_ token closes (4401) as soon as the token is revoked', async () => {
    const ownerBrowser = await signedInBrowser(h, 'owner@example.test')
    const token = await revealAppToken(h, { ownerToken: owner.token, ownerBrowser, slug: SLUG })
    const socket = await client(SLUG, { token })
    assert.equal((await socket.join('t')).type, 'joined')
    const { body } = await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/access-tokens`)
    const live = body.tokens.filter((t: any) => !t.revokedAt)
    for (const t of live) assert.equal((await ownerApi(h, owner.token, 'DELETE', `/v1/apps/${SLUG}/access-tokens/${t.id}`)).status, 204)
    // The revocation's change notice re-checks sockets at once: no timer needed.
    assert.equal(await socket.closed, CLOSE.authRequired)
  })

  test('a private app\'s socket closes (4403) when its person loses access, and anonymous sockets (4401) when a public app turns private', async () => {
    const carolBrowser = await signedInBrowser(h, 'carol@example.test')
    void carolBrowser
    assert.equal((await ownerApi(h, owner.token, 'POST', `/v1/apps/${PRIVATE}/grants`, { email: 'carol@example.test' })).status, 201)
    const carol = await signIn(h, PRIVATE, 'carol@example.test')
    const shared = await client(PRIVATE, { token: carol.accessToken })
    assert.equal((await shared.join('p', { private: true })).type, 'joined')
    assert.equal((await ownerApi(h, owner.token, 'DELETE', `/v1/apps/${PRIVATE}/grants/${carol.userId}`)).status, 204)
    await h.platform.realtime.recheck()
    assert.equal(await shared.closed, CLOSE.accessDenied)

    await deployDataApp(h, owner.token, { slug: 'live-turning', sql: 'create table t (id int primary key);' })
    const anonymous = await client('live-turning')
    assert.equal((await anonymous.join('lobby')).type, 'joined')
    const redeployed = await h.request('/v1/apps/live-turning/deployments', {
      token: owner.token,
      json: bundle({ 'service.yaml': manifest('live-turning', '', 'private'), 'public/index.html': 'now private', 'database/migrations/0001_data.sql': 'create table t (id int primary key);' }),
    })
    assert.equal(redeployed.status, 201, await redeployed.text())
    assert.equal(await anonymous.closed, CLOSE.authRequired)
  })

  test('private channels are for signed-in people only', async () => {
    const anonymous = await client(SLUG)
    const refusedJoin = await anonymous.join('staff', { private: true })
    assert.equal(refusedJoin.code, 'AUTH_REQUIRED')
    const b = await client(SLUG, { token: bob.accessToken })
    assert.equal((await b.join('staff', { private: true })).type, 'joined')
  })

  // Last: it moves the clock past every access token's expiry.
  test('a socket opened with a session JWT closes (4401) once the token expires', async () => {
    const erin = await signIn(h, SLUG, 'erin@example.test')
    const byToken = await client(SLUG, { token: erin.accessToken })
    const byCookie = await client(SLUG, { cookie: cookieHeader(erin.browser, SLUG), origin: appUrl(SLUG) })
    for (const c of [byToken, byCookie]) assert.equal((await c.join('e')).type, 'joined')
    h.clock.advance(61 * 60 * 1000)
    await h.platform.realtime.recheck()
    assert.equal(await byToken.closed, CLOSE.authRequired)
    // The cookie's session is refreshed as any request's is, and its socket stays.
    byCookie.send({ type: 'ping', ref: 'cookie' })
    assert.equal((await byCookie.next((f) => f.type === 'pong')).ref, 'cookie')
  })
})
