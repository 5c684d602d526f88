/**
 * The Chromium lookup shared by the browser tests, the test runner and CI: CHROMIUM_PATH
 * first, then the known names on PATH in order; and when a missing browser must fail.
 */
import assert from 'node:assert/strict'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { after, describe, test } from 'node:test'
import { browserRequired, findChromium } from './find-chromium.mjs'

describe('findChromium', () => {
  const root = mkdtempSync(join(tmpdir(), 'find-chromium-'))
  after(() => rmSync(root, { recursive: true, force: true }))

  /** A directory holding the named files; `executable: false` leaves them unexecutable. */
  const dirWith = (name: string, files: string[], options: { executable?: boolean } = {}) => {
    const dir = join(root, name)
    mkdirSync(dir, { recursive: true })
    for (const file of files) {
      writeFileSync(join(dir, file), '#!/bin/sh\n')
      chmodSync(join(dir, file), options.executable === false ? 0o644 : 0o755)
    }
    return dir
  }

  test('finds chromium-browser on PATH when there is no chromium', () => {
    const empty = dirWith('empty', [])
    const ubuntu = dirWith('ubuntu', ['chromium-browser'])
    assert.deepEqual(findChromium({ env: { PATH: [empty, ubuntu].join(delimiter) } }), { path: join(ubuntu, 'chromium-browser') })
  })

  test('prefers chromium over google-chrome, whatever the order of the PATH directories', () => {
    const chrome = dirWith('chrome', ['google-chrome'])
    const debian = dirWith('debian', ['chromium'])
    assert.deepEqual(findChromium({ env: { PATH: [chrome, debian].join(delimiter) } }), { path: join(debian, 'chromium') })
  })

  test('skips a file that is not executable and a directory of the same name', () => {
    const plain = dirWith('plain', ['chromium'], { executable: false })
    const withDir = join(root, 'with-dir')
    mkdirSync(join(withDir, 'chromium'), { recursive: true })
    const chrome = dirWith('chrome-only', ['google-chrome'])
    assert.deepEqual(findChromium({ env: { PATH: [plain, withDir, chrome].join(delimiter) } }), { path: join(chrome, 'google-chrome') })
  })

  test('reports none found, naming what it looked for, when PATH has no browser', () => {
    const found = findChromium({ env: { PATH: dirWith('nothing', ['firefox']) } })
    assert.equal(found.path, null)
    assert.match('reason' in found ? found.reason : '', /CHROMIUM_PATH is not set and none of chromium, chromium-browser, google-chrome/)
  })

  test('CHROMIUM_PATH wins over PATH, and a wrong CHROMIUM_PATH is reported, not replaced', () => {
    const custom = dirWith('custom', ['my-chrome'])
    const debian = dirWith('debian-2', ['chromium'])
    assert.deepEqual(findChromium({ env: { CHROMIUM_PATH: join(custom, 'my-chrome'), PATH: debian } }), { path: join(custom, 'my-chrome') })
    const wrong = findChromium({ env: { CHROMIUM_PATH: join(custom, 'missing'), PATH: debian } })
    assert.equal(wrong.path, null)
    assert.match('reason' in wrong ? wrong.reason : '', /CHROMIUM_PATH is .*missing, which is not an executable file/)
    assert.equal(findChromium({ env: { CHROMIUM_PATH: 'chromium', PATH: debian } }).path, null, 'a relative CHROMIUM_PATH is refused')
  })

  test('a browser is required under CI or SERVICE_REQUIRE_BROWSER=1, not otherwise', () => {
    assert.equal(browserRequired({ env: {} }), false)
    assert.equal(browserRequired({ env: { CI: 'false' } }), false)
    assert.equal(browserRequired({ env: { CI: '0' } }), false)
    assert.equal(browserRequired({ env: { CI: 'true' } }), true)
    assert.equal(browserRequired({ env: { CI: '1' } }), true)
    assert.equal(browserRequired({ env: { SERVICE_REQUIRE_BROWSER: '1' } }), true)
  })

  test('as a command it prints the path and exits 0, or the reason and exits 1 (what .ci/run checks)', () => {
    const script = new URL('./find-chromium.mjs', import.meta.url).pathname
    const debian = dirWith('debian-3', ['chromium'])
    const found = spawnSync(process.execPath, [script], { env: { PATH: debian }, encoding: 'utf8' })
    assert.equal(found.status, 0, found.stderr)
    assert.equal(found.stdout.trim(), join(debian, 'chromium'))
    const missing = spawnSync(process.execPath, [script], { env: { PATH: dirWith('bare', []) }, encoding: 'utf8' })
    assert.equal(missing.status, 1)
    assert.match(missing.stderr, /no Chromium found/)
  })
})
