// Finds the Chromium the real-browser tests drive (a browser is never downloaded): the
// executable named by CHROMIUM_PATH when that variable is set, otherwise the first of
// CHROMIUM_NAMES found on PATH. One lookup shared by the browser test harness
// (packages/platform/test/browser.ts), the test runner (scripts/test.mjs) and CI (.ci/run),
// so CI installs Chromium exactly when the tests would not find one.
//
// As a command: `node scripts/find-chromium.mjs` prints the path and exits 0, or prints why
// none was found on stderr and exits 1.
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Names looked up on PATH, in order (Debian, Ubuntu and Fedora, then Google's builds). */
export const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']

/** How to get a browser, for messages (the same words wherever a browser is missing). */
export const CHROMIUM_INSTALL_HINT =
  'install Chromium (Debian/Ubuntu: `sudo apt-get install chromium`) or set CHROMIUM_PATH=/path/to/chromium'

/**
 * The Chromium to use, or why there is none. CHROMIUM_PATH, when set, is the only candidate:
 * a wrong value is reported rather than silently replaced by another browser.
 *
 * @example
 * const found = findChromium({ env: process.env })
 * if (found.path === null) console.error(found.reason)
 *
 * @param {{ env: Record<string, string | undefined> }} options
 * @returns {{ path: string } | { path: null, reason: string }}
 */
export function findChromium({ env }) {
  const explicit = env.CHROMIUM_PATH
  if (explicit !== undefined && explicit !== '') {
    if (!isAbsolute(explicit)) return { path: null, reason: `CHROMIUM_PATH must be an absolute path, not "${explicit}"` }
    return isExecutableFile(explicit)
      ? { path: explicit }
      : { path: null, reason: `CHROMIUM_PATH is ${explicit}, which is not an executable file` }
  }
  const dirs = (env.PATH ?? '').split(delimiter).filter((dir) => isAbsolute(dir))
  for (const name of CHROMIUM_NAMES) {
    for (const dir of dirs) {
      const candidate = join(dir, name)
      if (isExecutableFile(candidate)) return { path: candidate }
    }
  }
  return { path: null, reason: `no Chromium found: CHROMIUM_PATH is not set and none of ${CHROMIUM_NAMES.join(', ')} is on PATH` }
}

/**
 * Whether this run must have a browser, so that a missing one fails instead of skipping:
 * SERVICE_REQUIRE_BROWSER=1 (set by .ci/run), or CI set to anything but "" / "0" / "false"
 * (as CI services do).
 *
 * @param {{ env: Record<string, string | undefined> }} options
 * @returns {boolean}
 */
export function browserRequired({ env }) {
  if (env.SERVICE_REQUIRE_BROWSER === '1') return true
  const ci = (env.CI ?? '').trim().toLowerCase()
  return ci !== '' && ci !== '0' && ci !== 'false'
}

/** @param {string} path */
function isExecutableFile(path) {
  try {
    if (!statSync(path).isFile()) return false
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const found = findChromium({ env: process.env })
  if (found.path === null) {
    console.error(found.reason)
    process.exit(1)
  }
  console.log(found.path)
}
