/**
 * A caller of `/rest/v1` (an app access token, a signed-in person's access token, or a
 * browser's app session cookie) is checked inside the data statement (migrations 0027 and
 * 0033, `platform_gate.app_token_caller`, `app_session_caller` and `app_cookie_caller`): one
 * statement per request, and every guarantee of a separate check kept. A revoked token or a
 * signed-out or expired session is refused on its next request; a refused caller gets its
 * refusal whatever else is wrong with the request, and none of the app's SQL runs for it;
 * app SQL cannot use the check to learn about another app's callers. A cookie whose access
 * is in its final minute is refreshed first, as on every other path, and a cookie that names
 * no live session reads a public app as anonymous, as before.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb } from '../../test/test-db.ts'
import type { Db } from '../db/db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { createAppToken } from '../identity/index.ts'
import { appUrl, deployDataApp, expectJson, rest, revealAppToken, signIn, signInBrowser, type SignedIn } from '../../test/data-fixture.ts'
import type { CookieClient } from '../../test/cookie-client.ts'

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

/**
 * The cookies a browser holds for an app's origin: the Cookie header to replay after the
 * browser has moved on, and the SHA-256 of its app session cookie (`app_sessions.secret_hash`).
 */
function cookiesOf(browser: CookieClient, slug: string): { header: string; hash: Buffer } {
  const cookies = [...browser.cookies(new URL(appUrl(slug)).host)]
  const session = cookies.find(([name]) => name.endsWith('svc_app_session'))
  assert.ok(session, 'the browser holds an app session cookie')
  return {
    header: cookies.map(([name, c]) => `${name}=${c.value}`).join('; '),
    hash: createHash('sha256').update(session[1].value).digest(),
  }
}

