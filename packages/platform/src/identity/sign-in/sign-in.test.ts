import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH, appUrl, approve, claim, deployPage, requestLink, signInTo } from '../../../test/sign-in-flow.ts'
import { COOKIES } from '../pages/cookies.ts'

describe(`email-link sign-in and private-app admission (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
    await deployPage(h, owner.token, 'vault', 'private', 'vault page')
    await deployPage(h, owner.token, 'other', 'private', 'other page')
    await deployPage(h, owner.token, 'open', 'public', 'open page')
  })
  after(() => h.close())

  test('an unauthenticated browser goes to sign-in and comes straight back to the original URL', async () => {
    const b = new CookieClient(h)
    const first = await b.visit(`${appUrl('vault')}/reports/q3?x=1`)
    assert.deepEqual(first.hops.map((u) => new URL(u).pathname), ['/reports/q3', '/authorize', '/sign-in'])
    const { response, hops } = await signInTo(b, 'vault', 'owner@acme.test', '/reports/q3?x=1')
    assert.equal(response.status, 200)
    assert.equal(await response.text(), 'vault page')
    assert.equal(hops.at(-1), `${appUrl('vault')}/reports/q3?x=1`)
  })

  test('an API call without identity gets 401 AUTH_REQUIRED, not a redirect', async () => {
    const res = await h.platform.fetch(new Request(`${appUrl('vault')}/data.json`, { headers: { accept: 'application/json' } }))
    assert.equal(res.status, 401)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'AUTH_REQUIRED')
  })

  test('the window that approves gets no session; the initiating window does', async () => {
    const initiator = new CookieClient(h)
    const phone = new CookieClient(h)
    const { requestId, link } = await requestLink(initiator, 'owner@acme.test')
    const approved = await approve(phone, link)
    assert.equal(approved.status, 200)
    assert.match(await approved.text(), /You may close this window/)
    assert.equal(phone.cookie('auth.localhost:8787', COOKIES.session.name), undefined)
    assert.equal((await phone.fetch(`${AUTH}/`)).status, 302)
    assert.equal((await claim(initiator, requestId)).status, 303)
    assert.ok(initiator.cookie('auth.localhost:8787', COOKIES.session.name))
    assert.equal((await initiator.fetch(`${AUTH}/`)).status, 200)
  })

  test('another browser cannot claim the request, even with its id', async () => {
    const initiator = new CookieClient(h)
    const attacker = new CookieClient(h)
    const { requestId, link } = await requestLink(initiator, 'owner@acme.test')
    await approve(initiator, link)
    const status = await attacker.fetch(`${AUTH}/sign-in/claim/status?r=${requestId}`)
    assert.equal(((await status.json()) as { status: string }).status, 'expired')
    assert.equal((await claim(attacker, requestId)).status, 409)
    assert.equal(attacker.cookie('auth.localhost:8787', COOKIES.session.name), undefined)
    assert.equal((await claim(initiator, requestId)).status, 303)
  })

  test('a prefetched link approves nothing', async () => {
    const initiator = new CookieClient(h)
    const { requestId, link } = await requestLink(initiator, 'owner@acme.test')
    const scanner = new CookieClient(h)
    assert.equal((await scanner.fetch(link)).status, 200)
    assert.equal((await scanner.fetch(link, { method: 'HEAD' })).status, 200)
    const status = await initiator.fetch(`${AUTH}/sign-in/claim/status?r=${requestId}`)
    assert.equal(((await status.json()) as { status: string }).status, 'pending')
  })

  test('a scanner that submits the review form without the preview cookie approves nothing', async () => {
    const initiator = new CookieClient(h)
    const { requestId, link } = await requestLink(initiator, 'owner@acme.test')
    const html = await (await new CookieClient(h).fetch(link)).text()
    const scanner = new CookieClient(h) // fetched the page in one client, submits from another
    const res = await scanner.post(`${AUTH}/confirm`, { r: field(html, 'r'), t: field(html, 't') })
    assert.equal(res.status, 403)
    const status = await initiator.fetch(`${AUTH}/sign-in/claim/status?r=${requestId}`)
    assert.equal(((await status.json()) as { status: string }).status, 'pending')
  })

  test('a confirmation posted from another origin is refused (CSRF)', async () => {
    const b = new CookieClient(h)
    const { requestId, link } = await requestLink(b, 'owner@acme.test')
    const html = await (await b.fetch(link)).text()
    const res = await b.post(`${AUTH}/confirm`, { r: field(html, 'r'), t: field(html, 't') }, 'http://evil.example')
    assert.equal(res.status, 403)
    const status = await b.fetch(`${AUTH}/sign-in/claim/status?r=${requestId}`)
    assert.equal(((await status.json()) as { status: string }).status, 'pending')
  })

  test('the sign-in form needs its CSRF token and the auth origin (no login CSRF)', async () => {
    const b = new CookieClient(h)
    const html = await (await b.fetch(`${AUTH}/sign-in`)).text()
    assert.equal((await b.post(`${AUTH}/sign-in`, { email: 'owner@acme.test', continue: '/' })).status, 403)
    assert.equal((await b.post(`${AUTH}/sign-in`, { csrf: field(html, 'csrf'), email: 'owner@acme.test' }, 'http://evil.example')).status, 403)
    assert.equal((await b.post(`${AUTH}/sign-in`, { csrf: 'forged', email: 'owner@acme.test' })).status, 403)
  })

  test('auth pages let browsers send a real Origin and let forms continue to app origins', async () => {
    const res = await new CookieClient(h).fetch(`${AUTH}/sign-in`)
    // no-referrer would make browsers send "Origin: null" on form posts, which is refused.
    assert.equal(res.headers.get('referrer-policy'), 'same-origin')
    assert.match(res.headers.get('content-security-policy')!, /form-action 'self' http:\/\/\*\.localhost:8787;/)
    const b = new CookieClient(h)
    const html = await (await b.fetch(`${AUTH}/sign-in`)).text()
    assert.equal((await b.post(`${AUTH}/sign-in`, { csrf: field(html, 'csrf'), email: 'owner@acme.test' }, 'null')).status, 403)
  })

  test('a link works once: a replay is refused', async () => {
    const b = new CookieClient(h)
    const { link } = await requestLink(b, 'owner@acme.test')
    assert.equal((await approve(b, link)).status, 200)
    assert.equal((await b.fetch(link)).status, 410)
    const r = new URL(link).searchParams
    assert.equal((await b.post(`${AUTH}/confirm`, { r: r.get('r')!, t: r.get('t')! })).status, 410)
  })

  test('a link expires after 15 minutes', async () => {
    const b = new CookieClient(h)
    const { requestId, link } = await requestLink(b, 'owner@acme.test')
    h.clock.advance(14 * 60 * 1000)
    const html = await (await b.fetch(link)).text()
    h.clock.advance(60 * 1000 + 1)
    const r = new URL(link).searchParams
    assert.equal((await b.post(`${AUTH}/confirm`, { r: r.get('r')!, t: field(html, 't') })).status, 410)
    assert.equal((await b.fetch(link)).status, 410)
    const status = await b.fetch(`${AUTH}/sign-in/claim/status?r=${requestId}`)
    assert.equal(((await status.json()) as { status: string }).status, 'expired')
  })

  test('a wrong link secret is not valid', async () => {
    const b = new CookieClient(h)
    const { link } = await requestLink(b, 'owner@acme.test')
    const forged = new URL(link)
    forged.searchParams.set('t', 'x'.repeat(43))
    assert.equal((await b.fetch(forged.toString())).status, 410)
  })

  /** Where a signed-in browser ends when a sign-in to vault names `returnTo`, hop by hop. */
  async function endOfSignIn(b: CookieClient, returnTo: string): Promise<string> {
    const { hops } = await b.visit(`${appUrl('vault')}/_service/auth/sign-in?return_to=${encodeURIComponent(returnTo)}`)
    return hops.at(-1)!
  }

  test('return targets are checked: no open redirect through authorize, the app callback or continue', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    const attacks = ['http://evil.example/steal', '//evil.example/', '/..//evil.example/', '/\\evil.example', '/%2e%2e//evil.example/',
      '/\t/evil.example', 'javascript:alert(1)', `${appUrl('other')}/`, '/./..//evil.example']
    for (const returnTo of attacks) {
      const end = await endOfSignIn(b, returnTo)
      assert.equal(new URL(end).origin, appUrl('vault'), returnTo)
      assert.equal(end, `${appUrl('vault')}/`, returnTo)
    }
    // A target on the app's own origin survives, normalised and absolute.
    assert.equal(await endOfSignIn(b, '/a/../b?x=1'), `${appUrl('vault')}/b?x=1`)
    // continue on the sign-in host: the same normalisation, to an absolute URL on that host.
    for (const next of ['//evil.example/x', 'http://evil.example/', '/\\evil.example', '/..//evil.example', '/%2e%2e//evil.example',
      'javascript:alert(1)']) {
      const res = await b.fetch(`${AUTH}/sign-in?continue=${encodeURIComponent(next)}`)
      assert.equal(res.status, 302, next)
      assert.equal(res.headers.get('location'), `${AUTH}/`, next)
    }
    const kept = await b.fetch(`${AUTH}/sign-in?continue=${encodeURIComponent('/x/../preferences')}`)
    assert.equal(kept.headers.get('location'), `${AUTH}/preferences`)
  })

  test('an authorize request without the app origin state starts over on the app origin, which sets it', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    const stateless = await b.fetch(`${AUTH}/authorize?app=vault&return_to=${encodeURIComponent(appUrl('vault') + '/x')}`)
    assert.equal(stateless.status, 302)
    assert.equal(stateless.headers.get('location'), `${appUrl('vault')}/_service/auth/sign-in?return_to=${encodeURIComponent(appUrl('vault') + '/x')}`)
    const { hops } = await b.visit(stateless.headers.get('location')!)
    assert.equal(hops.at(-1), `${appUrl('vault')}/x`)
  })

  test('a valid account without a grant gets 403; a grant opens the app; revoking closes it', async () => {
    const b = new CookieClient(h)
    const { response } = await signInTo(b, 'vault', 'guest@elsewhere.test')
    assert.equal(response.status, 403)
    assert.doesNotMatch(await response.text(), /vault page/)
    const api = await b.fetch(`${appUrl('vault')}/x.json`, { headers: { accept: 'application/json' } })
    assert.equal(api.status, 403)
    assert.equal(((await api.json()) as { error: { code: string } }).error.code, 'ACCESS_DENIED')

    const granted = await h.request('/v1/apps/vault/grants', { token: owner.token, json: { email: 'guest@elsewhere.test' } })
    assert.equal(granted.status, 201)
    assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page')

    const { grants } = (await (await h.request('/v1/apps/vault/grants', { token: owner.token })).json()) as { grants: { userId: string }[] }
    assert.equal((await h.request(`/v1/apps/vault/grants/${grants[0]!.userId}`, { token: owner.token, method: 'DELETE' })).status, 204)
    assert.equal((await b.fetch(`${appUrl('vault')}/`)).status, 403)
  })

  test('a platform administrator may open any active app for review, without owner control', async () => {
    const created = await h.request('/v1/operator/users', { token: h.operatorKey, json: { email: 'admin@platform.test', company: 'Platform', platformAdmin: true } })
    const adminToken = ((await created.json()) as { token: string }).token
    const b = new CookieClient(h)
    const { response } = await signInTo(b, 'vault', 'admin@platform.test')
    assert.equal(response.status, 200)
    assert.equal(await response.text(), 'vault page')
    const me = (await (await b.fetch(`${appUrl('vault')}/_service/auth/user`)).json()) as { user: { email: string } }
    assert.equal(me.user.email, 'admin@platform.test', 'with their own identity')
    assert.equal((await h.request('/v1/apps/vault', { token: adminToken })).status, 404, 'no control-plane access')
    assert.equal((await h.request('/v1/apps/vault/grants', { token: adminToken })).status, 404)
  })

  test("one app's session cookie is worthless on another app", async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    const stolen = b.cookie('vault.localhost:8787', COOKIES.appSession.name)!
    const res = await h.platform.fetch(new Request(`${appUrl('other')}/`, {
      headers: { cookie: `${COOKIES.appSession.name}=${stolen}`, accept: 'text/html' }, redirect: 'manual',
    }))
    assert.equal(res.status, 302)
    assert.ok(res.headers.get('location')!.startsWith(`${AUTH}/authorize?app=other`))
  })

  test('the session endpoint gives a short-lived JWT for this app only, and no refresh token', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    const res = await b.fetch(`${appUrl('vault')}/_service/api/session`, { method: 'POST', headers: { accept: 'application/json' } })
    assert.equal(res.status, 200)
    const body = (await res.json()) as Record<string, unknown>
    assert.deepEqual(Object.keys(body).sort(), ['accessToken', 'expiresAt', 'tokenType', 'user'])
    const token = body.accessToken as string
    const use = (slug: string) => h.platform.fetch(new Request(`${appUrl(slug)}/`, { headers: { authorization: `Bearer ${token}` } }))
    assert.equal(await (await use('vault')).text(), 'vault page')
    const elsewhere = await use('other')
    assert.equal(elsewhere.status, 401)
    assert.equal((await h.platform.fetch(new Request(`${appUrl('vault')}/`, { headers: { authorization: `Bearer ${token}x` } }))).status, 401)

    const anonymous = await new CookieClient(h).fetch(`${appUrl('open')}/_service/api/session`, { method: 'POST', headers: { accept: 'application/json' } })
    assert.equal(anonymous.status, 401)

    assert.equal((await b.fetch(`${appUrl('vault')}/_service/auth/sign-out`, { method: 'POST', headers: { 'x-service-sdk': '1' } })).status, 200)
    assert.equal((await use('vault')).status, 401, 'a signed-out session token stops working at once')
  })

  test('sign-out ends only that browser; another browser stays signed in', async () => {
    const laptop = new CookieClient(h)
    const phone = new CookieClient(h)
    await signInTo(laptop, 'vault', 'owner@acme.test')
    await signInTo(phone, 'vault', 'owner@acme.test')
    const out = await laptop.fetch(`${appUrl('vault')}/_service/auth/sign-out`, { method: 'POST', headers: { 'x-service-sdk': '1', origin: appUrl('vault') } })
    assert.equal(out.status, 200)
    assert.equal((await laptop.fetch(`${appUrl('vault')}/`)).status, 302)
    assert.equal((await laptop.fetch(`${AUTH}/`)).status, 302, 'the central session of that browser ended too')
    assert.equal(await (await phone.fetch(`${appUrl('vault')}/`)).text(), 'vault page')
  })

  test('sign-out refuses cross-site requests', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    assert.equal((await b.fetch(`${appUrl('vault')}/_service/auth/sign-out`, { method: 'POST' })).status, 403)
    assert.equal((await b.fetch(`${appUrl('vault')}/_service/auth/sign-out`, {
      method: 'POST', headers: { 'x-service-sdk': '1', origin: 'http://evil.example' },
    })).status, 403)
    assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page')
  })

  test('a public app serves anonymous visitors, and currentUser reflects the session', async () => {
    const anon = new CookieClient(h)
    assert.equal(await (await anon.fetch(`${appUrl('open')}/`)).text(), 'open page')
    const who = await anon.fetch(`${appUrl('open')}/_service/auth/user`)
    assert.deepEqual(await who.json(), { user: null })
    const b = new CookieClient(h)
    await b.visit(`${appUrl('open')}/_service/auth/sign-in`)
    const { requestId, link } = await requestLink(b, 'owner@acme.test', new URL((await b.visit(`${appUrl('open')}/_service/auth/sign-in`)).hops.at(-1)!).searchParams.get('continue')!)
    await approve(b, link)
    const claimed = await claim(b, requestId)
    const back = await b.visit(new URL(claimed.headers.get('location')!, AUTH).toString())
    assert.equal(back.hops.at(-1), `${appUrl('open')}/`)
    const me = (await (await b.fetch(`${appUrl('open')}/_service/auth/user`)).json()) as { user: { email: string; id: string } }
    assert.equal(me.user.email, 'owner@acme.test')
    assert.deepEqual(Object.keys(me.user).sort(), ['email', 'id'])
  })

  test('a new address becomes a confirmed account without a company', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'open', 'newcomer@fresh.test')
    const [row] = await h.t.db.query<{ organisation_id: string | null; email_confirmed_at: Date | null }>(
      `select organisation_id, email_confirmed_at from platform.users where email = 'newcomer@fresh.test'`)
    assert.equal(row!.organisation_id, null)
    assert.ok(row!.email_confirmed_at)
  })

  test('secrets are stored only as hashes', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    const cookie = b.cookie('vault.localhost:8787', COOKIES.appSession.name)!
    const central = b.cookie('auth.localhost:8787', COOKIES.session.name)!
    for (const table of ['platform.sessions', 'platform.app_sessions', 'platform.sign_in_requests', 'platform.refresh_tokens']) {
      const rows = await h.t.db.query(`select * from ${table}`)
      const dump = JSON.stringify(rows, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))
      assert.ok(!dump.includes(cookie) && !dump.includes(central), table)
    }
  })
})
