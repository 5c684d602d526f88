/**
 * A push endpoint whose name does not resolve at the check before the POST is not POSTed to
 * (review, 2026-11-28): the POST's own look-up could answer a private address (an attacker's
 * name server failing one query and answering 127.0.0.1 to the next), so the attempt is
 * retried instead. The name servers are Node's `dns` functions, replaced for this file.
 */
import assert from 'node:assert/strict'
import dns from 'node:dns'
import { syncBuiltinESMExports } from 'node:module'
import net from 'node:net'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../../test/harness.ts'
import { deployDataApp, signIn } from '../../test/data-fixture.ts'
import { browserKeys, subscriptionJson } from './test-push-service.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { findNamespace } from '../namespaces/namespaces.ts'

const NAME = 'rebind.attacker.example'
let h: Harness
const connections: string[] = []
/** The internal service the attacker aims at: it records every connection made to it. */
const internal = net.createServer((socket) => {
  connections.push(`${socket.remoteAddress} -> ${socket.localPort}`)
  socket.destroy()
})
const realLookup = dns.lookup
const realPromisesLookup = dns.promises.lookup

before(async () => {
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve))
  h = await startHarness(undefined, { push: { allowLoopbackHttp: false, requestTimeoutMs: 2000 } })
})
after(async () => {
  ;(dns as { lookup: unknown }).lookup = realLookup
  ;(dns.promises as { lookup: unknown }).lookup = realPromisesLookup
  syncBuiltinESMExports()
  internal.close()
  await h.close()
})

test('a name that fails to resolve at the check gets no POST: the delivery waits for a retry, PUSH_SERVICE_UNAVAILABLE', async () => {
  const port = (internal.address() as net.AddressInfo).port
  const owner = await h.createOwner('owner@example.test')
  await deployDataApp(h, owner.token, { slug: 'pushy', sql: 'select 1;' })
  const mallory = await signIn(h, 'pushy', 'mallory@example.test')
  const subscribed = await h.request('/_service/push/subscriptions', {
    host: 'pushy', headers: { 'x-service-sdk': '1' }, token: mallory.accessToken,
    json: subscriptionJson(`https://${NAME}:${port}/latest/meta-data`, browserKeys()),
  })
  assert.equal(subscribed.status, 201, await subscribed.text())
  // The check's look-up fails; any later look-up of the name answers loopback.
  ;(dns.promises as { lookup: unknown }).lookup = async () => { throw Object.assign(new Error(`queryA ESERVFAIL ${NAME}`), { code: 'ESERVFAIL' }) }
  ;(dns as { lookup: unknown }).lookup = (host: string, options: unknown, callback?: unknown) => {
    const done = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all
    if (host !== NAME) return (realLookup as (...args: unknown[]) => void)(host, options, callback)
    return all ? done(null, [{ address: '127.0.0.1', family: 4 }]) : done(null, '127.0.0.1', 4)
  }
  syncBuiltinESMExports()

  const app = (await findAppBySlug(h.t.db, 'pushy'))!
  const namespace = (await findNamespace(h.t.db, app.id))!
  await h.platform.push.answer({ appId: app.id, namespaceId: namespace.id, method: 'send', args: [{ userId: mallory.userId, title: 'x', body: 'y' }] })
  await h.platform.push.worker.runDue()
  const [delivery] = await h.t.db.query<{ state: string; last_error: { code: string; message: string } }>('select state, last_error from platform.push_deliveries')
  assert.deepEqual(connections, [], 'nothing connected to the internal service')
  assert.equal(delivery!.last_error.code, 'PUSH_SERVICE_UNAVAILABLE')
  assert.match(delivery!.last_error.message, /did not resolve/)
  assert.notEqual(delivery!.state, 'failed', 'retried later, not given up')
})
