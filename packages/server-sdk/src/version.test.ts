// Tests that the exported SDK version is the one the spec, the package and the platform
// agree on (spec section 9).

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { PLATFORM_SDK_VERSION } from '@service/platform/manifest'
import { SERVICE_SDK_VERSION, defineFunction, object } from './index.ts'

test('SERVICE_SDK_VERSION is 2.6.0', () => {
  assert.equal(SERVICE_SDK_VERSION, '2.6.0')
})

test('the package version and the platform SDK version match SERVICE_SDK_VERSION', () => {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  assert.equal(manifest.version, SERVICE_SDK_VERSION)
  assert.equal(PLATFORM_SDK_VERSION, SERVICE_SDK_VERSION)
})

test('a definition records the SDK version that built it', () => {
  assert.equal(defineFunction({ input: object({}), handler: () => SERVICE_SDK_VERSION }).sdkVersion, '2.6.0')
})
