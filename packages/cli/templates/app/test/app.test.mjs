// Tests the app where it runs: deploys this directory to the development namespace "test"
// of your platform (its own schema and data; production is untouched), then calls addNote
// there. Run it from this directory, with the platform running and `service login` done (or
// SERVICE_TOKEN set):
//
//   node --test test/
//
// SERVICE_CLI is the command that runs the CLI (default: npx --no-install service).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { before, test } from 'node:test'

const APP_DIR = fileURLToPath(new URL('..', import.meta.url))
const CLI = process.env.SERVICE_CLI || 'npx --no-install service'
const DEV = 'test'

/** Runs `service <args> --json` in the app directory; its exit code, result and error. */
function service(...args) {
  const quoted = [...args, '--json'].map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`).join(' ')
  const run = spawnSync(`${CLI} ${quoted}`, { cwd: APP_DIR, shell: true, encoding: 'utf8' })
  const lastLine = (text) => text.trim().split('\n').filter(Boolean).at(-1)
  const out = lastLine(run.stdout ?? '')
  const err = lastLine(run.stderr ?? '')
  return {
    code: run.status,
    result: out ? JSON.parse(out) : null,
    error: err?.startsWith('{"error"') ? JSON.parse(err).error : null,
  }
}

before(() => {
  const deployed = service('deploy', '.', '--dev', DEV)
  assert.equal(deployed.code, 0, JSON.stringify(deployed.error))
})

test('addNote stores a note for the caller and counts their notes', () => {
  const first = service('functions', 'invoke', 'addNote', '--dev', DEV, '--input', JSON.stringify({ text: 'Buy milk' }))
  assert.equal(first.code, 0, JSON.stringify(first.error))
  assert.equal(first.result.value.note.text, 'Buy milk')
  const second = service('functions', 'invoke', 'addNote', '--dev', DEV, '--input', JSON.stringify({ text: '  Call Ada  ' }))
  assert.equal(second.result.value.note.text, 'Call Ada')
  assert.equal(second.result.value.count, first.result.value.count + 1)
})

test('addNote refuses an empty note and a caller who is not signed in', () => {
  const empty = service('functions', 'invoke', 'addNote', '--dev', DEV, '--input', JSON.stringify({ text: '   ' }))
  assert.equal(empty.code, 1)
  assert.equal(empty.error.code, 'TEXT_INVALID')
  const anonymous = service('functions', 'invoke', 'addNote', '--dev', DEV, '--as', 'anonymous', '--input', JSON.stringify({ text: 'hi' }))
  // access: user: the platform refuses an anonymous caller before the Function runs.
  assert.equal(anonymous.code, 1)
  assert.equal(anonymous.error.code, 'AUTH_REQUIRED')
})
