import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { approve, AUTH, claim, requestLink, signedInBrowser } from '../../../test/sign-in-flow.ts'

interface Login { id: string; approveUrl: string; userCode: string; pollToken: string; expiresAt: string }

describe(`service login through the browser (${backend})`, () => {
  let h: Harness
  before(async () => {
    h = await startHarness()
    await h.createOwner('owner@acme.test')
  })
  after(() => h.close())

  async function start(): Promise<Login> {
    const res = await h.request('/v1/cli/logins', { json: {} })
    assert.equal(res.status, 201)
    return (await res.json()) as Login
  }

  async function poll(login: Login): Promise<{ status: string; token?: string }> {
    const res = await h.request(`/v1/cli/logins/${login.id}/poll`, { json: { pollToken: login.pollToken } })
    assert.equal(res.status, 200)
    return (await res.json()) as { status: string; token?: string }
  }

  test('a person signs in, checks the code and approves; the first poll gets a new owner token, the next gets none', async () => {
    const login = await start()
    assert.equal(login.approveUrl, `${AUTH}/cli/login/${login.id}`)
    assert.match(login.userCode, /^[A-Z]{4}-[A-Z]{4}$/)
    assert.equal(login.expiresAt, new Date(h.clock.now().getTime() + 10 * 60 * 1000).toISOString())
    assert.deepEqual(await poll(login), { status: 'pending' })

    // A browser without a session goes through sign-in and comes back to the approval page.
    const b = new CookieClient(h)
    const first = await b.visit(login.approveUrl)
    const signIn = new URL(first.hops.at(-1)!)
    assert.equal(signIn.pathname, '/sign-in')
    assert.equal(signIn.searchParams.get('continue'), `/cli/login/${login.id}`)
    const { requestId, link } = await requestLink(b, 'owner@acme.test', `/cli/login/${login.id}`)
    await approve(b, link)
    const claimed = await claim(b, requestId)
    assert.equal(claimed.headers.get('location'), `${AUTH}/cli/login/${login.id}`)
    const review = await b.fetch(login.approveUrl)
    const html = await review.text()
    assert.equal(review.status, 200)
    assert.ok(html.includes(login.userCode), 'the page shows the same code as the terminal')
    assert.deepEqual(await poll(login), { status: 'pending' }, 'opening the page approves nothing')

    const approved = await b.post(login.approveUrl, { csrf: field(html, 'csrf') })
    assert.equal(approved.status, 200)
    const collected = await poll(login)
    assert.equal(collected.status, 'approved')
    assert.match(collected.token!, /^svc_owner_/)
    const me = await h.request('/v1/me', { token: collected.token! })
    assert.equal(((await me.json()) as { user: { email: string } }).user.email, 'owner@acme.test')
    const [row] = await h.t.db.query<{ name: string }>(
      'select t.name from platform.owner_tokens t join platform.cli_logins l on l.token_id = t.id where l.id = $1', [login.id])
    assert.equal(row!.name, 'cli')

    assert.deepEqual(await poll(login), { status: 'collected' })
    assert.equal((await b.fetch(login.approveUrl)).status, 410)
  })

  test('approval needs the CSRF token of the page', async () => {
    const login = await start()
    const b = await signedInBrowser(h, 'owner@acme.test')
    await b.fetch(login.approveUrl)
    assert.equal((await b.post(login.approveUrl, {})).status, 403)
    assert.equal((await b.post(login.approveUrl, { csrf: 'forged' })).status, 403)
    assert.equal((await b.post(login.approveUrl, { csrf: b.cookie('auth.localhost:8787', 'svc_csrf')! }, 'http://evil.test')).status, 403)
    assert.deepEqual(await poll(login), { status: 'pending' })
  })

  test('an account whose email is not confirmed cannot approve', async () => {
    const login = await start()
    const b = await signedInBrowser(h, 'fresh@elsewhere.test')
    const html = await (await b.fetch(`${AUTH}/`)).text()
    await h.t.db.query(`update platform.users set email_confirmed_at = null where email = 'fresh@elsewhere.test'`)
    const review = await b.fetch(login.approveUrl)
    assert.equal(review.status, 403)
    assert.match(await review.text(), /Confirm your email first/)
    const posted = await b.post(login.approveUrl, { csrf: field(html, 'csrf') })
    assert.equal(posted.status, 403)
    assert.match(await posted.text(), /Confirm your email first/)
    assert.deepEqual(await poll(login), { status: 'pending' })
  })

  test('an expired login cannot be approved and polls as expired', async () => {
    const login = await start()
    const b = await signedInBrowser(h, 'owner@acme.test')
    const html = await (await b.fetch(login.approveUrl)).text()
    h.clock.advance(10 * 60 * 1000 + 1000)
    assert.equal((await b.fetch(login.approveUrl)).status, 410)
    assert.equal((await b.post(login.approveUrl, { csrf: field(html, 'csrf') })).status, 410)
    assert.deepEqual(await poll(login), { status: 'expired' })
  })

  test('a poll with the wrong secret learns nothing', async () => {
    const login = await start()
    const res = await h.request(`/v1/cli/logins/${login.id}/poll`, { json: { pollToken: 'guess' } })
    assert.equal(res.status, 404)
    assert.equal((await h.request('/v1/cli/logins/nope/poll', { json: { pollToken: login.pollToken } })).status, 404)
  })

  test('DELETE /v1/me/token revokes only the token that calls it', async () => {
    const kept = await h.createOwner('twotokens@acme.test')
    const second = await h.request('/v1/operator/users', {
      token: h.operatorKey, json: { email: 'twotokens@acme.test', tokenForExisting: true, tokenName: 'cli' },
    })
    const { token } = (await second.json()) as { token: string }
    assert.equal((await h.request('/v1/me/token', { token, method: 'DELETE' })).status, 204)
    assert.equal((await h.request('/v1/me', { token })).status, 401)
    assert.equal((await h.request('/v1/me/token', { token, method: 'DELETE' })).status, 401)
    assert.equal((await h.request('/v1/me', { token: kept.token })).status, 200)
  })

  test('starting CLI logins is limited per client address', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 31; i++) statuses.push((await h.request('/v1/cli/logins', { json: {} })).status)
    assert.equal(statuses.filter((s) => s === 201).length <= 30, true)
    assert.equal(statuses.at(-1), 429)
    h.clock.advance(15 * 60 * 1000)
    assert.equal((await h.request('/v1/cli/logins', { json: {} })).status, 201)
  })
})
