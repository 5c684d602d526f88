/**
 * Serving an app on a custom domain (spec 5.5): a mapped domain is the app's origin exactly
 * as `<slug>.<base domain>` is (frontend, data API, admission, same-origin checks); an
 * unmapped one is 404 HOST_NOT_FOUND; a mapping change bites on the next request in this
 * process and within the change notice's delay in another (on PostgreSQL). Sign-in on a
 * private app's custom domain goes through the central sign-in and back to the domain, whose
 * app session is marked as brokered there; /authorize never returns to another app's domain.
 *
 * As in app-edge-cache.test.ts, the process making changes hears no change notices, so what
 * makes its next request see a change is the synchronous drop after the commit.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb } from '../../test/test-db.ts'
import type { Db } from '../db/db.ts'
import { openPostgres } from '../db/postgres.ts'
import { isPing } from '../db/notified-cache.ts'
import { ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { CookieClient } from '../../test/cookie-client.ts'
import { AUTH, appUrl, approve, claim, deployPage, requestLink, signInTo } from '../../test/sign-in-flow.ts'
import { deployDataApp } from '../../test/data-fixture.ts'
import { eventually } from '../../test/eventually.ts'
import { browserSecret } from '../identity/index.ts'
import { createPlatformAdmin, customOrigin as custom, handoffTarget, signInOnDomain } from '../../test/custom-domain-flow.ts'

/** The same database, but a LISTEN on it never hears a change notice (pings still come back). */
function deaf(db: Db): Db {
  return { ...db, listen: (channel, onPayload, options) => db.listen(channel, (payload) => isPing(payload) && onPayload(payload), options) }
}

