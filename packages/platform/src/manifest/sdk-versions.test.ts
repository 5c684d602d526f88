// Tests for runtime SDK version parsing, comparison and feature gates.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PLATFORM_SDK_VERSION, SDK_GATES, parseSdkVersion, sdkAtLeast } from './index.ts'

test('versions compare numerically, part by part', () => {
  assert.equal(sdkAtLeast('2.3.0', '2.3.0'), true)
  assert.equal(sdkAtLeast('2.3.1', '2.3.0'), true)
  assert.equal(sdkAtLeast('2.10.0', '2.9.9'), true)
  assert.equal(sdkAtLeast('3.0.0', '2.99.99'), true)
  assert.equal(sdkAtLeast('2.2.9', '2.3.0'), false)
  assert.equal(sdkAtLeast('1.99.0', '2.0.0'), false)
})

test('a malformed version is never at least anything', () => {
  for (const version of ['2.3', 'v2.3.0', '2.3.0-beta', '02.3.0', '', '2.3.0.1']) {
    assert.equal(sdkAtLeast(version, '0.0.0'), false, version)
    assert.equal(parseSdkVersion(version), null, version)
  }
})

test('parseSdkVersion returns the three numbers', () => {
  assert.deepEqual(parseSdkVersion('2.10.3'), [2, 10, 3])
})

test('the gates and the platform version match the spec', () => {
  assert.deepEqual(SDK_GATES, {
    integrationSlots: '2.2.0',
    functionRoutes: '2.3.0',
    fileGrants: '2.4.0',
    dataSearch: '2.4.0',
    providerSyncWebhookEvents: '2.6.0',
  })
  assert.equal(PLATFORM_SDK_VERSION, '2.6.0')
  for (const minimum of Object.values(SDK_GATES)) assert.equal(sdkAtLeast(PLATFORM_SDK_VERSION, minimum), true)
})
