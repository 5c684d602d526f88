/**
 * Spec 5.5 and 8: in a Function invoked with a custom-domain browser session, `ctx.data`
 * keeps the invocation's original authorization, which expires within 60 seconds; later
 * data calls fail (AUTH_EXPIRED, 401) and nothing refreshes it. The same Function invoked
 * through the app's own origin keeps its data authorization for the whole invocation.
 *
 * Real Deno, the platform's manual clock: the Function makes a data call, logs that it did,
 * then keeps making data calls; the test waits for the log line, moves the clock past the
 * window, and reads what the Function saw.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { CookieClient } from '../../test/cookie-client.ts'
import { appUrl, signInTo } from '../../test/sign-in-flow.ts'
import { createPlatformAdmin, customOrigin, signInOnDomain } from '../../test/custom-domain-flow.ts'
import { eventually } from '../../test/eventually.ts'
import { CUSTOM_DOMAIN_DATA_MS } from './context-data.ts'
import { checkDataAuthorization, type DataIdentity } from '../namespaces/data-identity.ts'
import { ServiceError } from '../lib/errors.ts'

const TEST = { timeout: 60_000 }
const SLUG = 'desk'
const DOMAIN = 'desk.example.test'

const FUNCTIONS = `functions:
  - name: patient
    entrypoint: functions/patient.ts
    access: user
    timeoutSeconds: 30
    routes:
      - method: POST
        path: /api/patient
`

const FILES = {
  'functions/patient.ts': `
    import { boolean, defineFunction, object, string } from '@service/server'
    export default defineFunction({
      input: object({ tag: string(), uncaught: boolean() }),
      async handler({ input, data, log }) {
        const first = await data.table('notes').create({ body: input.tag })
        log.info('first data call done ' + input.tag)
        const call = async () => {
          try {
            return { rows: await data.table('notes').list({ where: { body: input.tag } }) }
          } catch (error) {
            if (input.uncaught) throw error
            return { failed: { code: error.code, status: error.status, name: error.name } }
          }
        }
        for (let attempt = 1; attempt <= 1500; attempt++) {
          await new Promise((resolve) => setTimeout(resolve, 20))
          const seen = await call()
          if (seen.failed) return { first: first.body, failed: seen.failed }
          // The test adds a second row once it has moved the clock: the next call comes after the move.
          if (seen.rows.length >= 2) {
            const next = await call()
            return { first: first.body, failed: next.failed ?? null, rows: next.rows?.length ?? null }
          }
        }
        return { first: first.body, failed: null, gaveUp: true }
      },
    })`,
}

const SQL = `create table notes (id serial primary key, owner_id uuid not null default auth.uid(), body text not null);
alter table notes enable row level security;
create policy notes_own on notes for all using (owner_id = auth.uid()) with check (owner_id = auth.uid());`

describe('the data authorization window', () => {
  const identity: DataIdentity = { role: 'user', claims: {}, canWrite: true, expiresAt: Date.parse('2026-11-21T12:01:00Z') }

  test('holds until the instant it ends, then every check fails AUTH_EXPIRED (401)', () => {
    assert.equal(CUSTOM_DOMAIN_DATA_MS, 60_000)
    checkDataAuthorization(identity, new Date('2026-11-21T12:00:59.999Z'))
    for (const now of ['2026-11-21T12:01:00Z', '2026-11-21T13:00:00Z']) {
      assert.throws(() => checkDataAuthorization(identity, new Date(now)), (error: unknown) =>
        error instanceof ServiceError && error.code === 'AUTH_EXPIRED' && error.status === 401)
    }
  })

  test('an identity without an end never expires', () => {
    checkDataAuthorization({ role: 'system', claims: {}, canWrite: true }, new Date('2100-01-01T00:00:00Z'))
  })
})

describe(`Functions invoked with a custom-domain session (${backend})`, () => {
  let h: Harness
  let ownerId: string
  let viaDomain: CookieClient
  let viaOwnOrigin: CookieClient

  before(async () => {
    h = await startHarness()
    const admin = await createPlatformAdmin(h)
    const owner = await h.createOwner('owner@acme.test')
    ownerId = owner.userId
    assert.equal((await ownerApi(h, owner.token, 'POST', '/v1/apps', { slug: SLUG, visibility: 'private' })).status, 201)
    const deployed = await h.request(`/v1/apps/${SLUG}/deployments`, {
      token: owner.token,
      json: bundle({ 'service.yaml': manifest(SLUG, FUNCTIONS, 'private'), 'public/index.html': 'desk', 'database/migrations/0001_notes.sql': SQL, ...FILES }),
    })
    assert.equal(deployed.status, 201, await deployed.text())
    assert.equal((await ownerApi(h, admin, 'PUT', `/v1/apps/${SLUG}/domains/${DOMAIN}`)).status, 201)
    viaDomain = new CookieClient(h)
    await signInOnDomain(viaDomain, `${customOrigin(DOMAIN)}/`, 'owner@acme.test')
    viaOwnOrigin = new CookieClient(h)
    await signInTo(viaOwnOrigin, SLUG, 'owner@acme.test')
  })
  after(async () => {
    await h.close()
  })

  /**
   * Sends `request` (the Function `patient` with `tag`), waits until its first data call is
   * done, moves the clock by `advanceMs`, then adds the row that tells the Function to make
   * one more data call; answers the HTTP status and body.
   */
  async function acrossTheWindow(tag: string, advanceMs: number, request: () => Promise<Response>) {
    const answer = request()
    await eventually(async () => (await h.t.db.query('select 1 from platform.function_logs where message = $1', [`first data call done ${tag}`])).length > 0,
      'the Function made its first data call', 20_000)
    h.clock.advance(advanceMs)
    const [namespace] = await h.t.db.query<{ schema_name: string }>(
      `select n.schema_name from platform.namespaces n join platform.apps a on a.id = n.app_id where a.slug = $1 and n.environment = 'production'`, [SLUG])
    await h.t.db.query(`insert into "${namespace!.schema_name}".notes (owner_id, body) values ($1, $2)`, [ownerId, tag])
    const res = await answer
    return { status: res.status, body: (await res.json()) as any }
  }

  const browserCall = (b: CookieClient, origin: string, path: string, input: object, sdk = true) => () => b.fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json', origin, ...(sdk ? { 'x-service-sdk': '1' } : {}) },
    body: JSON.stringify(input),
  })
  const EXPIRED = { code: 'AUTH_EXPIRED', status: 401, name: 'ServiceError' }

  test('a browser call: the first data call succeeds; after 60 seconds a data call fails AUTH_EXPIRED and is not refreshed', TEST, async () => {
    const result = await acrossTheWindow('call-1', 60_001,
      browserCall(viaDomain, customOrigin(DOMAIN), '/_service/functions/patient', { tag: 'call-1', uncaught: false }))
    assert.equal(result.status, 200, JSON.stringify(result.body))
    assert.equal(result.body.first, 'call-1', 'the first data call wrote its row')
    assert.deepEqual(result.body.failed, EXPIRED)
  })

  test('a data call the Function does not catch fails the invocation with 401 AUTH_EXPIRED', TEST, async () => {
    const result = await acrossTheWindow('call-2', 61_000,
      browserCall(viaDomain, customOrigin(DOMAIN), '/_service/functions/patient', { tag: 'call-2', uncaught: true }))
    assert.equal(result.status, 401, JSON.stringify(result.body))
    assert.equal(result.body.error.code, 'AUTH_EXPIRED')
  })

  test('a Function route on the custom domain is held to the same window', TEST, async () => {
    const result = await acrossTheWindow('route-1', 61_000,
      browserCall(viaDomain, customOrigin(DOMAIN), '/api/patient', { tag: 'route-1', uncaught: false }, false))
    assert.equal(result.status, 200, JSON.stringify(result.body))
    assert.deepEqual(result.body.failed, EXPIRED)
  })

  test('a bearer token minted from the custom-domain session is held to the same window, on the app\'s own origin too', TEST, async () => {
    const minted = await viaDomain.fetch(`${customOrigin(DOMAIN)}/_service/api/session`, { method: 'POST', headers: { accept: 'application/json' } })
    assert.equal(minted.status, 200)
    const { accessToken } = (await minted.json()) as { accessToken: string }
    const result = await acrossTheWindow('bearer-1', 61_000, () => h.platform.fetch(new Request(`${appUrl(SLUG)}/_service/functions/patient`, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ tag: 'bearer-1', uncaught: false }),
    })))
    assert.deepEqual(result.body.failed, EXPIRED)
  })

  test('the same Function through the app\'s own origin keeps its data authorization past 60 seconds', TEST, async () => {
    const result = await acrossTheWindow('own-1', 61_000,
      browserCall(viaOwnOrigin, appUrl(SLUG), '/_service/functions/patient', { tag: 'own-1', uncaught: false }))
    assert.equal(result.status, 200, JSON.stringify(result.body))
    assert.deepEqual(result.body, { first: 'own-1', failed: null, rows: 2 })
  })

  test('a new invocation from the custom domain gets a fresh window', TEST, async () => {
    const result = await acrossTheWindow('fresh-1', 59_000,
      browserCall(viaDomain, customOrigin(DOMAIN), '/_service/functions/patient', { tag: 'fresh-1', uncaught: false }))
    assert.deepEqual(result.body, { first: 'fresh-1', failed: null, rows: 2 }, 'within 60 seconds of its start, data works')
  })
})