describe(`custom domains: serving and sign-in (${backend})`, () => {
  let h: Harness
  /** On PostgreSQL, a second platform over the same database, as another process. */
  let other: Harness | null = null
  let admin: string
  let owner: string
  const get = (on: Harness, url: string, accept = 'application/json') => on.platform.fetch(new Request(url, { headers: { accept } }))

  before(async () => {
    const t = await createTestDb()
    h = await startHarness({ ...t, db: deaf(t.db) })
    await h.platform.ready()
    admin = await createPlatformAdmin(h)
    owner = (await h.createOwner('owner@acme.test')).token
    await deployDataApp(h, owner, {
      slug: 'lib',
      sql: `create table notes (id int primary key, body text not null);
        alter table notes enable row level security;
        create policy notes_read on notes for select using (true);
        insert into notes values (1, 'hello from lib');`,
    })
    await deployPage(h, owner, 'news', 'public', 'news page')
    await deployPage(h, owner, 'shop', 'private', 'shop page')
    for (const [slug, domain] of [['lib', 'lib.example.test'], ['shop', 'shop.example.test'], ['news', 'news.example.test']]) {
      assert.equal((await ownerApi(h, admin, 'PUT', `/v1/apps/${slug}/domains/${domain}`)).status, 201)
    }
    if (h.t.url) {
      const pool = openPostgres({ url: h.t.url, maxConnections: 2 })
      other = await startHarness({ db: pool, cleanup: () => pool.close() }, { masterKey: h.masterKey })
      await other.platform.ready()
    }
  })
  after(async () => {
    await other?.close()
    await h.close()
  })

  test('a mapped domain serves the app\'s frontend and data API as its own origin does', async () => {
    const page = await get(h, `${custom('lib.example.test')}/`, 'text/html')
    assert.equal(page.status, 200)
    assert.equal(await page.text(), '<h1>lib</h1>')
    const rows = await get(h, `${custom('LIB.example.test')}/rest/v1/notes?select=id,body`)
    assert.equal(rows.status, 200)
    assert.deepEqual(await rows.json(), [{ id: 1, body: 'hello from lib' }])
  })

  test('an unmapped domain, or a mapped one on another port, is 404 HOST_NOT_FOUND', async () => {
    for (const url of [`${custom('nobody.example.test')}/`, 'http://lib.example.test:9999/', `${custom('nobody.example.test')}/rest/v1/notes`]) {
      const res = await get(h, url)
      assert.equal(res.status, 404, url)
      assert.deepEqual(await res.json(), { error: { code: 'HOST_NOT_FOUND', message: 'this platform does not serve that host' } }, url)
    }
  })

  test('unmapping bites on the next request here and within the notice delay elsewhere; remapped, the domain serves its new app', async () => {
    await ownerApi(h, admin, 'PUT', '/v1/apps/news/domains/moving.example.test')
    for (const on of [h, ...(other ? [other] : [])]) assert.equal((await get(on, `${custom('moving.example.test')}/`, 'text/html')).status, 200)
    assert.equal((await ownerApi(h, admin, 'DELETE', '/v1/apps/news/domains/moving.example.test')).status, 204)
    assert.equal((await get(h, `${custom('moving.example.test')}/`)).status, 404, 'this process')
    if (other) await eventually(async () => (await get(other!, `${custom('moving.example.test')}/`)).status === 404, 'the other process refuses')
    await ownerApi(h, admin, 'PUT', '/v1/apps/lib/domains/moving.example.test')
    assert.equal(await (await get(h, `${custom('moving.example.test')}/`, 'text/html')).text(), '<h1>lib</h1>')
    if (other) {
      await eventually(async () => (await (await get(other!, `${custom('moving.example.test')}/`, 'text/html')).text()) === '<h1>lib</h1>',
        'the other process serves the new app')
    }
  })

  test('a private app on its custom domain: sign-in goes through the central sign-in and back, with a host-only session there', async () => {
    const b = new CookieClient(h)
    const start = await b.visit(`${custom('shop.example.test')}/cart?x=1`)
    const authorize = new URL(start.hops[1]!)
    assert.equal(authorize.origin + authorize.pathname, `${AUTH}/authorize`)
    assert.equal(authorize.searchParams.get('app'), 'shop')
    assert.equal(authorize.searchParams.get('return_to'), `${custom('shop.example.test')}/cart?x=1`)
    assert.ok(b.cookie('shop.example.test:8787', 'svc_auth_state'), 'the sign-in state lives on the custom domain')
    const signInPage = start.hops.at(-1)!
    assert.ok(signInPage.startsWith(`${AUTH}/sign-in`), signInPage)

    const { requestId, link } = await requestLink(b, 'owner@acme.test', new URL(signInPage).searchParams.get('continue')!)
    assert.equal((await approve(b, link)).status, 200)
    const claimed = await claim(b, requestId)
    assert.equal(claimed.status, 303)
    // /authorize ends the chain after a form post with a page that goes on by itself (Refresh).
    const handoff = await b.visit(new URL(claimed.headers.get('location')!, AUTH).toString())
    assert.equal(handoff.response.status, 200)
    const callback = handoffTarget(handoff.response)
    assert.ok(callback.startsWith(`${custom('shop.example.test')}/_service/auth/callback?code=`), callback)
    assert.ok((await handoff.response.text()).includes(`href="${callback.replace(/&/g, '&amp;')}"`), 'and links to it')

    const landed = await b.visit(callback)
    assert.deepEqual(landed.hops.slice(1), [`${custom('shop.example.test')}/cart?x=1`])
    assert.equal(landed.response.status, 200)
    assert.equal(await landed.response.text(), 'shop page')
    assert.ok(b.cookie('shop.example.test:8787', 'svc_app_session'), 'the app session cookie is on the custom domain')
    assert.equal(b.cookie('shop.localhost:8787', 'svc_app_session'), undefined, 'and not on the app\'s own origin')

    const me = await b.fetch(`${custom('shop.example.test')}/_service/auth/user`, { headers: { accept: 'application/json' } })
    assert.equal(((await me.json()) as { user: { email: string } }).user.email, 'owner@acme.test')
    const sessions = await h.t.db.query<{ custom_domain: string | null }>(
      `select custom_domain from platform.app_sessions where app_id = (select id from platform.apps where slug = 'shop') and revoked_at is null`)
    assert.deepEqual([...sessions], [{ custom_domain: 'shop.example.test' }])

    // Same-origin checks take the custom domain as the app's origin.
    const session = (origin: string) => b.fetch(`${custom('shop.example.test')}/_service/api/session`, { method: 'POST', headers: { accept: 'application/json', origin } })
    assert.equal((await session(custom('shop.example.test'))).status, 200)
    assert.equal((await session(appUrl('shop'))).status, 403)
  })

  test('/_service/auth/sign-in on a custom domain of a public app returns to that domain', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'news', 'owner@acme.test') // a central session, and a session on news.localhost
    const { hops, response } = await b.visit(`${custom('news.example.test')}/_service/auth/sign-in?return_to=${encodeURIComponent('/latest')}`)
    assert.equal(response.status, 200)
    assert.ok(hops[1]!.startsWith(`${AUTH}/authorize?app=news&return_to=${encodeURIComponent(`${custom('news.example.test')}/latest`)}&state=`), hops[1])
    const callback = handoffTarget(response)
    const landed = await b.visit(callback)
    assert.deepEqual(landed.hops.slice(1), [`${custom('news.example.test')}/latest`])
    assert.ok(b.cookie('news.example.test:8787', 'svc_app_session'))
  })

  test('attack: /authorize never returns to another app\'s custom domain, an unmapped one or another port; it ends on the app\'s own origin', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'shop', 'owner@acme.test') // b now holds a central session
    for (const returnTo of [`${custom('news.example.test')}/steal`, `${custom('evil.example.test')}/x`, 'http://shop.example.test:9999/x', 'https://shop.example.test/x']) {
      const state = browserSecret().value
      const res = await b.fetch(`${AUTH}/authorize?app=shop&return_to=${encodeURIComponent(returnTo)}&state=${state}`)
      assert.equal(res.status, 302, returnTo)
      const location = new URL(res.headers.get('location')!)
      assert.equal(location.origin + location.pathname, `${appUrl('shop')}/_service/auth/callback`, returnTo)
      // The codes issued here are the only unused ones: each returns to the app's own front page.
      const codes = await h.t.db.query<{ return_to: string }>(
        `select return_to from platform.authorization_codes where used_at is null and app_id = (select id from platform.apps where slug = 'shop')`)
      assert.ok(codes.length > 0 && codes.every((code) => code.return_to === `${appUrl('shop')}/`), `${returnTo}: ${JSON.stringify(codes)}`)
      const stateless = await b.fetch(`${AUTH}/authorize?app=shop&return_to=${encodeURIComponent(returnTo)}`)
      assert.equal(stateless.headers.get('location'), `${appUrl('shop')}/_service/auth/sign-in?return_to=${encodeURIComponent(`${appUrl('shop')}/`)}`)
    }
  })

  test('attack: a session brokered on one app\'s custom domain is not a session on another app\'s domain', async () => {
    const b = new CookieClient(h)
    await signInOnDomain(b, `${custom('shop.example.test')}/`, 'owner@acme.test')
    const cookie = b.cookie('shop.example.test:8787', 'svc_app_session')!
    const res = await h.platform.fetch(new Request(`${custom('news.example.test')}/_service/auth/user`, {
      headers: { accept: 'application/json', cookie: `svc_app_session=${cookie}` },
    }))
    assert.deepEqual(await res.json(), { user: null })
  })
})
