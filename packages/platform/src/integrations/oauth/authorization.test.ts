/**
 * The pure parts of OAuth: reading a stored `authorization` block (defaults), the PKCE S256
 * challenge (RFC 7636's own example), the authorization request URL with and without PKCE,
 * and what an exchange or refresh result must hold to be stored.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { authorizationRequestUrl, pkceChallenge, randomToken, readAuthorization } from './authorization.ts'
import { readTokenResult } from './tokens.ts'

const BLOCK = {
  name: 'contacts',
  authorization: { type: 'oauth2', authorizationUrl: 'https://crm.example.com/authorize', clientId: 'abc', scopes: ['a', 'b'], exchange: 'swap' },
}

test('a stored authorization block reads with its defaults: PKCE on, no refresh, OAUTH_ACCESS_TOKEN', () => {
  assert.deepEqual(readAuthorization(BLOCK), {
    authorizationUrl: 'https://crm.example.com/authorize', clientId: 'abc', scopes: ['a', 'b'], exchange: 'swap',
    refresh: null, pkce: true, accessToken: 'OAUTH_ACCESS_TOKEN',
  })
  assert.equal(readAuthorization({ name: 'contacts' }), null, 'no authorization block')
  assert.equal(readAuthorization(null), null)
  const explicit = readAuthorization({ authorization: { ...BLOCK.authorization, refresh: 'renew', pkce: false, accessToken: 'CRM_TOKEN' } })!
  assert.deepEqual([explicit.refresh, explicit.pkce, explicit.accessToken], ['renew', false, 'CRM_TOKEN'])
})

test('the S256 challenge is RFC 7636 appendix B\'s, and verifiers are 43 base64url characters', () => {
  assert.equal(pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'), 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')
  assert.match(randomToken(), /^[A-Za-z0-9_-]{43}$/)
  assert.notEqual(randomToken(), randomToken())
})

test('the authorization request carries the code flow\'s parameters, the challenge only with PKCE, and keeps the declared query', () => {
  const authorization = readAuthorization({ authorization: { ...BLOCK.authorization, authorizationUrl: 'https://crm.example.com/authorize?tenant=7' } })!
  const withPkce = new URL(authorizationRequestUrl(authorization, { redirectUri: 'https://s.example.com/cb', state: 'st', challenge: 'ch' }))
  assert.deepEqual(Object.fromEntries(withPkce.searchParams), {
    tenant: '7', response_type: 'code', client_id: 'abc', redirect_uri: 'https://s.example.com/cb', scope: 'a b', state: 'st',
    code_challenge: 'ch', code_challenge_method: 'S256',
  })
  const without = new URL(authorizationRequestUrl({ ...authorization, pkce: false }, { redirectUri: 'https://s.example.com/cb', state: 'st', challenge: null }))
  assert.equal(without.searchParams.has('code_challenge'), false)
  assert.equal(without.searchParams.has('code_challenge_method'), false)
})

test('a token result needs a non-empty access token; refresh token and expiry are optional and checked', () => {
  assert.deepEqual(readTokenResult({ accessToken: 'at', refreshToken: 'rt', expiresIn: 3600.7 }), { accessToken: 'at', refreshToken: 'rt', expiresIn: 3600 })
  assert.deepEqual(readTokenResult({ accessToken: 'at' }), { accessToken: 'at', refreshToken: null, expiresIn: null })
  assert.deepEqual(readTokenResult({ accessToken: 'at', refreshToken: '', expiresIn: -5 }), { accessToken: 'at', refreshToken: null, expiresIn: null })
  for (const value of [null, 'at', {}, { accessToken: '' }, { accessToken: 5 }, { accessToken: 'x'.repeat(16 * 1024 + 1) }]) {
    assert.equal(readTokenResult(value), null, JSON.stringify(value)?.slice(0, 40))
  }
})
