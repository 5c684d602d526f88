import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../../test/harness.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH, appUrl, approve, claim, deployPage, requestLink, signInTo } from '../../../test/sign-in-flow.ts'
import { latestDevMailTo, listDevMail } from '../../email/index.ts'
import { createApp, findAppBySlug } from '../../apps/apps.ts'
import { deployBundle } from '../../deploy/deploy.ts'
import { COOKIES } from '../pages/cookies.ts'
import { enforceConfirmationDeadlines } from './confirmation.ts'
import { findUserByEmail } from '../accounts/users.ts'
import { issueOwnerToken } from '../accounts/owner-tokens.ts'

const HOUR = 60 * 60 * 1000

async function passwordSignIn(b: CookieClient, email: string, password: string, next = '/') {
  const html = await (await b.fetch(`${AUTH}/sign-in?continue=${encodeURIComponent(next)}`)).text()
  return b.post(`${AUTH}/sign-in`, { csrf: field(html, 'csrf'), continue: field(html, 'continue'), email, password })
}

/** Whether a password sign-in in a fresh browser leaves it with a session. */
async function passwordOpensSession(h: Harness, email: string, password: string): Promise<boolean> {
  const b = new CookieClient(h)
  await passwordSignIn(b, email, password)
  return b.cookie('auth.localhost:8787', COOKIES.session.name) !== undefined
}

async function setPassword(b: CookieClient, password: string, repeat = password) {
  const html = await (await b.fetch(`${AUTH}/preferences`)).text()
  return b.post(`${AUTH}/preferences/password`, { csrf: field(html, 'csrf'), password, repeat })
}

