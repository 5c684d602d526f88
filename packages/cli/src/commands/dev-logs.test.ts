// What a Function writes never drives the terminal (security review, issue #5): `service
// logs` and `service functions invoke` print control characters as visible escapes, and
// `service dev delete` removes a development namespace. Real HTTP, real Deno.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { manifest, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { capture, startOwnerCli, type OwnerCli } from '../../test/cli-harness.ts'
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
    const line = formatLogLine({ time: 't', level: 'info', function: 'f', requestId: 'r', message: `${HOSTILE}\nforged`, fields: { k: HOSTILE } })
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

  test('dev delete removes the development namespace', async () => {
    const deleted = await run(['dev', 'delete', 'alice', '--app', 'clidev'])
    assert.equal(deleted.code, 0, deleted.err)
    assert.match(deleted.out, /deleted clidev \(development namespace alice\)/)
    const again = await run(['dev', 'delete', 'alice', '--app', 'clidev'])
    assert.equal(again.code, 1)
    assert.match(again.err, /DEV_NAMESPACE_NOT_FOUND/)
    assert.equal((await run(['dev', 'delete'])).code, 2)
  })
})
