// Runs the SDK inside real Deno, where Functions run: a script (passed on stdin, so no
// file is written) imports src/index.ts with read access to this package only, defines a
// Function and runs it on good and bad input. The Deno binary is `DENO_BIN`, else the
// workspace's node_modules/.bin/deno, else `deno` on PATH; without one the test is
// skipped and says so.

import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'

const packageDirectory = fileURLToPath(new URL('..', import.meta.url))
const indexUrl = new URL('./index.ts', import.meta.url).href

function findDeno(): string | null {
  const fromEnvironment = process.env['DENO_BIN']
  if (fromEnvironment) return fromEnvironment
  const workspace = fileURLToPath(new URL('../../../node_modules/.bin/deno', import.meta.url))
  if (existsSync(workspace)) return workspace
  const onPath = spawnSync('deno', ['--version'], { encoding: 'utf8' })
  return onPath.status === 0 ? 'deno' : null
}

const SCRIPT = `
import { SERVICE_SDK_VERSION, defineFunction, errors, isServiceError, object, optional, runFunction, string, uuid } from ${JSON.stringify(indexUrl)}
import * as sdk from ${JSON.stringify(indexUrl)}

const fn = defineFunction({
  input: object({ taskId: uuid(), note: optional(string({ maxLength: 5 })), level: optional(sdk.enum(['low', 'high'])) }),
  handler: ({ input, requestId }) => {
    if (input.note === 'fail') throw errors.unavailable('UPSTREAM_DOWN', 'try again')
    return { taskId: input.taskId, requestId, sdk: SERVICE_SDK_VERSION }
  },
})
const context = { http: null, user: null, job: null, data: {}, files: {}, ai: {}, email: {}, notifications: {}, jobs: {},
  integrations: {}, secrets: {}, log: console, requestId: 'req-deno', environment: 'development', integration: null }
const outcome = async (input) => {
  try { return { ok: await runFunction(fn, input, context) } }
  catch (error) { return { error: isServiceError(error) ? error.toJSON() : String(error), retryable: error.retryable } }
}
let definitionError = null
try { defineFunction(() => 1) } catch (error) { definitionError = error.name }
console.log(JSON.stringify({
  deno: Deno.version.deno,
  good: await outcome({ taskId: '6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f', level: 'high' }),
  bad: await outcome({ taskId: 'nope', note: 'too long', extra: 1 }),
  thrown: await outcome({ taskId: '6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f', note: 'fail' }),
  definitionError,
}))
`

const deno = findDeno()

test('the SDK runs in real Deno: good input reaches the handler, bad input fails with paths', { skip: deno === null ? 'no Deno binary (set DENO_BIN)' : false }, () => {
  const run = spawnSync(deno ?? 'deno', ['run', '--no-prompt', `--allow-read=${packageDirectory}`, '--ext=js', '-'], {
    input: SCRIPT,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
    timeout: 60_000,
  })
  assert.equal(run.status, 0, run.stderr)
  const output = JSON.parse(run.stdout) as Record<string, unknown>
  assert.match(String(output['deno']), /^2\./)
  assert.deepEqual(output['good'], { ok: { taskId: '6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f', requestId: 'req-deno', sdk: '2.6.0' } })
  const bad = output['bad'] as { error: { code: string; status: number; details: { issues: { path: unknown[]; code: string }[] } } }
  assert.equal(bad.error.code, 'INPUT_INVALID')
  assert.equal(bad.error.status, 400)
  assert.deepEqual(
    bad.error.details.issues.map((issue) => [issue.path, issue.code]),
    [[['taskId'], 'INVALID_UUID'], [['note'], 'TOO_LONG'], [['extra'], 'UNKNOWN_FIELD']],
  )
  assert.deepEqual(output['thrown'], { error: { code: 'UPSTREAM_DOWN', message: 'try again', status: 503 }, retryable: true })
  assert.equal(output['definitionError'], 'FunctionDefinitionError')
})
