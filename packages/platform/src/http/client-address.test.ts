// Per-client rate limits over real sockets: the platform must read each request's peer
// address from the socket @hono/node-server hands it. Before this was wired through, every
// client shared the bucket "unknown", so one client could lock everyone out.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import { Hono } from 'hono'
import { startHarness, type Harness } from '../../test/harness.ts'
import { clientAddress } from './client-address.ts'

let h: Harness
let server: ServerType
let port: number

before(async () => {
  h = await startHarness()
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: (req, env) => h.platform.fetch(req, env), port: 0, hostname: '127.0.0.1' }, () => resolve(s))
  })
  port = (server.address() as AddressInfo).port
})

after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await h.close()
})

/** POST /v1/cli/logins from the loopback address `from`; resolves with the status. */
function startCliLogin(from: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({})
    const req = request({
      host: '127.0.0.1', port, localAddress: from, method: 'POST', path: '/v1/cli/logins',
      headers: { host: new URL(h.platform.urls.base).host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('per-client rate limits', () => {
  test('one client that exhausts its limit does not limit another client', async () => {
    const statuses: number[] = []
    for (let attempt = 0; attempt < 31; attempt += 1) statuses.push(await startCliLogin('127.0.0.2'))
    assert.ok(statuses.slice(0, 30).every((status) => status !== 429), `the first 30 were allowed: ${statuses.join(',')}`)
    assert.equal(statuses[30], 429, 'the 31st from the same address is limited')
    assert.notEqual(await startCliLogin('127.0.0.3'), 429, 'another address still gets through')
    assert.equal(await startCliLogin('127.0.0.2'), 429, 'the first address is still limited')
  })
})

describe('behind a trusted proxy', () => {
  /** What `clientAddress` makes of a request carrying `forwardedFor`, with the proxy trusted or not. */
  async function addressFor(forwardedFor: string, trustProxy: boolean): Promise<string> {
    const app = new Hono()
    app.get('/', (c) => c.text(clientAddress(c, trustProxy)))
    return (await app.request('/', { headers: { 'x-forwarded-for': forwardedFor } })).text()
  }

  test('the address the proxy appended counts, not the one the client sent ahead of it', async () => {
    // nginx's $proxy_add_x_forwarded_for and load balancers append the peer they saw to
    // whatever the client sent, so a forged first entry must not pick the rate-limit bucket.
    assert.equal(await addressFor('6.6.6.6, 203.0.113.9', true), '203.0.113.9')
    assert.equal(await addressFor('7.7.7.7,203.0.113.9', true), '203.0.113.9')
    assert.equal(await addressFor('203.0.113.9', true), '203.0.113.9')
  })

  test('without SERVICE_TRUST_PROXY the header is ignored', async () => {
    assert.equal(await addressFor('203.0.113.9', false), 'unknown')
  })
})
