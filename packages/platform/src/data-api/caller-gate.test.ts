/**
 * A bearer caller of `/rest/v1` (an app access token, or a signed-in person's access token)
 * is checked inside the data statement (migration 0027, `platform_gate.app_token_caller` and `app_session_caller`): one
 * statement per request, and every guarantee of a separate check kept. A revoked token or a
 * signed-out session is refused on its next request; a refused caller gets its refusal
 * whatever else is wrong with the request, and none of the app's SQL runs for it; app SQL
 * cannot use the check to learn about another app's callers.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb } from '../../test/test-db.ts'
import type { Db } from '../db/db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { createAppToken } from '../identity/index.ts'
import { appUrl, deployDataApp, expectJson, rest, revealAppToken, signIn, signInBrowser, type SignedIn } from '../../test/data-fixture.ts'

const SQL = `
create table notes (id serial primary key, body text not null);
alter table notes enable row level security;
create policy notes_all on notes for all using (auth.uid() is not null) with check (auth.uid() is not null);
insert into notes (body) values ('first');
create function whoami() returns json language sql stable
  as $$ select json_build_object('uid', auth.uid(), 'email', auth.jwt() ->> 'email') $$;
create function probe_gate(app uuid, sid uuid, sub uuid) returns text language plpgsql stable
  as $$ begin return (platform_gate.app_session_caller(app, sid, sub, now(), false, null)).claims; end $$;
create function probe_platform(app uuid, sid uuid, sub uuid) returns text language plpgsql stable
  as $$ begin return (platform.app_session_caller(app, sid, sub, now(), false, null, null)).claims; end $$;
`

/** The platform's Db, counting the platform-side reads a request makes (token and session reads use `read`). */
function counting(db: Db): { db: Db; reads: () => number } {
  let reads = 0
  return {
    db: { ...db, read: (sql, params) => { reads++; return db.read(sql, params) } },
    reads: () => reads,
  }
}

