// Runs the whole test suite with Node's test runner (TypeScript through tsx).
// Usage: npm test [-- <substring> ...]   e.g. npm test -- manifest deploy
// Test files are every *.test.ts below packages/, examples/ and scripts/.
//
// The real-browser tests need Chromium (found by scripts/find-chromium.mjs). Without one
// they skip, and this runner ends with one line saying so and how to install it; under CI
// (CI or SERVICE_REQUIRE_BROWSER=1) they fail instead, and the line says why.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { spawnSync } from 'node:child_process'
import { CHROMIUM_INSTALL_HINT, browserRequired, findChromium } from './find-chromium.mjs'

const root = new URL('..', import.meta.url).pathname
const filters = process.argv.slice(2)

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path, out)
    else if (name.endsWith('.test.ts')) out.push(relative(root, path))
  }
  return out
}

const files = ['packages', 'examples', 'scripts'].flatMap((d) => walk(join(root, d), []))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort()
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`)
  process.exit(1)
}
const result = spawnSync(process.execPath, [
  '--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files,
], { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } })

// The same lookup the browser harness makes, so this line tells what those files did.
const browserFiles = files.filter((f) => readFileSync(join(root, f), 'utf8').includes('startBrowserHarness('))
const chromium = findChromium({ env: process.env })
if (browserFiles.length > 0 && chromium.path === null) {
  const what = `${browserFiles.length} real-browser test file${browserFiles.length === 1 ? '' : 's'}`
  if (browserRequired({ env: process.env })) {
    console.error(`\n!!! FAILED ${what}: ${chromium.reason}; this run requires a browser (CI or SERVICE_REQUIRE_BROWSER=1): ${CHROMIUM_INSTALL_HINT}`)
  } else {
    console.error(`\n!!! SKIPPED ${what} (${browserFiles.join(', ')}): ${chromium.reason}; to run them, ${CHROMIUM_INSTALL_HINT}`)
  }
}
process.exit(result.status ?? 1)
