import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { eventually } from '../../../test/eventually.ts'
import { CookieClient } from '../../../test/cookie-client.ts'
import { AUTH, appUrl, deployPage, signInTo } from '../../../test/sign-in-flow.ts'
import { COOKIES } from '../pages/cookies.ts'
import { issueRefreshToken, createSession, rotateRefreshToken, sessionById } from './sessions.ts'
import { findUserByEmail } from '../accounts/users.ts'
import type { RefreshOutcome } from './sessions.ts'

const MINUTE = 60 * 1000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

async function refreshTokenCount(h: Harness): Promise<number> {
  const [row] = await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.refresh_tokens')
  return row!.n
}

describe(`browser sessions over time (${backend})`, () => {
  let h: Harness
  let failing: 'none' | 'throw' | 'hang' | 'slow' = 'none'
  /** Lets a 'slow' central answer arrive: the test calls it once the browser got its timeout. */
  let answerLate: (() => void) | null = null
  before(async () => {
    h = await startHarness(undefined, {
      sessions: {
        // Long enough for a refresh's statements on a loaded machine (a 200 ms bound timed
        // out ordinary refreshes in CI-like load); 'hang' and 'slow' wait it out.
        refreshTimeoutMs: 2000,
        refresh: async (token): Promise<RefreshOutcome> => {
          if (failing === 'throw') throw new Error('central auth is down')
          if (failing === 'hang') return new Promise(() => {})
          if (failing === 'slow') await new Promise<void>((resolve) => { answerLate = resolve })
          return h.t.db.transaction((tx) => rotateRefreshToken(tx, h.clock, token))
        },
      },
    })
    const owner = await h.createOwner('owner@acme.test')
    await deployPage(h, owner.token, 'vault', 'private', 'vault page')
    await deployPage(h, owner.token, 'open', 'public', 'open page')
  })
  after(() => h.close())

  test('the access token refreshes during its final minute, not before, rotating the refresh token', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    const before = await refreshTokenCount(h)
    h.clock.advance(58 * MINUTE)
    assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page')
    assert.equal(await refreshTokenCount(h), before, 'no refresh outside the final minute')
    h.clock.advance(MINUTE + 1)
    assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page')
    assert.equal(await refreshTokenCount(h), before + 1, 'one refresh in the final minute')
    const [rotated] = await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.refresh_tokens where rotated_at is not null')
    assert.ok(rotated!.n >= 1)
    h.clock.advance(30 * MINUTE)
    await b.fetch(`${appUrl('vault')}/`)
    assert.equal(await refreshTokenCount(h), before + 1, 'the new access lasts another hour')
  })

  test('presenting an already-rotated refresh token revokes the whole session', async () => {
    const user = (await findUserByEmail(h.t.db, 'owner@acme.test'))!
    const { session } = await createSession(h.t.db, h.clock, { user })
    const first = await issueRefreshToken(h.t.db, h.clock, session.id)
    const rotated = await rotateRefreshToken(h.t.db, h.clock, first)
    assert.equal(rotated.ok, true)
    const replay = await rotateRefreshToken(h.t.db, h.clock, first)
    assert.deepEqual(replay, { ok: false, reason: 'reused' })
    assert.equal(await sessionById(h.t.db, h.clock, session.id), null)
    const next = await rotateRefreshToken(h.t.db, h.clock, (rotated as { refreshToken: string }).refreshToken)
    assert.equal(next.ok, false, 'the legitimate holder is signed out too')
  })

  test('a refresh the central auth rejects signs a private app out to the sign-in page', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    await h.t.db.query(`update platform.sessions set revoked_at = $1 where revoked_at is null`, [h.clock.now()])
    await h.t.db.query(`update platform.app_sessions set revoked_at = null`) // only the central side knows
    h.clock.advance(HOUR)
    const res = await b.fetch(`${appUrl('vault')}/`)
    assert.equal(res.status, 302)
    assert.ok(res.headers.get('location')!.startsWith(`${AUTH}/authorize?app=vault`))
    assert.equal(b.cookie('vault.localhost:8787', COOKIES.appSession.name), undefined, 'the app cookie is cleared')
    const signIn = await b.visit(res.headers.get('location')!)
    assert.equal(signIn.response.status, 200, 'the sign-in page renders normally')
    assert.match(await signIn.response.text(), /Sign in/)
  })

  test('a refresh the central auth rejects lets a public app continue anonymously', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'open', 'owner@acme.test')
    assert.notEqual(((await (await b.fetch(`${appUrl('open')}/_service/auth/user`)).json()) as { user: unknown }).user, null)
    await h.t.db.query(`update platform.sessions set revoked_at = $1 where revoked_at is null`, [h.clock.now()])
    await h.t.db.query(`update platform.app_sessions set revoked_at = null`)
    h.clock.advance(HOUR)
    assert.equal(await (await b.fetch(`${appUrl('open')}/`)).text(), 'open page')
    assert.deepEqual(await (await b.fetch(`${appUrl('open')}/_service/auth/user`)).json(), { user: null })
  })

  for (const mode of ['throw', 'hang'] as const) {
    test(`a refresh that meets a central ${mode === 'throw' ? 'failure' : 'timeout'} reports an error and keeps the session`, async () => {
      const b = new CookieClient(h)
      await signInTo(b, 'vault', 'owner@acme.test')
      h.clock.advance(HOUR - 30 * 1000)
      failing = mode
      try {
        const res = await b.fetch(`${appUrl('vault')}/`, { headers: { accept: 'application/json' } })
        assert.equal(res.status, 503)
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'AUTH_UNAVAILABLE')
        assert.ok(b.cookie('vault.localhost:8787', COOKIES.appSession.name), 'the cookie stays')
      } finally {
        failing = 'none'
      }
      assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page', 'the next request refreshes normally')
    })
  }

  test('a central answer that arrives after the timeout is kept, so no false replay signs the browser out', async () => {
    const reused = async () => (await h.t.db.query<{ n: number }>(
      `select count(*)::int as n from platform.sessions where revoked_reason = 'refresh_token_reused'`))[0]!.n
    const replaysBefore = await reused()
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    h.clock.advance(HOUR - 30 * 1000)
    // Sessions whose access was renewed now (an hour ahead; this browser's has 30 s left).
    const renewed = async () => (await h.t.db.query<{ n: number }>(
      `select count(*)::int as n from platform.app_sessions where revoked_at is null and access_expires_at > $1`,
      [new Date(h.clock.now().getTime() + 30 * 60 * 1000)]))[0]!.n
    const renewedBefore = await renewed()
    failing = 'slow'
    try {
      assert.equal((await b.fetch(`${appUrl('vault')}/`, { headers: { accept: 'application/json' } })).status, 503)
      assert.ok(answerLate, 'the central call is waiting')
      answerLate()
      await eventually(async () => (await renewed()) > renewedBefore, 'the late answer was stored')
    } finally {
      failing = 'none'
      answerLate = null
    }
    assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page')
    h.clock.advance(HOUR)
    assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page', 'the next refresh presents the stored, current token')
    assert.equal(await reused(), replaysBefore)
  })

  test('concurrent requests in the final minute refresh once and all succeed', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    h.clock.advance(HOUR - 30 * 1000)
    const before = await refreshTokenCount(h)
    const pages = await Promise.all(Array.from({ length: 5 }, () => b.fetch(`${appUrl('vault')}/`)))
    for (const res of pages) assert.equal(res.status, 200)
    assert.equal(await refreshTokenCount(h), before + 1)
  })

  test('sessions end after a fixed 30 days, however active', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    for (let day = 0; day < 29; day++) {
      h.clock.advance(DAY)
      assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page', `day ${day + 1}`)
    }
    h.clock.advance(DAY)
    const res = await b.fetch(`${appUrl('vault')}/`)
    assert.equal(res.status, 302)
    assert.equal((await b.fetch(`${AUTH}/`)).status, 302, 'the central session expired too')
  })

  test('an access token from the session endpoint expires with its hour', async () => {
    const b = new CookieClient(h)
    await signInTo(b, 'vault', 'owner@acme.test')
    const { accessToken, expiresAt } = (await (await b.fetch(`${appUrl('vault')}/_service/api/session`, { method: 'POST' })).json()) as { accessToken: string; expiresAt: string }
    assert.equal(Date.parse(expiresAt) - h.clock.now().getTime(), HOUR)
    const use = () => h.platform.fetch(new Request(`${appUrl('vault')}/`, { headers: { authorization: `Bearer ${accessToken}` } }))
    assert.equal((await use()).status, 200)
    h.clock.advance(HOUR + 1000)
    assert.equal((await use()).status, 401)
  })
})