describe(`the data API checks a bearer caller inside its data statement (${backend})`, () => {
  let h: Harness
  let reads: () => number
  let owner: { token: string; userId: string }
  let ownerBrowser: SignedIn
  let alphaToken: string
  let betaToken: string
  let ann: SignedIn

  before(async () => {
    const t = await createTestDb()
    const counted = counting(t.db)
    reads = counted.reads
    h = await startHarness({ ...t, db: counted.db })
    owner = await h.createOwner('owner@acme.test')
    await deployDataApp(h, owner.token, { slug: 'alpha', sql: SQL, visibility: 'private' })
    await deployDataApp(h, owner.token, { slug: 'beta', sql: SQL, visibility: 'private' })
    ownerBrowser = await signIn(h, 'alpha', 'owner@acme.test')
    alphaToken = await revealAppToken(h, { ownerToken: owner.token, ownerBrowser: ownerBrowser.browser, slug: 'alpha' })
    const betaBrowser = await signInBrowser(h, 'beta', 'owner@acme.test')
    betaToken = await revealAppToken(h, { ownerToken: owner.token, ownerBrowser: betaBrowser, slug: 'beta' })
    await signInBrowser(h, 'alpha', 'ann@example.test')
    assert.equal((await h.request('/v1/apps/alpha/grants', { token: owner.token, json: { email: 'ann@example.test' } })).status, 201)
    ann = await signIn(h, 'alpha', 'ann@example.test')
  })
  after(() => h.close())

  for (const who of ['app token', 'user JWT'] as const) {
    test(`a read with ${who === 'app token' ? 'an app token' : 'a user JWT'} is one statement: no platform read before the data statement`, async () => {
      const token = who === 'app token' ? alphaToken : ann.accessToken
      await expectJson(await rest(h, 'alpha', '/notes?select=body', { token }), 200) // warm caches (app, schema, namespace)
      const statsBefore = h.platform.appSql.stats()
      const readsBefore = reads()
      const body = await expectJson(await rest(h, 'alpha', '/rpc/whoami', { token }), 200)
      assert.deepEqual(body, who === 'app token'
        ? { uid: owner.userId, email: 'owner@acme.test' }
        : { uid: ann.userId, email: 'ann@example.test' })
      const stats = h.platform.appSql.stats()
      assert.equal(reads() - readsBefore, 0, 'no token or session read on the platform')
      assert.equal((stats.login - statsBefore.login) + (stats.wrapper - statsBefore.wrapper), 1, 'one statement in all')
    })
  }

  test('a signed-out session\'s access token is refused on its next data request', async () => {
    const bob = await signIn(h, 'alpha', 'owner@acme.test')
    assert.equal((await rest(h, 'alpha', '/notes', { token: bob.accessToken })).status, 200)
    const out = await bob.browser.fetch(`${appUrl('alpha')}/_service/auth/sign-out`, { method: 'POST', headers: { 'x-service-sdk': '1' } })
    assert.equal(out.status, 200)
    const refused = await expectJson(await rest(h, 'alpha', '/notes', { token: bob.accessToken }), 401)
    assert.equal(refused.error.code, 'AUTH_REQUIRED')
  })

  test('a person whose grant was revoked gets 403 ACCESS_DENIED on the next request, even for a table that does not exist', async () => {
    await signInBrowser(h, 'alpha', 'cy@example.test')
    assert.equal((await h.request('/v1/apps/alpha/grants', { token: owner.token, json: { email: 'cy@example.test' } })).status, 201)
    const cy = await signIn(h, 'alpha', 'cy@example.test')
    assert.equal((await rest(h, 'alpha', '/notes', { token: cy.accessToken })).status, 200)
    assert.equal((await h.request(`/v1/apps/alpha/grants/${cy.userId}`, { token: owner.token, method: 'DELETE' })).status, 204)
    for (const path of ['/notes', '/no_such_table', '/notes?id=zz.1']) {
      assert.equal((await expectJson(await rest(h, 'alpha', path, { token: cy.accessToken }), 403)).error.code, 'ACCESS_DENIED', path)
    }
  })

  test('a revoked or unknown app token gets 401 AUTH_REQUIRED, never an answer about the schema or the query', async () => {
    const { token, secret: revoked } = await createAppToken(h.t.db, h.clock, { appId: await appId('alpha'), name: 'short-lived', createdBy: owner.userId })
    assert.equal((await rest(h, 'alpha', '/notes', { token: revoked })).status, 200)
    assert.equal((await h.request(`/v1/apps/alpha/access-tokens/${token.id}`, { token: owner.token, method: 'DELETE' })).status, 204)
    const unknown = `svc_app_${'A'.repeat(43)}`
    for (const bearerToken of [revoked, unknown, betaToken]) {
      for (const path of ['/notes', '/no_such_table', '/notes?id=zz.1', '/rpc/no_such_function']) {
        const body = await expectJson(await rest(h, 'alpha', path, { token: bearerToken }), 401)
        assert.equal(body.error.code, 'AUTH_REQUIRED', path)
      }
    }
  })

  test('a refused caller\'s write runs none of the app\'s SQL (the sequence does not move)', async () => {
    const unknown = `svc_app_${'B'.repeat(43)}`
    for (let i = 0; i < 3; i++) {
      assert.equal((await rest(h, 'alpha', '/notes', { token: unknown, json: { body: 'intruder' } })).status, 401)
    }
    const written = await expectJson(await rest(h, 'alpha', '/notes?select=id,body', {
      token: alphaToken, json: { body: 'second' }, headers: { prefer: 'return=representation' },
    }), 201)
    assert.deepEqual(written, [{ id: 2, body: 'second' }])
  })

  test('app SQL cannot ask the session check about another app\'s session, nor call the platform\'s own check', async () => {
    const betaPerson = await signIn(h, 'beta', 'owner@acme.test')
    const claims = JSON.parse(Buffer.from(betaPerson.accessToken.split('.')[1]!, 'base64url').toString()) as { sid: string; sub: string }
    assert.equal((await rest(h, 'beta', '/notes', { token: betaPerson.accessToken })).status, 200, 'the session is on')
    const asked = { app: await appId('beta'), sid: claims.sid, sub: claims.sub }
    const viaGate = await rest(h, 'alpha', '/rpc/probe_gate', { token: alphaToken, json: asked })
    const gateText = await viaGate.text()
    assert.notEqual(viaGate.status, 200, gateText)
    assert.doesNotMatch(gateText, /owner@acme/)
    const viaPlatform = await rest(h, 'alpha', '/rpc/probe_platform', { token: alphaToken, json: asked })
    const platformText = await viaPlatform.text()
    assert.equal(viaPlatform.status, 403, platformText)
    assert.match(platformText, /42501/)
    assert.doesNotMatch(platformText, /owner@acme/)
  })

  async function appId(slug: string): Promise<string> {
    const [row] = await h.t.db.query<{ id: string }>('select id from platform.apps where slug = $1', [slug])
    return row!.id
  }
})
