/**
 * Attacks on the central sign-in and the app callback, each the case a security review
 * found: script injection through echoed input, open redirects (in sign-in.test.ts), login
 * CSRF into apps through a code minted for the attacker, and cookies planted from a sibling
 * subdomain over https.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH, appUrl, approve, claim, deployPage, requestLink, signInTo } from '../../../test/sign-in-flow.ts'
import { COOKIES } from '../pages/cookies.ts'

const PAYLOAD = `</script><script>alert(1)</script>"'><img src=x onerror=alert(2)>\u2028`

/** Asserts a platform page: its policy allows only its own nonce'd elements, and the payload did not get through raw. */
async function assertSafePage(res: Response, label: string): Promise<string> {
  const policy = res.headers.get('content-security-policy') ?? ''
  const html = await res.text()
  assert.match(res.headers.get('content-type') ?? '', /^text\/html/, label)
  assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval/, `${label}: ${policy}`)
  const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(policy)?.[1]
  assert.ok(nonce, `${label}: script-src has a nonce: ${policy}`)
  assert.match(policy, new RegExp(`style-src 'nonce-${nonce.replace(/[+/=]/g, '\\$&')}'`), label)
  for (const element of html.match(/<(script|style)\b[^>]*>/g) ?? []) {
    assert.equal(element.includes(`nonce="${nonce}"`), true, `${label}: ${element} carries the response's nonce`)
  }
  assert.ok(!html.includes('<script>alert'), `${label}: no injected script element`)
  assert.ok(!html.includes('<img src=x'), `${label}: no injected element`)
  assert.ok(!html.includes('\u2028'), `${label}: no raw line separator`)
  assert.doesNotMatch(html, /style="/, `${label}: no inline style attribute (the policy would block it)`)
  return html
}