describe(`the data API checks a caller inside its data statement (${backend})`, () => {
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
    await deployDataApp(h, owner.token, { slug: 'gamma', sql: SQL, visibility: 'public' })
  })
  after(() => h.close())

  /** `{app_url}/rest/v1{path}` with a replayed Cookie header, as a browser's SDK sends it. */
  const byCookie = (slug: string, path: string, cookie: string, init: { json?: unknown } = {}) =>
    h.platform.fetch(new Request(`${appUrl(slug)}/rest/v1${path}`, {
      method: init.json === undefined ? 'GET' : 'POST',
      headers: { accept: 'application/json', cookie, ...(init.json === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    }))

  for (const who of ['app token', 'user JWT', 'session cookie'] as const) {
    test(`a read with ${who === 'app token' ? 'an app token' : `a ${who}`} is one statement: no platform read before the data statement`, async () => {
      const send = (path: string) => who === 'session cookie'
        ? ann.browser.fetch(`${appUrl('alpha')}/rest/v1${path}`, { headers: { accept: 'application/json' } })
        : rest(h, 'alpha', path, { token: who === 'app token' ? alphaToken : ann.accessToken })
      await expectJson(await send('/notes?select=body'), 200) // warm caches (app, schema, namespace)
      const statsBefore = h.platform.appSql.stats()
      const readsBefore = reads()
      const body = await expectJson(await send('/rpc/whoami'), 200)
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

  test('a session cookie is refused on its next data request once its session is signed out, even for a table that does not exist', async () => {
    const bob = await signInBrowser(h, 'alpha', 'owner@acme.test')
    const { header } = cookiesOf(bob, 'alpha')
    assert.equal((await byCookie('alpha', '/notes', header)).status, 200)
    const out = await bob.fetch(`${appUrl('alpha')}/_service/auth/sign-out`, { method: 'POST', headers: { 'x-service-sdk': '1' } })
    assert.equal(out.status, 200)
    for (const path of ['/notes', '/no_such_table', '/notes?id=zz.1']) {
      assert.equal((await expectJson(await byCookie('alpha', path, header), 401)).error.code, 'AUTH_REQUIRED', path)
    }
    const write = await expectJson(await byCookie('alpha', '/notes', header, { json: { body: 'after sign-out' } }), 401)
    assert.equal(write.error.code, 'AUTH_REQUIRED')
  })

  test('a session cookie of a person without access to a private app gets 403 ACCESS_DENIED from the data statement\'s check', async () => {
    const eve = await signInBrowser(h, 'alpha', 'eve@example.test')
    const { header } = cookiesOf(eve, 'alpha')
    for (const path of ['/notes', '/no_such_table']) {
      assert.equal((await expectJson(await byCookie('alpha', path, header), 403)).error.code, 'ACCESS_DENIED', path)
    }
  })

  test('a session cookie whose access is in its final minute is refreshed first, then the request runs as its person', async () => {
    const browser = await signInBrowser(h, 'alpha', 'ann@example.test')
    const { header, hash } = cookiesOf(browser, 'alpha')
    const soon = new Date(h.clock.now().getTime() + 30_000)
    await h.t.db.query('update platform.app_sessions set access_expires_at = $2 where secret_hash = $1', [hash, soon])
    const body = await expectJson(await byCookie('alpha', '/rpc/whoami', header), 200)
    assert.deepEqual(body, { uid: ann.userId, email: 'ann@example.test' })
    const [row] = await h.t.db.query<{ access_expires_at: Date }>(
      'select access_expires_at from platform.app_sessions where secret_hash = $1', [hash])
    assert.ok(row!.access_expires_at.getTime() > soon.getTime(), 'the access was refreshed')
    const statsBefore = h.platform.appSql.stats()
    const readsBefore = reads()
    assert.equal((await byCookie('alpha', '/notes', header)).status, 200)
    const stats = h.platform.appSql.stats()
    assert.equal(reads() - readsBefore, 0, 'refreshed: the next request is one statement again')
    assert.equal((stats.login - statsBefore.login) + (stats.wrapper - statsBefore.wrapper), 1)
  })

  test('a cookie that names no live session reads a public app as anonymous (and is cleared), cannot write, and gets 401 from a private app', async () => {
    const stale = 'svc_app_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
    const browser = await signInBrowser(h, 'gamma', 'ann@example.test')
    const { header: live } = cookiesOf(browser, 'gamma')
    for (const cookie of [stale, live.replace(/=[^;]*/g, '=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')]) {
      const res = await byCookie('gamma', '/rpc/whoami', cookie)
      assert.deepEqual(await expectJson(res, 200), { uid: null, email: null }, cookie)
      for (const table of ['/notes', '/no_such_table']) {
        const write = await expectJson(await byCookie('gamma', table, cookie, { json: { body: 'anonymous' } }), 401)
        assert.equal(write.code, '42501', table)
      }
      assert.equal((await expectJson(await byCookie('alpha', '/notes', cookie), 401)).error.code, 'AUTH_REQUIRED')
    }
    const cleared = await byCookie('gamma', '/notes', live.replace(/=[^;]*/g, '=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'))
    assert.equal(cleared.status, 200)
    assert.ok(cleared.headers.getSetCookie().some((c) => /max-age=0/i.test(c)), 'the stale cookie is cleared')
    assert.deepEqual(await expectJson(await byCookie('gamma', '/rpc/whoami', live), 200), { uid: ann.userId, email: 'ann@example.test' })
  })

  test('a session cookie is refused on its next data request once its session has expired', async () => {
    const browser = await signInBrowser(h, 'alpha', 'owner@acme.test')
    const { header, hash } = cookiesOf(browser, 'alpha')
    // This session's 30 days end in two minutes (and its access with them: no refresh before).
    const end = new Date(h.clock.now().getTime() + 120_000)
    await h.t.db.query('update platform.app_sessions set expires_at = $2, access_expires_at = $2 where secret_hash = $1', [hash, end])
    assert.deepEqual(await expectJson(await byCookie('alpha', '/rpc/whoami', header), 200), { uid: owner.userId, email: 'owner@acme.test' })
    h.clock.advance(121_000)
    assert.equal((await expectJson(await byCookie('alpha', '/rpc/whoami', header), 401)).error.code, 'AUTH_REQUIRED')
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
