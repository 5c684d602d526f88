// What a Function writes never drives the terminal (security review, issue #5): `service
// logs` and `service functions invoke` print control characters as visible escapes, and
// `service dev delete` removes a development namespace, after asking on a terminal; without
// one it deletes only with --yes (issue 11). Real HTTP, real Deno, the real command in a
// child process (a pipe, then a pseudo-terminal) for the terminal cases.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { manifest, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { capture, runService, startOwnerCli, type OwnerCli } from '../../test/cli-harness.ts'
import { main } from '../main.ts'
import { formatLogLine, terminalSafe } from './logs.ts'

/** A window title change, a screen clear, a C1 CSI and DEL. */
const HOSTILE = '\x1b]0;pwned\x07\x1b[2J\x9b31m\x7fdone'
const RAW_CONTROLS = /[\x00-\x08\x0a-\x1f\x7f-\x9f]/
/** A stack printed by `functions invoke` keeps its newlines. */
const RAW_CONTROLS_BUT_NEWLINE = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/

const APP_FILES: Record<string, string> = {
  'service.yaml': manifest('clidev', `functions:
  - name: noisy
    entrypoint: functions/noisy.ts
    access: public
`),
  'public/index.html': '<h1>cli</h1>',
  'functions/noisy.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({
      input: object({ mode: string() }),
      handler({ input, log }) {
        log.info(${JSON.stringify(HOSTILE)} + '\\nforged line', { k: ${JSON.stringify(HOSTILE)} })
        if (input.mode === 'throw') throw new Error(${JSON.stringify(HOSTILE)})
        return ${JSON.stringify(HOSTILE)}
      },
    })`,
}

describe('terminalSafe', () => {
  test('turns C0 (but tab), DEL and C1 into visible escapes; a newline stays only when asked', () => {
    assert.equal(terminalSafe('a\x1b[31mb\tc\nd\r\x7f\x9b\x00'), 'a\\x1b[31mb\tc\\nd\\r\\x7f\\x9b\\x00')
    assert.equal(terminalSafe('line 1\nline 2\x1b', { keepNewlines: true }), 'line 1\nline 2\\x1b')
    assert.equal(terminalSafe('plain ü → ok'), 'plain ü → ok')
  })

  test('a log line stays one line with no controls, message and fields alike', () => {
    const line = formatLogLine({ id: '1', time: 't', level: 'info', function: 'f', requestId: 'r', message: `${HOSTILE}\nforged`, fields: { k: HOSTILE } })
    assert.doesNotMatch(line, RAW_CONTROLS)
    assert.match(line, /\\x1b\]0;pwned\\x07/)
  })
})

describe(`service logs, functions invoke and dev delete (${backend})`, () => {
  let cli: OwnerCli
  let h: Harness
  let env: Record<string, string>
  let dir: string

  before(async () => {
    cli = await startOwnerCli(APP_FILES, 'service-cli-dev-')
    ;({ h, env, dir } = cli)
    const created = await h.request('/v1/apps', { token: cli.ownerToken, json: { slug: 'clidev', visibility: 'public' } })
    assert.equal(created.status, 201)
  })
  after(() => cli.close())

  async function run(args: string[]) {
    const run = capture(env)
    const code = await main(args, run.io)
    return { code, out: run.out.join('\n'), err: run.err.join('\n'), lines: [...run.out, ...run.err] }
  }

  test('functions invoke and logs print what the Function wrote without terminal controls', async () => {
    assert.equal((await run(['deploy', dir, '--dev', 'alice'])).code, 0)
    const ok = await run(['functions', 'invoke', 'noisy', '--app', 'clidev', '--dev', 'alice', '--input', '{"mode":"ok"}'])
    assert.equal(ok.code, 0, ok.err)
    const failed = await run(['functions', 'invoke', 'noisy', '--app', 'clidev', '--dev', 'alice', '--input', '{"mode":"throw"}'])
    assert.equal(failed.code, 1)
    const logs = await run(['logs', '--app', 'clidev', '--dev', 'alice'])
    assert.equal(logs.code, 0, logs.err)
    for (const [name, result] of [['invoke', ok], ['invoke failing', failed], ['logs', logs]] as const) {
      for (const line of result.lines) assert.doesNotMatch(line, RAW_CONTROLS_BUT_NEWLINE, `${name}: ${JSON.stringify(line)}`)
      assert.match(result.out + result.err, /\\x1b\]0;pwned\\x07/, name)
    }
    for (const line of logs.lines) assert.doesNotMatch(line, RAW_CONTROLS, 'a log line is one terminal line')
    assert.equal(logs.out.split('\n').filter((line) => line.includes('forged line')).length, 2)
    assert.ok(logs.out.split('\n').every((line) => !line.startsWith('forged line')), 'a newline in a message does not start a line')
  })

  /** Whether the development namespace exists (it has releases), asked of the owner API directly. */
  async function exists(name: string): Promise<boolean> {
    const res = await h.request(`/v1/apps/clidev/dev/${name}/releases`, { token: cli.ownerToken })
    assert.equal(res.status, 200)
    return ((await res.json()) as { releases: unknown[] }).releases.length > 0
  }

  async function deployDev(name: string) {
    const deployed = await run(['deploy', dir, '--dev', name])
    assert.equal(deployed.code, 0, deployed.err)
    assert.ok(await exists(name))
  }

  const childEnv = () => ({ ...env, SERVICE_CREDENTIALS_FILE: join(dir, 'no-credentials.json') })

  test('dev delete without a terminal deletes nothing unless --yes is given', async () => {
    await deployDev('alice')
    const refused = await run(['dev', 'delete', 'alice', '--app', 'clidev'])
    assert.equal(refused.code, 2)
    assert.match(refused.err, /no terminal to ask on, so confirm with --yes\. Nothing was deleted\./)
    assert.ok(await exists('alice'))

    // The real command with stdin on a pipe (a script, CI): refused the same way, "y" on stdin is not an answer.
    const piped = await runService(['dev', 'delete', 'alice', '--app', 'clidev'], { env: childEnv(), input: 'y\n' })
    assert.equal(piped.code, 2, piped.output)
    assert.match(piped.output, /confirm with --yes/)
    assert.ok(await exists('alice'))

    const deleted = await run(['dev', 'delete', 'alice', '--app', 'clidev', '--yes'])
    assert.equal(deleted.code, 0, deleted.err)
    assert.match(deleted.out, /deleted clidev \(development namespace alice\)/)
    assert.equal(await exists('alice'), false)
    const again = await run(['dev', 'delete', 'alice', '--app', 'clidev', '-y'])
    assert.equal(again.code, 1)
    assert.match(again.err, /DEV_NAMESPACE_NOT_FOUND/)
    assert.equal((await run(['dev', 'delete'])).code, 2)
  })

  test('dev delete asks first: no keeps the namespace, yes deletes it', async () => {
    await deployDev('bob')
    const questions: string[] = []
    const ask = (answer: boolean) => {
      const c = capture(env)
      c.io.confirm = async (question) => {
        questions.push(question)
        return answer
      }
      return c
    }
    const declined = ask(false)
    assert.equal(await main(['dev', 'delete', 'bob', '--app', 'clidev'], declined.io), 1)
    assert.deepEqual(declined.err, ['nothing was deleted'])
    assert.ok(await exists('bob'))
    assert.deepEqual(questions, ['delete clidev (development namespace bob) with its schema, data, releases, logs and secrets?'])

    const accepted = ask(true)
    assert.equal(await main(['dev', 'delete', 'bob', '--app', 'clidev'], accepted.io), 0, accepted.err.join('\n'))
    assert.equal(await exists('bob'), false)
    assert.equal(questions.length, 2)
  })

  test('on a real terminal the command asks, and only a typed y deletes', async () => {
    await deployDev('carol')
    const typedNo = await runService(['dev', 'delete', 'carol', '--app', 'clidev'], { env: childEnv(), input: 'n\n', terminal: true })
    assert.equal(typedNo.code, 1, typedNo.output)
    assert.match(typedNo.output, /delete clidev \(development namespace carol\) with its schema, data, releases, logs and secrets\? \[y\/N\]/)
    assert.match(typedNo.output, /nothing was deleted/)
    assert.ok(await exists('carol'))

    const typedYes = await runService(['dev', 'delete', 'carol', '--app', 'clidev'], { env: childEnv(), input: 'y\n', terminal: true })
    assert.equal(typedYes.code, 0, typedYes.output)
    assert.match(typedYes.output, /deleted clidev \(development namespace carol\)/)
    assert.equal(await exists('carol'), false)
  })
})
