import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ManualClock } from '../../lib/clock.ts'
import { createAccessTokenVerifier, mintAccessToken } from './access-tokens.ts'

describe('access tokens verified once are remembered, within their limits', () => {
  const key = new Uint8Array(32).fill(7)
  const mint = (clock: ManualClock, appId = 'app-1') => mintAccessToken(key, clock, {
    userId: 'user-1', appId, appSessionId: 'sid-1', email: 'a@example.test', expiresAt: new Date(clock.now().getTime() + 60_000),
  })

  test('a remembered token is refused once its exp has passed', async () => {
    const clock = new ManualClock('2026-11-21T12:00:00Z')
    const verify = createAccessTokenVerifier(key, clock)
    const token = await mint(clock)
    assert.equal((await verify(token, 'app-1'))?.sid, 'sid-1')
    assert.equal((await verify(token, 'app-1'))?.sid, 'sid-1')
    clock.advance(60_000)
    assert.equal(await verify(token, 'app-1'), null)
  })

  test('a remembered token is refused on another app', async () => {
    const clock = new ManualClock('2026-11-21T12:00:00Z')
    const verify = createAccessTokenVerifier(key, clock)
    const token = await mint(clock)
    assert.ok(await verify(token, 'app-1'))
    assert.equal(await verify(token, 'app-2'), null)
  })

  test('a token signed with another key, or altered, is refused even beside a remembered one', async () => {
    const clock = new ManualClock('2026-11-21T12:00:00Z')
    const verify = createAccessTokenVerifier(key, clock)
    const token = await mint(clock)
    assert.ok(await verify(token, 'app-1'))
    const [header, payload, signature] = token.split('.')
    const altered = `${header}.${payload}.${signature!.slice(0, -2)}${signature!.endsWith('AA') ? 'BB' : 'AA'}`
    assert.equal(await verify(altered, 'app-1'), null)
    const foreign = await mintAccessToken(new Uint8Array(32).fill(8), clock, {
      userId: 'user-1', appId: 'app-1', appSessionId: 'sid-1', email: 'a@example.test', expiresAt: new Date(clock.now().getTime() + 60_000),
    })
    assert.equal(await verify(foreign, 'app-1'), null)
  })

  test('with a full memory, old and new tokens are still accepted for their app only', async () => {
    const clock = new ManualClock('2026-11-21T12:00:00Z')
    const verify = createAccessTokenVerifier(key, clock, { maxEntries: 1 })
    const first = await mint(clock)
    const second = await mint(clock, 'app-2')
    assert.ok(await verify(first, 'app-1'))
    assert.ok(await verify(second, 'app-2'))
    assert.ok(await verify(first, 'app-1'))
    assert.equal(await verify(second, 'app-1'), null)
    assert.ok(await verify(second, 'app-2'))
  })
})
