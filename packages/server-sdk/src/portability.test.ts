// Static checks that the SDK's source stays runnable in Deno as written: web-standard
// globals only, no Node built-ins, and `.ts` extensions on relative imports. Deno 2
// defines `process` and `Buffer` globals, so running there would not catch their use;
// reading the source does. (deno.test.ts runs the SDK in real Deno.)

import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { test } from 'node:test'

const directory = new URL('./', import.meta.url)
const sources = readdirSync(directory)
  .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.test-d.ts'))
  .map((name) => ({ name, text: readFileSync(new URL(name, directory), 'utf8') }))

/** The source without comments, so prose may mention Buffer or process. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
}

test('the SDK has source files to check', () => {
  assert.ok(sources.some((source) => source.name === 'index.ts'))
  assert.ok(sources.length >= 5)
})

test('SDK source uses no Node built-ins or Node-only globals', () => {
  for (const { name, text } of sources) {
    const body = code(text)
    assert.doesNotMatch(body, /from\s+['"]node:/, `${name} imports a node: module`)
    assert.doesNotMatch(body, /(?<![.\w])require\s*\(\s*['"]/, `${name} calls require`)
    for (const global of ['Buffer', 'process', '__dirname', '__filename', 'global', 'setImmediate']) {
      assert.doesNotMatch(body, new RegExp(`(?<![.\\w'"])${global}\\b(?!['"])`), `${name} uses ${global}`)
    }
  }
})

test('relative imports carry .ts extensions and bare imports are not used', () => {
  for (const { name, text } of sources) {
    for (const match of code(text).matchAll(/\b(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
      const specifier = match[1] ?? ''
      assert.ok(specifier.startsWith('./') && specifier.endsWith('.ts'), `${name} imports ${specifier}`)
    }
  }
})

test('every source file opens with a comment on its purpose', () => {
  for (const { name, text } of sources) assert.match(text, /^(\/\/|\/\*\*)/, name)
})