describe(`sign-in attacks (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
    await deployPage(h, owner.token, 'vault', 'private', 'vault page')
  })
  after(() => h.close())

  test('every page that echoes input escapes it and runs only its own nonce-marked script and style', async () => {
    const p = encodeURIComponent(PAYLOAD)
    const anonymous = new CookieClient(h)
    const signedIn = new CookieClient(h)
    await signInTo(signedIn, 'vault', 'owner@acme.test')
    // Signed in to an account the app is not shared with: the edge's "No access" page.
    const stranger = new CookieClient(h)
    await h.createOwner('stranger@acme.test')
    await signInTo(stranger, 'vault', 'stranger@acme.test')
    const pages: [CookieClient, string][] = [
      [anonymous, `${AUTH}/sign-in?continue=${p}`],
      [anonymous, `${AUTH}/sign-in?continue=/x${p}`],
      [anonymous, `${AUTH}/sign-in/wait?r=${p}`],
      [anonymous, `${AUTH}/confirm?r=${p}&t=${p}`],
      [anonymous, `${AUTH}/verification/resend?app=${p}`],
      [signedIn, `${AUTH}/`],
      [signedIn, `${AUTH}/preferences`],
      [signedIn, `${AUTH}/company?continue=/x${p}`],
      [signedIn, `${AUTH}/invitations/${p}?k=${p}`],
      [signedIn, `${AUTH}/launch/${p}`],
      [signedIn, `${AUTH}/cli/login/${p}`],
      [signedIn, `${AUTH}/app-tokens/reveal?id=${p}&k=${p}`],
      [signedIn, `${AUTH}/app-tokens/requests/${p}`],
      [anonymous, `${appUrl('vault')}/_service/auth/callback?code=${p}&state=${p}`],
      [stranger, `${appUrl('vault')}/x${p}?q=${p}`],
    ]
    for (const [browser, url] of pages) {
      const res = await browser.fetch(url)
      assert.ok(res.status < 500, `${url}: ${res.status}`)
      await assertSafePage(res, url)
    }
    assert.equal((await stranger.fetch(`${appUrl('vault')}/x${p}`)).status, 403, 'the stranger saw the No access page')
  })

  test('the waiting page accepts only a well-formed request id, and its script carries it as data', async () => {
    const b = new CookieClient(h)
    const injected = await b.fetch(`${AUTH}/sign-in/wait?r=${encodeURIComponent(PAYLOAD)}`)
    assert.equal(injected.status, 410)
    assert.doesNotMatch(await assertSafePage(injected, 'wait'), /<script/)
    const { requestId } = await requestLink(b, 'owner@acme.test')
    const html = await assertSafePage(await b.fetch(`${AUTH}/sign-in/wait?r=${requestId}`), 'wait')
    assert.ok(html.includes(`var id="${requestId}"`))
  })

  test('two responses never share a nonce', async () => {
    const policies = await Promise.all([1, 2, 3].map(async () =>
      (await new CookieClient(h).fetch(`${AUTH}/sign-in`)).headers.get('content-security-policy')))
    assert.equal(new Set(policies).size, 3)
  })

  test('a private app admits before its SDK and session tokens: 403 to an account without a grant, 401 to nobody', async () => {
    const stranger = new CookieClient(h)
    await signInTo(stranger, 'vault', 'stranger@elsewhere.test')
    const json = { accept: 'application/json' }
    const sdk = await stranger.fetch(`${appUrl('vault')}/_service/sdk.js`, { headers: { accept: '*/*' } })
    assert.equal(sdk.status, 403)
    assert.doesNotMatch(await sdk.text(), /functions/)
    const session = await stranger.fetch(`${appUrl('vault')}/_service/api/session`, {
      method: 'POST', headers: { ...json, origin: appUrl('vault') },
    })
    assert.equal(session.status, 403)
    assert.equal(((await session.json()) as { error: { code: string } }).error.code, 'ACCESS_DENIED')
    const anonymous = await new CookieClient(h).fetch(`${appUrl('vault')}/_service/sdk.js`, { headers: json })
    assert.equal(anonymous.status, 401)

    const member = new CookieClient(h)
    await signInTo(member, 'vault', 'owner@acme.test')
    assert.equal((await member.fetch(`${appUrl('vault')}/_service/sdk.js`, { headers: { accept: '*/*' } })).status, 200)
    const token = await member.fetch(`${appUrl('vault')}/_service/api/session`, { method: 'POST', headers: { ...json, origin: appUrl('vault') } })
    assert.equal(token.status, 200)
    assert.ok(((await token.json()) as { accessToken: string }).accessToken)
  })

  test('a code minted for the attacker, opened in the victim\'s browser, signs nobody in (login CSRF)', async () => {
    // The attacker signs in to vault in their own browser and stops at the callback URL.
    const attacker = new CookieClient(h)
    const start = await attacker.visit(`${appUrl('vault')}/`)
    const next = new URL(start.hops.at(-1)!).searchParams.get('continue')!
    const { requestId, link } = await requestLink(attacker, 'attacker@evil.test', next)
    await approve(attacker, link)
    const claimed = await claim(attacker, requestId)
    const authorize = await attacker.fetch(new URL(claimed.headers.get('location')!, AUTH).toString())
    const callback = authorize.headers.get('location')!
    assert.match(callback, /\/_service\/auth\/callback\?code=[^&]+&state=/)

    // The victim's browser: no sign-in of its own, then one of its own in progress.
    const victim = new CookieClient(h)
    const refused = await victim.fetch(callback)
    assert.equal(refused.status, 400)
    assert.equal(victim.cookie('vault.localhost:8787', COOKIES.appSession.name), undefined)
    await victim.fetch(`${appUrl('vault')}/_service/auth/sign-in`)
    assert.ok(victim.cookie('vault.localhost:8787', COOKIES.authState.name))
    const stillRefused = await victim.fetch(callback)
    assert.equal(stillRefused.status, 400)
    assert.equal(victim.cookie('vault.localhost:8787', COOKIES.appSession.name), undefined)
    const api = await victim.fetch(`${appUrl('vault')}/_service/auth/user`, { headers: { accept: 'application/json' } })
    assert.deepEqual(await api.json(), { user: null })

    // The code was never spent by those attempts: the attacker's own browser still completes.
    const own = await attacker.visit(callback)
    assert.equal(own.hops.at(-1), `${appUrl('vault')}/`)
    const me = await attacker.fetch(`${appUrl('vault')}/_service/auth/user`, { headers: { accept: 'application/json' } })
    assert.equal(((await me.json()) as { user: { email: string } }).user.email, 'attacker@evil.test')
  })
})

describe(`sign-in cookies over https (${backend})`, () => {
  let h: Harness
  const auth = 'https://auth.example.test'
  before(async () => {
    h = await startHarness(undefined, { baseUrl: 'https://example.test' })
  })
  after(() => h.close())

  /** Registers with a password on the https platform; returns the browser and its Set-Cookie headers. */
  async function register(email: string): Promise<{ b: CookieClient; setCookies: string[] }> {
    const b = new CookieClient(h)
    const form = await b.fetch(`${auth}/sign-in`)
    const setCookies = form.headers.getSetCookie()
    const res = await b.post(`${auth}/sign-in`, { csrf: field(await form.text(), 'csrf'), continue: '/', email, password: 'a long password' })
    assert.equal(res.status, 200)
    return { b, setCookies: [...setCookies, ...res.headers.getSetCookie()] }
  }

  test('session and CSRF cookies are __Host- prefixed, Secure, host-only and on path /', async () => {
    const { setCookies } = await register('https-user@acme.test')
    for (const name of ['__Host-svc_csrf', '__Host-svc_session']) {
      const cookie = setCookies.find((c) => c.startsWith(`${name}=`))
      assert.ok(cookie, `${name} in ${setCookies.join(' | ')}`)
      assert.match(cookie, /; Secure/i)
      assert.match(cookie, /; Path=\//)
      assert.doesNotMatch(cookie, /Domain=/i)
    }
    assert.ok(!setCookies.some((c) => /^svc_/.test(c)), 'no bare names over https')
  })

  test('a session cookie planted under the bare name (as a sibling subdomain could) is not read', async () => {
    const { b } = await register('victim@acme.test')
    const session = b.cookie('auth.example.test', '__Host-svc_session')!
    const planted = await h.platform.fetch(new Request(`${auth}/`, { headers: { cookie: `svc_session=${session}` } }))
    assert.equal(planted.status, 302)
    assert.equal(planted.headers.get('location'), `${auth}/sign-in`)
    const real = await h.platform.fetch(new Request(`${auth}/`, { headers: { cookie: `__Host-svc_session=${session}` } }))
    assert.equal(real.status, 200)
  })

  test('a claim cookie planted in another browser cannot claim the approval there', async () => {
    const attacker = new CookieClient(h)
    const form = await attacker.fetch(`${auth}/sign-in`)
    const res = await attacker.post(`${auth}/sign-in`, { csrf: field(await form.text(), 'csrf'), continue: '/', email: 'victim@acme.test' })
    const requestId = new URL(res.headers.get('location')!, auth).searchParams.get('r')!
    const claimCookie = attacker.cookie('auth.example.test', '__Secure-svc_claim')
    assert.ok(claimCookie, 'the claim is path-scoped and __Secure- prefixed')
    assert.match(res.headers.getSetCookie().find((c) => c.startsWith('__Secure-svc_claim='))!, /Path=\/sign-in\/claim/)
    // The victim's browser, with its own CSRF cookie and the attacker's claim cookie planted.
    const victim = new CookieClient(h)
    await victim.fetch(`${auth}/sign-in`)
    victim.cookies('auth.example.test').set('__Secure-svc_claim', { value: claimCookie, path: '/sign-in/claim', expiresAt: Number.POSITIVE_INFINITY })
    const status = await victim.fetch(`${auth}/sign-in/claim/status?r=${requestId}`)
    assert.equal(((await status.json()) as { status: string }).status, 'expired')
    const own = await attacker.fetch(`${auth}/sign-in/claim/status?r=${requestId}`)
    assert.equal(((await own.json()) as { status: string }).status, 'pending')
  })
})
