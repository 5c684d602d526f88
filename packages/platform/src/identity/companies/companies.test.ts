import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH, approve, deployPage, signInTo } from '../../../test/sign-in-flow.ts'
import { latestDevMailTo } from '../../email/index.ts'
import { findUserByEmail } from '../accounts/users.ts'

type Json = Record<string, any>

function linkIn(text: string, path: string): string {
  return new RegExp(`http://auth\\.localhost:8787${path}\\S+`).exec(text)![0]
}

async function setUpCompany(b: CookieClient, name: string, next?: string) {
  const html = await (await b.fetch(`${AUTH}/company${next ? `?continue=${encodeURIComponent(next)}` : ''}`)).text()
  return b.post(`${AUTH}/company`, { csrf: field(html, 'csrf'), continue: field(html, 'continue'), name })
}

describe(`companies, invitations and agent onboarding (${backend})`, () => {
  let h: Harness
  let admin: { token: string; userId: string }
  before(async () => {
    h = await startHarness()
    admin = await h.createOwner('boss@acme.test', 'Acme')
    await deployPage(h, admin.token, 'open', 'public', 'open page')
  })
  after(() => h.close())

  test('signing in never creates or moves a company; setting one up makes the person its administrator', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'open', 'solo@new.test')
    assert.equal((await findUserByEmail(h.t.db, 'solo@new.test'))!.organisationId, null)
    assert.equal((await setUpCompany(b, 'Solo Ltd')).status, 200)
    const user = (await findUserByEmail(h.t.db, 'solo@new.test'))!
    assert.ok(user.organisationId)
    assert.equal(user.organisationRole, 'admin')
    await signInTo(new CookieClient(h), 'open', 'solo@new.test')
    assert.equal((await findUserByEmail(h.t.db, 'solo@new.test'))!.organisationId, user.organisationId, 'sign-in keeps it')
    assert.match(await (await b.fetch(`${AUTH}/company`)).text(), /belongs to a company already/)
    const csrf = b.cookie('auth.localhost:8787', 'svc_csrf')!
    const second = await b.post(`${AUTH}/company`, { csrf, continue: '/', name: 'Second Ltd' })
    assert.equal(second.status, 409, 'an account belongs to exactly one company')
  })

  test('an administrator invites an address; that person accepts and joins as a member', async () => {
    const res = await h.request('/v1/organisation/invitations', { token: admin.token, json: { email: 'new.hire@acme.test' } })
    assert.equal(res.status, 201)
    const link = linkIn((await latestDevMailTo(h.t.db, 'new.hire@acme.test'))!.text, '/invitations/')
    const b = new CookieClient(h)
    await signInTo(b, 'open', 'new.hire@acme.test')
    const html = await (await b.fetch(link)).text()
    assert.match(html, /Join Acme/)
    const id = new URL(link).pathname.split('/').at(-1)!
    const joined = await b.post(`${AUTH}/invitations/${id}`, { csrf: field(html, 'csrf'), k: field(html, 'k') })
    assert.equal(joined.status, 200)
    const hire = (await findUserByEmail(h.t.db, 'new.hire@acme.test'))!
    const boss = (await findUserByEmail(h.t.db, 'boss@acme.test'))!
    assert.equal(hire.organisationId, boss.organisationId)
    assert.equal(hire.organisationRole, 'member')
    const again = await b.post(`${AUTH}/invitations/${id}`, { csrf: field(html, 'csrf'), k: field(html, 'k') })
    assert.equal(again.status, 409)
  })

  test('an invitation is only for its address, and only administrators invite', async () => {
    await h.request('/v1/organisation/invitations', { token: admin.token, json: { email: 'meant@acme.test' } })
    const link = linkIn((await latestDevMailTo(h.t.db, 'meant@acme.test'))!.text, '/invitations/')
    const intruder = new CookieClient(h)
    await signInTo(intruder, 'open', 'intruder@evil.test')
    const html = await (await intruder.fetch(link)).text()
    const id = new URL(link).pathname.split('/').at(-1)!
    assert.equal((await intruder.post(`${AUTH}/invitations/${id}`, { csrf: field(html, 'csrf'), k: field(html, 'k') })).status, 403)
    assert.equal((await findUserByEmail(h.t.db, 'intruder@evil.test'))!.organisationId, null)
    const forged = await intruder.fetch(`${AUTH}/invitations/${id}?k=${'x'.repeat(43)}`)
    assert.equal(forged.status, 410)

    const member = await h.request('/v1/operator/users', { token: h.operatorKey, json: { email: 'plain@acme.test', company: 'Acme' } })
    const memberToken = ((await member.json()) as Json).token
    const denied = await h.request('/v1/organisation/invitations', { token: memberToken, json: { email: 'x@acme.test' } })
    assert.equal(denied.status, 403)
  })

  test('start_onboarding for a new email: provisional identity, organisation_setup_required, no credential until confirmed with a company', async () => {
    const start = await h.request('/v1/onboarding', { json: { email: 'founder@startup.test', projectName: 'Rocket' } })
    assert.equal(start.status, 201)
    const { id, status, pollToken, ...rest } = (await start.json()) as Json
    assert.equal(status, 'organisation_setup_required')
    assert.deepEqual(Object.keys(rest), [], 'no app and no credential in the answer')
    const founder = (await findUserByEmail(h.t.db, 'founder@startup.test'))!
    assert.equal(founder.emailConfirmedAt, null)
    assert.ok(founder.confirmationDeadline)
    const [apps] = await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.apps where owner_id = $1', [founder.id])
    assert.equal(apps!.n, 0)

    const poll = async () => ((await (await h.request(`/v1/onboarding/${id}/poll`, { json: { pollToken } })).json()) as Json)
    assert.deepEqual(await poll(), { status: 'organisation_setup_required' })
    assert.equal((await h.request(`/v1/onboarding/${id}/poll`, { json: { pollToken: 'forged' } })).status, 404)

    const mail = (await latestDevMailTo(h.t.db, 'founder@startup.test'))!
    assert.match(mail.subject, /Rocket/)
    const browser = new CookieClient(h)
    const confirmed = await approve(browser, linkIn(mail.text, '/confirm'))
    assert.equal(confirmed.status, 303, 'the confirming browser continues to the launch page')
    assert.equal(confirmed.headers.get('location'), `${AUTH}/launch/${id}`)
    const launch = await browser.fetch(`${AUTH}/launch/${id}`)
    assert.match(await launch.text(), /set up your company/i)
    assert.deepEqual(await poll(), { status: 'organisation_setup_required' })

    assert.equal((await setUpCompany(browser, 'Startup', `/launch/${id}`)).status, 303)
    assert.match(await (await browser.fetch(`${AUTH}/launch/${id}`)).text(), /Everything is set/)
    const ready = await poll()
    assert.equal(ready.status, 'ready')
    assert.match(ready.token, /^svc_owner_/)
    const me = await h.request('/v1/me', { token: ready.token })
    assert.equal(((await me.json()) as Json).user.email, 'founder@startup.test')
    assert.deepEqual(await poll(), { status: 'ready' }, 'the credential is released once')
  })

  test('start_onboarding for an existing email waits for explicit, scanner-safe approval', async () => {
    const start = await h.request('/v1/onboarding', { json: { email: 'boss@acme.test', projectName: 'Ledger' } })
    const { id, status, pollToken } = (await start.json()) as Json
    assert.equal(status, 'awaiting_confirmation')
    const poll = async () => ((await (await h.request(`/v1/onboarding/${id}/poll`, { json: { pollToken } })).json()) as Json)
    const mail = (await latestDevMailTo(h.t.db, 'boss@acme.test'))!
    const link = linkIn(mail.text, '/confirm')
    const scanner = new CookieClient(h)
    assert.equal((await scanner.fetch(link)).status, 200)
    const html = await (await new CookieClient(h).fetch(link)).text()
    assert.equal((await scanner.post(`${AUTH}/confirm`, { r: field(html, 'r'), t: field(html, 't') })).status, 403)
    assert.deepEqual(await poll(), { status: 'awaiting_confirmation' })

    const browser = new CookieClient(h)
    const confirmed = await approve(browser, link)
    assert.equal(confirmed.status, 303)
    assert.equal((await browser.fetch(`${AUTH}/`)).status, 200, 'the same browser gets a normal session')
    const ready = await poll()
    assert.equal(ready.status, 'ready')
    assert.match(ready.token, /^svc_owner_/)
  })

  test('an onboarding link works for the owner\'s 24 hours, once; the agent can resend, and only the newest link works', async () => {
    const start = await h.request('/v1/onboarding', { json: { email: 'late-founder@startup.test', projectName: 'Slow' } })
    const { id, pollToken } = (await start.json()) as Json
    const first = linkIn((await latestDevMailTo(h.t.db, 'late-founder@startup.test'))!.text, '/confirm')
    assert.match((await latestDevMailTo(h.t.db, 'late-founder@startup.test'))!.text, /within 24 hours/)
    h.clock.advance(23 * 60 * 60 * 1000)
    assert.equal((await new CookieClient(h).fetch(first)).status, 200, 'still valid after 23 hours')
    h.clock.advance(60 * 60 * 1000 + 1000)
    assert.equal((await new CookieClient(h).fetch(first)).status, 410, 'expired after 24 hours')

    const resend = (pollToken: string) => h.request(`/v1/onboarding/${id}/resend`, { json: { pollToken } })
    assert.equal((await resend('forged')).status, 404)
    const sent = await resend(pollToken)
    assert.equal(sent.status, 200)
    const body = (await sent.json()) as Json
    assert.equal(body.status, 'organisation_setup_required')
    assert.equal(new Date(body.expiresAt).getTime(), h.clock.now().getTime() + 24 * 60 * 60 * 1000)
    const second = linkIn((await latestDevMailTo(h.t.db, 'late-founder@startup.test'))!.text, '/confirm')
    assert.notEqual(second, first)
    // A second resend replaces the second link: only the newest one opens.
    assert.equal((await resend(pollToken)).status, 200)
    const third = linkIn((await latestDevMailTo(h.t.db, 'late-founder@startup.test'))!.text, '/confirm')
    assert.equal((await new CookieClient(h).fetch(second)).status, 410)
    const browser = new CookieClient(h)
    assert.equal((await approve(browser, third)).status, 303)
    assert.equal((await new CookieClient(h).fetch(third)).status, 410, 'single use')
    const again = await resend(pollToken)
    assert.equal(again.status, 409, 'nothing to resend once confirmed')
    assert.equal(((await again.json()) as Json).error.code, 'CONFLICT')
  })

  test('start_onboarding checks its input', async () => {
    assert.equal((await h.request('/v1/onboarding', { json: { email: 'nope', projectName: 'X' } })).status, 400)
    assert.equal((await h.request('/v1/onboarding', { json: { email: 'a@b.test', projectName: '' } })).status, 400)
  })
})

