// Who may call a Function over HTTP, from its access level, the caller and the request's
// same-origin headers.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { functionAccess, type AccessInput } from './access.ts'

const APP = 'http://notes.localhost:8787'
const sdk = { origin: APP, sdkHeader: '1', appOrigin: APP } as const

function verdict(input: Partial<AccessInput>): string {
  const result = functionAccess({ access: 'public', signedIn: false, via: 'anonymous', ...sdk, ...input }, 'f')
  return result.allowed ? 'allowed' : `${result.status} ${result.code}`
}

describe('functionAccess', () => {
  test('public Functions admit anonymous and signed-in callers', () => {
    assert.equal(verdict({}), 'allowed')
    assert.equal(verdict({ signedIn: true, via: 'session' }), 'allowed')
  })

  test('user Functions need a signed-in caller', () => {
    assert.equal(verdict({ access: 'user' }), '401 AUTH_REQUIRED')
    assert.equal(verdict({ access: 'user', signedIn: true, via: 'session' }), 'allowed')
    assert.equal(verdict({ access: 'user', signedIn: true, via: 'app_token', sdkHeader: undefined, origin: undefined }), 'allowed')
  })

  test('system Functions answer 404 like an unknown name, whoever calls', () => {
    assert.equal(verdict({ access: 'system' }), '404 FUNCTION_NOT_FOUND')
    assert.equal(verdict({ access: 'system', signedIn: true, via: 'app_token' }), '404 FUNCTION_NOT_FOUND')
  })

  test('cookie and anonymous callers need x-service-sdk: 1 and a matching Origin when one is sent', () => {
    assert.equal(verdict({ sdkHeader: undefined }), '403 FORBIDDEN')
    assert.equal(verdict({ signedIn: true, via: 'session', origin: 'http://evil.test' }), '403 FORBIDDEN')
    assert.equal(verdict({ origin: undefined }), 'allowed')
  })

  test('bearer callers skip the same-origin check', () => {
    assert.equal(verdict({ signedIn: true, via: 'access_token', sdkHeader: undefined, origin: 'http://other.test' }), 'allowed')
  })

  test('routes: GET and HEAD pass without the SDK header, whoever calls', () => {
    for (const method of ['GET', 'HEAD']) {
      assert.equal(verdict({ via: 'session', signedIn: true, sdkHeader: undefined, origin: 'http://evil.localhost:8787', route: { method, fetchSite: 'same-site' } }), 'allowed')
    }
  })

  test('routes: a cookie POST, PUT, PATCH or DELETE must show it comes from the app\'s own origin', () => {
    const session = { via: 'session', signedIn: true, sdkHeader: undefined } as const
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      assert.equal(verdict({ ...session, origin: APP, route: { method, fetchSite: 'same-origin' } }), 'allowed')
      assert.equal(verdict({ ...session, origin: undefined, route: { method, fetchSite: 'same-origin' } }), 'allowed')
      assert.equal(verdict({ ...session, origin: APP, route: { method, fetchSite: undefined } }), 'allowed')
      assert.equal(verdict({ ...session, origin: 'http://evil.localhost:8787', route: { method, fetchSite: 'same-site' } }), '403 FORBIDDEN')
      assert.equal(verdict({ ...session, origin: 'http://evil.localhost:8787', route: { method, fetchSite: undefined } }), '403 FORBIDDEN')
      assert.equal(verdict({ ...session, origin: APP, route: { method, fetchSite: 'cross-site' } }), '403 FORBIDDEN')
      assert.equal(verdict({ ...session, origin: undefined, route: { method, fetchSite: undefined } }), '403 FORBIDDEN', 'no evidence at all')
      assert.equal(verdict({ ...session, sdkHeader: '1', origin: undefined, route: { method, fetchSite: undefined } }), 'allowed')
    }
  })

  test('routes: anonymous and bearer callers pass the origin check (a third party\'s webhook works)', () => {
    const foreign = { sdkHeader: undefined, origin: 'http://evil.test', route: { method: 'POST', fetchSite: 'cross-site' } } as const
    assert.equal(verdict({ ...foreign }), 'allowed')
    assert.equal(verdict({ ...foreign, via: 'app_token', signedIn: true }), 'allowed')
    assert.equal(verdict({ ...foreign, via: 'access_token', signedIn: true }), 'allowed')
    assert.equal(verdict({ ...foreign, access: 'user' }), '401 AUTH_REQUIRED')
    assert.equal(verdict({ ...foreign, access: 'system', via: 'app_token', signedIn: true }), '404 FUNCTION_NOT_FOUND')
  })
})