describe(`passwords, registration and unconfirmed accounts (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
    await deployPage(h, owner.token, 'vault', 'private', 'vault page')
  })
  after(() => h.close())

  test('an unknown address with a password registers unconfirmed with a provisional session until the deadline', async () => {
    const b = new CookieClient(h)
    const res = await passwordSignIn(b, 'reg@new.test', 'correct horse')
    assert.equal(res.status, 200)
    assert.match(await res.text(), /Check your email/)
    assert.ok(b.cookie('auth.localhost:8787', COOKIES.session.name))
    const user = (await findUserByEmail(h.t.db, 'reg@new.test'))!
    assert.equal(user.emailConfirmedAt, null)
    assert.equal(user.organisationId, null)
    assert.equal(user.confirmationDeadline!.getTime() - h.clock.now().getTime(), 24 * HOUR)
    const [session] = await h.t.db.query<{ provisional: boolean; expires_at: Date }>(
      'select provisional, expires_at from platform.sessions where user_id = $1', [user.id])
    assert.equal(session!.provisional, true)
    assert.equal(session!.expires_at.getTime(), user.confirmationDeadline!.getTime())
    const mail = await latestDevMailTo(h.t.db, 'reg@new.test')
    assert.equal(mail!.subject, 'Confirm your email address')
    const [row] = await h.t.db.query<{ password_hash: string }>('select password_hash from platform.users where id = $1', [user.id])
    assert.match(row!.password_hash, /^\$argon2id\$/)
  })

  test('a confirmed identity with a password signs in at once; a wrong password gets a generic refusal', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    assert.match(await (await b.fetch(`${AUTH}/preferences`)).text(), /Password/)
    assert.equal((await setPassword(b, 'a long secret')).status, 200)

    const fresh = new CookieClient(h)
    const ok = await passwordSignIn(fresh, 'owner@acme.test', 'a long secret', '/preferences')
    assert.equal(ok.status, 303)
    assert.equal(ok.headers.get('location'), `${AUTH}/preferences`)
    assert.ok(fresh.cookie('auth.localhost:8787', COOKIES.session.name))

    const mailsBefore = (await listDevMail(h.t.db, { to: 'owner@acme.test' })).length
    const wrongBrowser = new CookieClient(h)
    const wrong = await passwordSignIn(wrongBrowser, 'owner@acme.test', 'not the secret')
    assert.equal(wrongBrowser.cookie('auth.localhost:8787', COOKIES.session.name), undefined, 'no session')
    const mails = await listDevMail(h.t.db, { to: 'owner@acme.test' })
    assert.equal(mails.length, mailsBefore + 1)
    assert.equal(mails[0]!.subject, 'A sign-in with a wrong password')
    assert.doesNotMatch(mails[0]!.text, /\/confirm\?/, 'the notice carries no link that approves anything')
    const unknown = await passwordSignIn(new CookieClient(h), 'guest-link-only@acme.test', 'whatever1')
    assert.ok(await findUserByEmail(h.t.db, 'guest-link-only@acme.test'), 'registration is open: an unknown address registers')
    // The form is no oracle: a known address with a wrong password and a new address get the same answer.
    assert.equal(wrong.status, unknown.status)
    const text = (res: string, email: string) => res.replace(email, '<email>').replace(/nonce="[^"]*"/g, '')
    assert.equal(text(await wrong.text(), 'owner@acme.test'), text(await unknown.text(), 'guest-link-only@acme.test'))
  })

  test('a password change keeps email-link sign-in working', async () => {
    const b = new CookieClient(h)
    const { response } = await signInTo(b, 'vault', 'owner@acme.test')
    assert.equal(response.status, 200)
  })

  test('passwords have 8 to 72 characters and the two fields must match', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    assert.equal((await setPassword(b, 'short7!')).status, 400)
    assert.equal((await setPassword(b, 'x'.repeat(73))).status, 400)
    assert.equal((await setPassword(b, 'x'.repeat(72))).status, 200)
    assert.equal((await setPassword(b, 'one password', 'another one')).status, 400)
    assert.equal((await passwordSignIn(new CookieClient(h), 'short@new.test', 'seven77')).status, 400)
  })

  test('a password of the wrong length gets the same refusal for a known address as for a new one', async () => {
    const answer = async (email: string, password: string) => {
      const res = await passwordSignIn(new CookieClient(h), email, password)
      const html = await res.text()
      return { status: res.status, heading: /<h1>([^<]*)/.exec(html)?.[1], error: /class="error">([^<]*)/.exec(html)?.[1] }
    }
    for (const password of ['short', 'x'.repeat(80)]) {
      const known = await answer('owner@acme.test', password)
      assert.equal(known.status, 400, `${password.length} characters`)
      assert.deepEqual(await answer('length@new.test', password), known, `${password.length} characters: no oracle of accounts`)
    }
    assert.equal(await findUserByEmail(h.t.db, 'length@new.test'), null)
  })

  test('with registration closed, an unknown address gets the same refusal as a wrong password', async () => {
    const closed = await startHarness(undefined, { registration: false })
    try {
      const res = await passwordSignIn(new CookieClient(closed), 'nobody@new.test', 'long enough')
      assert.equal(res.status, 401)
      assert.match(await res.text(), /do not match an account/)
      assert.equal(await findUserByEmail(closed.t.db, 'nobody@new.test'), null)
    } finally {
      await closed.close()
    }
  })

  test('sign-in attempts are rate limited per address, with Retry-After', async () => {
    let last: Response | undefined
    for (let i = 0; i < 11; i++) last = await passwordSignIn(new CookieClient(h), 'owner@acme.test', `wrong guess ${i}`)
    assert.equal(last!.status, 429)
    assert.ok(Number(last!.headers.get('retry-after')) >= 1)
    const right = await passwordSignIn(new CookieClient(h), 'owner@acme.test', 'x'.repeat(72))
    assert.equal(right.status, 429, 'even the right password waits out the window')
    h.clock.advance(15 * 60 * 1000)
    assert.equal((await passwordSignIn(new CookieClient(h), 'owner@acme.test', 'x'.repeat(72))).status, 303)
  })

  test('sign-in attempts are rate limited per client across addresses', async () => {
    const b = new CookieClient(h)
    const html = await (await b.fetch(`${AUTH}/sign-in`)).text()
    let status = 0
    for (let i = 0; i < 101 && status !== 429; i++) {
      const res = await b.post(`${AUTH}/sign-in`, { csrf: field(html, 'csrf'), continue: '/', email: `spray${i}@x.test` })
      status = res.status
    }
    assert.equal(status, 429)
    h.clock.advance(15 * 60 * 1000)
  })

  test('an unconfirmed account cannot use a private app granted by another owner until it confirms', async () => {
    const b = new CookieClient(h)
    await passwordSignIn(b, 'pending@new.test', 'pending pass')
    const grant = await h.request('/v1/apps/vault/grants', { token: owner.token, json: { email: 'pending@new.test' } })
    assert.equal(grant.status, 201)
    const { response } = await b.visit(`${appUrl('vault')}/`)
    assert.equal(response.status, 403)
    const mail = await latestDevMailTo(h.t.db, 'pending@new.test')
    const link = /http:\/\/auth\.localhost:8787\/confirm\?\S+/.exec(mail!.text)![0]
    // Confirmed in the registrant's own browser: its session and password stay.
    const confirmed = await approve(b, link)
    const confirmedHtml = await confirmed.text()
    assert.match(confirmedHtml, /Email confirmed/)
    assert.doesNotMatch(confirmedHtml, /signed out every browser/)
    assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page')
    assert.equal((await passwordSignIn(new CookieClient(h), 'pending@new.test', 'pending pass')).status, 303)
  })

  test('a registrant who confirms in the same browser keeps its session for 30 days, past the 24-hour deadline', async () => {
    // A harness of its own: this test moves the clock a day on.
    const own = await startHarness()
    try {
      const host = await own.createOwner('host@acme.test')
      await deployPage(own, host.token, 'kept-pub', 'public', 'kept page')
      const b = new CookieClient(own)
      assert.equal((await passwordSignIn(b, 'kept@new.test', 'kept password')).status, 200)
      // An app session brokered while the central session is still provisional.
      assert.equal((await b.visit(`${appUrl('kept-pub')}/_service/auth/sign-in`)).response.status, 200)
      const mail = await latestDevMailTo(own.t.db, 'kept@new.test')
      const link = /http:\/\/auth\.localhost:8787\/confirm\?\S+/.exec(mail!.text)![0]
      own.clock.advance(10 * 60 * 1000)
      assert.match(await (await approve(b, link)).text(), /Email confirmed/)

      own.clock.advance(25 * HOUR)
      await enforceConfirmationDeadlines(own.t.db, own.clock)
      assert.equal((await b.fetch(`${AUTH}/preferences`)).status, 200, 'still signed in a day after registering')
      const user = (await findUserByEmail(own.t.db, 'kept@new.test'))!
      const [central] = await own.t.db.query<{ created_at: Date; expires_at: Date; provisional: boolean }>(
        'select created_at, expires_at, provisional from platform.sessions where user_id = $1 and revoked_at is null', [user.id])
      assert.equal(central!.provisional, false)
      assert.equal(central!.expires_at.getTime() - central!.created_at.getTime(), 30 * 24 * HOUR, 'a fixed 30 days from sign-in')
      const [brokered] = await own.t.db.query<{ created_at: Date; expires_at: Date }>(
        'select created_at, expires_at from platform.app_sessions where user_id = $1 and revoked_at is null', [user.id])
      assert.equal(brokered!.expires_at.getTime(), central!.expires_at.getTime(), 'the app session lives as long as its central session')
    } finally {
      await own.close()
    }
  })

  test('the 24-hour deadline pauses every app of an unconfirmed owner and revokes its sessions; confirming resumes them', async () => {
    const b = new CookieClient(h)
    await passwordSignIn(b, 'late@new.test', 'late password')
    const late = (await findUserByEmail(h.t.db, 'late@new.test'))!
    const app = await createApp(h.t.db, late, { slug: 'late-app', visibility: 'public' })
    await deployBundle({ db: h.t.db, clock: h.clock }, {
      app, user: late,
      body: bundle({ 'service.yaml': manifest('late-app'), 'public/index.html': 'late page', 'database/migrations/0001_t.sql': 'create table kept (v int); insert into kept values (42);' }),
    })
    assert.equal(await (await new CookieClient(h).fetch(`${appUrl('late-app')}/`)).text(), 'late page')

    h.clock.advance(24 * HOUR - 1000)
    await enforceConfirmationDeadlines(h.t.db, h.clock)
    assert.equal((await findUserByEmail(h.t.db, 'late@new.test'))!.pausedAt, null, 'not before the deadline')
    assert.equal((await findAppBySlug(h.t.db, 'late-app'))!.status, 'active')
    h.clock.advance(2000)
    assert.ok((await enforceConfirmationDeadlines(h.t.db, h.clock)) >= 1)
    assert.ok((await findUserByEmail(h.t.db, 'late@new.test'))!.pausedAt)
    assert.equal((await findAppBySlug(h.t.db, 'late-app'))!.status, 'paused')
    const paused = await new CookieClient(h).fetch(`${appUrl('late-app')}/`, { headers: { accept: 'application/json' } })
    assert.equal(paused.status, 503)
    assert.deepEqual(((await paused.json()) as { error: { details: unknown } }).error.details, { status: 'paused', reason: 'verification_required' })
    const pausedPage = await new CookieClient(h).fetch(`${appUrl('late-app')}/`)
    assert.equal(pausedPage.status, 503)
    const pausedHtml = await pausedPage.text()
    assert.match(pausedHtml, /This app is paused/)
    assert.doesNotMatch(pausedHtml, /late page/)
    const resendUrl = /href="([^"]+verification\/resend[^"]+)"/.exec(pausedHtml)![1]!.replace(/&amp;/g, '&')
    const visitor = new CookieClient(h)
    const resendForm = await (await visitor.fetch(resendUrl)).text()
    const mailsBefore = (await listDevMail(h.t.db, { to: 'late@new.test' })).length
    assert.equal((await visitor.post(`${AUTH}/verification/resend`, { csrf: field(resendForm, 'csrf'), app: field(resendForm, 'app') })).status, 200)
    assert.equal((await listDevMail(h.t.db, { to: 'late@new.test' })).length, mailsBefore + 1, 'the resend action mails the owner')
    const [open] = await h.t.db.query<{ n: number }>(
      'select count(*)::int as n from platform.sessions where user_id = $1 and revoked_at is null', [late.id])
    assert.equal(open!.n, 0)
    assert.equal((await b.fetch(`${AUTH}/`)).status, 302, 'the provisional browser session is gone')
    const [kept] = await h.t.db.query<{ v: number }>('select v from app_late_app.kept')
    assert.equal(kept!.v, 42, 'data is preserved')

    const again = await passwordSignIn(new CookieClient(h), 'late@new.test', 'late password')
    assert.equal(again.status, 403)
    const mails = await listDevMail(h.t.db, { to: 'late@new.test' })
    const link = /http:\/\/auth\.localhost:8787\/confirm\?\S+/.exec(mails[0]!.text)![0]
    // Proven from a browser holding no session of the account: the apps resume, and the
    // password set before the mailbox was proven is gone (whoever set it may not own it).
    const confirmedHtml = await (await approve(new CookieClient(h), link)).text()
    assert.match(confirmedHtml, /Email confirmed/)
    assert.match(confirmedHtml, /removed the password/)
    assert.equal((await findAppBySlug(h.t.db, 'late-app'))!.status, 'active')
    assert.equal(await (await new CookieClient(h).fetch(`${appUrl('late-app')}/`)).text(), 'late page')
    assert.equal(await passwordOpensSession(h, 'late@new.test', 'late password'), false)
  })

  test('account pre-hijacking: the real owner proving the mailbox ends the registrant\'s password and sessions', async () => {
    // The attacker registers the victim's address with a password and keeps the provisional session.
    const attacker = new CookieClient(h)
    assert.equal((await passwordSignIn(attacker, 'victim@corp.test', 'attacker password')).status, 200)
    assert.equal((await attacker.fetch(`${AUTH}/`)).status, 200)
    const victimUser = (await findUserByEmail(h.t.db, 'victim@corp.test'))!
    // The registrant builds an app of the account's own and holds an app session on it.
    const lure = await createApp(h.t.db, victimUser, { slug: 'lure-app', visibility: 'private' })
    await deployBundle({ db: h.t.db, clock: h.clock }, {
      app: lure, user: victimUser, body: bundle({ 'service.yaml': manifest('lure-app', '', 'private'), 'public/index.html': 'lure page' }),
    })
    assert.equal(await (await attacker.visit(`${appUrl('lure-app')}/`)).response.text(), 'lure page')
    // A grant to the victim's address, made while the attacker still holds the account.
    assert.equal((await h.request('/v1/apps/vault/grants', { token: owner.token, json: { email: 'victim@corp.test' } })).status, 201)

    // The victim signs in by email link in their own browser: the first proof of the mailbox.
    const victim = new CookieClient(h)
    const { requestId, link } = await requestLink(victim, 'victim@corp.test')
    const approved = await approve(victim, link)
    assert.match(await approved.text(), /removed the password set then and signed out every browser/)
    assert.equal((await claim(victim, requestId)).status, 303)

    assert.equal((await attacker.fetch(`${AUTH}/`)).status, 302, 'the attacker\'s provisional session has ended')
    assert.equal((await attacker.visit(`${appUrl('vault')}/`)).hops.at(-1)!.startsWith(`${AUTH}/sign-in`), true,
      'the attacker cannot read the app granted to the address')
    assert.equal((await attacker.fetch(`${appUrl('lure-app')}/`)).status, 302,
      'the attacker\'s app session on the account\'s own app has ended too')
    assert.equal(await passwordOpensSession(h, 'victim@corp.test', 'attacker password'), false)
    const [row] = await h.t.db.query<{ password_hash: string | null; email_confirmed_at: Date | null }>(
      'select password_hash, email_confirmed_at from platform.users where id = $1', [victimUser.id])
    assert.equal(row!.password_hash, null)
    assert.ok(row!.email_confirmed_at)
    // The victim is signed in, and the grant is theirs.
    assert.equal(await (await victim.visit(`${appUrl('vault')}/`)).response.text(), 'vault page')
  })

  test('an unconfirmed owner cannot share an app (an owner-only action)', async () => {
    const b = new CookieClient(h)
    await passwordSignIn(b, 'sharer@new.test', 'sharer password')
    const sharer = (await findUserByEmail(h.t.db, 'sharer@new.test'))!
    await createApp(h.t.db, sharer, { slug: 'sharer-app', visibility: 'private' })
    const { token } = await issueOwnerToken(h.t.db, sharer.id, 'test')
    const res = await h.request('/v1/apps/sharer-app/grants', { token, json: { email: 'owner@acme.test' } })
    assert.equal(res.status, 403)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'CONFIRMATION_REQUIRED')
  })

  test('the resend action sends a new confirmation link to an unconfirmed account', async () => {
    const b = new CookieClient(h)
    await passwordSignIn(b, 'again@new.test', 'again password')
    const before = (await listDevMail(h.t.db, { to: 'again@new.test' })).length
    const html = await (await b.fetch(`${AUTH}/preferences`)).text()
    assert.match(html, /not confirmed yet/)
    const res = await b.post(`${AUTH}/verification/resend`, { csrf: field(html, 'csrf') })
    assert.equal(res.status, 200)
    assert.equal((await listDevMail(h.t.db, { to: 'again@new.test' })).length, before + 1)
  })
})