describe(`agent onboarding with registration closed (${backend})`, () => {
  let h: Harness
  before(async () => {
    h = await startHarness(undefined, { registration: false })
    await h.createOwner('member@acme.test', 'Acme')
  })
  after(() => h.close())

  /** `start_onboarding` as an agent without a credential calls it over MCP: the tool's JSON answer. */
  async function startOverMcp(args: Json): Promise<{ isError: boolean; body: Json }> {
    const res = await h.request('/mcp', {
      headers: { accept: 'application/json, text/event-stream' },
      json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'start_onboarding', arguments: args } },
    })
    const { result } = (await res.json()) as Json
    return { isError: result.isError === true, body: JSON.parse(result.content[0].text) }
  }

  test('start_onboarding refuses a new address with REGISTRATION_CLOSED and creates nothing, over HTTP and MCP', async () => {
    const res = await h.request('/v1/onboarding', { json: { email: 'stranger@new.test', projectName: 'Heist' } })
    assert.equal(res.status, 403)
    assert.equal(((await res.json()) as Json).error.code, 'REGISTRATION_CLOSED')
    const tool = await startOverMcp({ email: 'stranger@new.test', projectName: 'Heist' })
    assert.equal(tool.isError, true)
    assert.equal(tool.body.error.code, 'REGISTRATION_CLOSED')
    assert.equal(await findUserByEmail(h.t.db, 'stranger@new.test'), null)
    assert.equal(await latestDevMailTo(h.t.db, 'stranger@new.test'), undefined, 'nothing is emailed')
  })

  test('with registration closed, an existing account still onboards its agent', async () => {
    const res = await h.request('/v1/onboarding', { json: { email: 'member@acme.test', projectName: 'Ledger' } })
    assert.equal(res.status, 201)
    assert.equal(((await res.json()) as Json).status, 'awaiting_confirmation')
    const tool = await startOverMcp({ email: 'member@acme.test', projectName: 'Ledger' })
    assert.equal(tool.isError, false)
    assert.equal(tool.body.status, 'awaiting_confirmation')
  })
})
