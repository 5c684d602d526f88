// `service secrets`, `service logs`, `service deploy --dev` and `service functions invoke`
// against the in-process platform over real HTTP, with a real Deno Function: values are read
// from the secret reader (stdin or hidden prompt), never from the command line, and never
// printed.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { manifest, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { capture, startOwnerCli, type OwnerCli } from '../../test/cli-harness.ts'
import { main } from '../main.ts'

const SECRET = 'sk_cli_9d8c7b6a'

const APP_FILES: Record<string, string> = {
  'service.yaml': manifest('clivault', `functions:
  - name: reveal
    entrypoint: functions/reveal.ts
    access: system
secrets:
  API_KEY: required
`),
  'public/index.html': '<h1>cli</h1>',
  'functions/reveal.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({
      input: object({ note: string() }),
      async handler({ input, secrets, log }) {
        const key = await secrets.require('API_KEY')
        log.info('note ' + input.note, { key })
        return { length: key.length, note: input.note }
      },
    })`,
}

describe(`service secrets, logs, deploy --dev and functions invoke (${backend})`, () => {
  let cli: OwnerCli
  let h: Harness
  let env: Record<string, string>
  let dir: string

  before(async () => {
    cli = await startOwnerCli(APP_FILES, 'service-cli-secrets-')
    ;({ h, env, dir } = cli)
  })
  after(() => cli.close())

  /** Runs the CLI with a secret reader that answers `typed` (as stdin or the prompt would). */
  async function run(args: string[], typed?: string) {
    const run = capture(env)
    const prompts: string[] = []
    if (typed !== undefined) {
      run.io.readSecret = async (prompt) => {
        prompts.push(prompt)
        return typed
      }
    }
    const code = await main(args, run.io)
    return { code, out: run.out.join('\n'), err: run.err.join('\n'), prompts }
  }

  test('deploy --dev warns about the unset secret; set reads the value from the reader and never prints it', async () => {
    const deployed = await run(['deploy', dir, '--dev', 'alice'])
    assert.equal(deployed.code, 0, deployed.err)
    assert.match(deployed.out, /release 1 to development namespace alice/)
    assert.match(deployed.err, /service\.yaml:\d+:3 SECRET_NOT_SET warning: the required secret API_KEY/)

    const set = await run(['secrets', 'set', 'API_KEY', '--app', 'clivault', '--dev', 'alice'], SECRET)
    assert.equal(set.code, 0, set.err)
    assert.deepEqual(set.prompts, ['value for API_KEY (input hidden): '])
    assert.equal(set.out, 'set API_KEY for clivault (development namespace alice)')
    assert.ok(!(set.out + set.err).includes(SECRET))

    const list = await run(['secrets', 'list', '--app', 'clivault', '--dev', 'alice'])
    assert.equal(list.code, 0, list.err)
    assert.match(list.out, /^API_KEY\s+required\s+yes\s+2026-/m)
    assert.ok(!list.out.includes(SECRET))
  })

  test('a value on the command line is refused before anything is sent', async () => {
    for (const args of [['secrets', 'set', 'OTHER', '--app', 'clivault', '--value', 'sk_argv'], ['secrets', 'set', 'OTHER', 'sk_argv', '--app', 'clivault']]) {
      const refused = await run(args, 'unused')
      assert.equal(refused.code, 2)
      assert.match(refused.err, /shell history/)
      assert.deepEqual(refused.prompts, [])
    }
    const empty = await run(['secrets', 'set', 'OTHER', '--app', 'clivault'], '')
    assert.equal(empty.code, 1)
    assert.match((await run(['secrets', 'list', '--app', 'clivault'])).out, /no secrets declared or set/)
  })

  test('functions invoke runs the dev Function with the secret; logs show the line with the value redacted', async () => {
    const invoked = await run(['functions', 'invoke', 'reveal', '--app', 'clivault', '--dev', 'alice', '--input', '{"note":"hi"}'])
    assert.equal(invoked.code, 0, invoked.err)
    assert.deepEqual(JSON.parse(invoked.out), { length: SECRET.length, note: 'hi' })
    assert.match(invoked.err, / info {2}reveal note hi \{"key":"\[REDACTED\]"\}/)
    assert.ok(!invoked.err.includes(SECRET))

    const failed = await run(['functions', 'invoke', 'reveal', '--app', 'clivault', '--dev', 'alice', '--input', '{}'])
    assert.equal(failed.code, 1)
    assert.match(failed.err, /^error INPUT_INVALID \(400\): The input is invalid/m)

    const logs = await run(['logs', '--app', 'clivault', '--dev', 'alice', '--function', 'reveal'])
    assert.equal(logs.code, 0, logs.err)
    assert.match(logs.out, /info {2}reveal note hi \{"key":"\[REDACTED\]"\}$/)
    assert.ok(!logs.out.includes(SECRET))
    assert.equal((await run(['logs', '--app', 'clivault', '--level', 'nope'])).code, 1)
  })

  test('the service command reads a piped value from stdin, dropping one trailing newline', async () => {
    const bin = fileURLToPath(new URL('../../bin/service.mjs', import.meta.url))
    const child = spawn(process.execPath, [bin, 'secrets', 'set', 'API_KEY', '--app', 'clivault', '--dev', 'alice'], {
      env: { ...process.env, ...env, SERVICE_CREDENTIALS_FILE: join(dir, 'no-credentials.json') },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.stdin.end(`piped-${SECRET}\n`)
    const code = await new Promise((resolve) => child.on('close', resolve))
    assert.equal(code, 0, output)
    assert.ok(!output.includes(SECRET))
    const invoked = await run(['functions', 'invoke', 'reveal', '--app', 'clivault', '--dev', 'alice', '--input', '{"note":"piped"}'])
    assert.equal(JSON.parse(invoked.out).length, `piped-${SECRET}`.length)
  })

  test('unset removes the value; the app comes from ./service.yaml without --app', async () => {
    const removed = capture(env)
    const cwd = process.cwd()
    process.chdir(dir)
    try {
      assert.equal(await main(['secrets', 'unset', 'API_KEY', '--dev', 'alice'], removed.io), 0, removed.err.join('\n'))
    } finally {
      process.chdir(cwd)
    }
    assert.deepEqual(removed.out, ['removed API_KEY from clivault (development namespace alice)'])
    const again = await run(['secrets', 'unset', 'API_KEY', '--app', 'clivault', '--dev', 'alice'])
    assert.equal(again.code, 1)
    assert.match(again.err, /SECRET_NOT_FOUND/)
  })
})
