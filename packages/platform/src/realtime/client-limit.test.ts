/**
 * One client address holds at most REALTIME_MAX_CONNECTIONS_PER_CLIENT sockets on a process
 * (review, 2026-11-28): without it, one anonymous client could open the process's every
 * socket (REALTIME_MAX_CONNECTIONS) to a public app and turn realtime off for every other
 * app's clients. Here the process takes 10 and one client 3; the test's sockets all come
 * from 127.0.0.1.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { deployDataApp } from '../../test/data-fixture.ts'
import { connect, serveRealtime, type Served, type TestClient } from './test-realtime.ts'

describe(`realtime sockets per client (${backend})`, () => {
  let h: Harness
  let served: Served
  const open: TestClient[] = []

  before(async () => {
    h = await startHarness(undefined, { realtime: { settings: { maxConnections: 10, maxConnectionsPerClient: 3 } } })
    const owner = await h.createOwner('owner@example.test')
    await deployDataApp(h, owner.token, { slug: 'crowd', sql: 'create table t (id int primary key);' })
    served = await serveRealtime(h)
  })
  after(async () => {
    for (const c of open) c.close()
    await served.close()
    await h.close()
  })

  test('a client past its share is refused 429 RATE_LIMITED; closing a socket makes room again', async () => {
    for (let i = 0; i < 3; i++) open.push(await connect(served, 'crowd'))
    const refused = await connect(served, 'crowd').then(
      (c) => { open.push(c); return null },
      (error: { status: number; body: string }) => error,
    )
    assert.ok(refused, 'the fourth socket of one client was refused')
    assert.equal(refused.status, 429)
    assert.equal(JSON.parse(refused.body).error.code, 'RATE_LIMITED')
    const first = open.shift()!
    first.close()
    await first.closed
    open.push(await connect(served, 'crowd'))
  })
})
