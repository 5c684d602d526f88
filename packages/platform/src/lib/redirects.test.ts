import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sameOriginPath, sameOriginUrl } from './redirects.ts'

const ORIGIN = 'http://app.localhost:8787'

describe('same-origin redirect targets', () => {
  test('a path on the origin is kept, normalised', () => {
    assert.equal(sameOriginPath('/a/../b?x=1#f', ORIGIN), '/b?x=1#f')
    assert.equal(sameOriginPath(`${ORIGIN}/tasks`, ORIGIN), '/tasks')
    assert.equal(sameOriginPath('tasks', ORIGIN), '/tasks')
  })

  test('anything that leaves the origin, or reads as another host once normalised, becomes /', () => {
    for (const attack of [
      '//evil.example/', '/..//evil.example/', '/\\evil.example', '\\\\evil.example', '/%2e%2e//evil.example', '/./..//evil.example',
      '/\t/evil.example', 'http://evil.example/', 'https://app.localhost:8787/', 'http://app.localhost:8788/',
      'javascript:alert(1)', 'data:text/html,x', '', null, undefined, '/' + 'a'.repeat(2001),
    ]) {
      assert.equal(sameOriginPath(attack, ORIGIN), '/', String(attack))
    }
  })

  test('sameOriginUrl is always absolute on the origin', () => {
    assert.equal(sameOriginUrl('//evil.example/', ORIGIN), `${ORIGIN}/`)
    assert.equal(sameOriginUrl('/x', ORIGIN), `${ORIGIN}/x`)
  })
})
