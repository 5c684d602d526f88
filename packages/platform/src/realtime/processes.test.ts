/**
 * Realtime across two platform processes on one PostgreSQL (this test's process and a child
 * platform process, each with its own pools, LISTEN connection and sockets): row changes
 * written through one reach subscribers on both, each only what they may read, in position
 * order and once; broadcasts and presence cross between the processes' sockets.
 * PostgreSQL only (PGlite is one process).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { platformProcesses, type PlatformProcesses } from '../../test/platform-processes.ts'
import { deployDataApp, expectJson, rest, signIn, type SignedIn } from '../../test/data-fixture.ts'
import { connect, freePort, serveRealtime, type Served, type TestClient } from './test-realtime.ts'

const SLUG = 'live-shared'
const SQL = `
create table notes (
  id serial primary key,
  owner_id uuid not null default auth.uid(),
  list int not null default 1,
  body text not null
);
alter table notes enable row level security;
create policy notes_read on notes for select using (owner_id = auth.uid() or list = 0);
create policy notes_insert on notes for insert with check (owner_id = auth.uid());
`

describe('realtime on two platform processes (postgres)', { skip: backend !== 'postgres' && 'PostgreSQL only: PGlite is one process' }, () => {
  let h: Harness
  let here: Served
  let there: Served
  let processes: PlatformProcesses
  let alice: SignedIn
  let bob: SignedIn
  const open: TestClient[] = []

  async function client(served: Served, token: string): Promise<TestClient> {
    const c = await connect(served, SLUG, { token })
    open.push(c)
    return c
  }

  before(async () => {
    h = await startHarness()
    const owner = await h.createOwner('owner@example.test')
    await deployDataApp(h, owner.token, { slug: SLUG, sql: SQL })
    alice = await signIn(h, SLUG, 'alice@example.test')
    bob = await signIn(h, SLUG, 'bob@example.test')
    here = await serveRealtime(h)
    // The child's clock reads the harness's, so the tokens it issued are current there.
    processes = await platformProcesses(h, { clockOffsetMs: h.clock.now().getTime() - Date.now() })
    const port = await freePort()
    await processes.start('realtime', 1, { httpPort: port })
    there = { port, close: async () => {} }
  })

  after(async () => {
    for (const c of open) c.close()
    await processes?.close()
    await here?.close()
    await h?.close()
  })

  test('changes reach subscribers on both processes, each only their readable rows, in order and once', async () => {
    const a = await client(here, alice.accessToken)
    const b = await client(there, bob.accessToken)
    for (const c of [a, b]) assert.equal((await c.join('notes', { changes: [{ event: 'insert', table: 'notes' }] })).type, 'joined')
    await expectJson(await rest(h, SLUG, '/notes', { token: alice.accessToken, json: { body: 'alice only' } }), 201)
    assert.equal((await a.next((f) => f.type === 'change')).record.body, 'alice only')
    await b.none((f) => f.type === 'change')

    // Concurrent writers: every process sequences and reads; each subscriber sees each change once, in order.
    await Promise.all(Array.from({ length: 40 }, (_, i) =>
      rest(h, SLUG, '/notes', { token: i % 2 ? alice.accessToken : bob.accessToken, json: { body: `shared ${i}`, list: 0 } })
        .then((res) => expectJson(res, 201))))
    for (const c of [a, b]) {
      const changes = []
      for (let i = 0; i < 40; i++) changes.push(await c.next((f) => f.type === 'change', 15_000))
      const positions = changes.map((f) => f.position)
      assert.deepEqual(positions, [...positions].sort((x, y) => x - y))
      assert.equal(new Set(changes.map((f) => f.record.body)).size, 40)
      await c.none((f) => f.type === 'change', 200)
    }
  })

  test('broadcast and presence cross between the processes\' sockets', async () => {
    const a = await client(here, alice.accessToken)
    const b = await client(there, bob.accessToken)
    assert.equal((await a.join('room')).type, 'joined')
    assert.equal((await b.join('room')).type, 'joined')
    a.send({ type: 'broadcast', channel: 'room', event: 'hello', payload: { from: 'here' } })
    assert.deepEqual((await b.next((f) => f.type === 'broadcast')).payload, { from: 'here' })
    b.send({ type: 'broadcast', channel: 'room', event: 'hello', payload: { from: 'there' } })
    assert.deepEqual((await a.next((f) => f.type === 'broadcast')).payload, { from: 'there' })

    b.send({ type: 'track', ref: 'tb', channel: 'room', state: { at: 'there' } })
    const joined = await a.next((f) => f.type === 'presence' && f.event === 'join')
    assert.equal(joined.key, bob.userId)
    const late = await client(here, alice.accessToken)
    assert.equal((await late.join('room')).type, 'joined')
    const sync = await late.next((f) => f.type === 'presence' && f.event === 'sync')
    assert.deepEqual(sync.state[bob.userId], [{ ref: joined.ref, state: { at: 'there' } }])
    b.close()
    assert.equal((await a.next((f) => f.type === 'presence' && f.event === 'leave')).ref, joined.ref)
  })
})
