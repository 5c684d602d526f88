// `service dev <dir> --dev <name>` and `service logs --follow` against a real platform
// (served over HTTP, real Deno): a save redeploys (a new release, the new code runs), a
// file outside the bundle does not, a broken save is reported and the loop goes on, the
// namespace's log lines stream once each, and Ctrl-C (the signal) ends it with exit 130.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { manifest, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { BIN, capture, printed, startOwnerCli, type OwnerCli } from '../../test/cli-harness.ts'
import { main } from '../main.ts'
import { isBundlePath } from './dev.ts'

const greet = (version: string) => `
  import { defineFunction, object } from '@service/server'
  export default defineFunction({
    input: object({}),
    handler({ log }) {
      log.info('greeting ${version}')
      return '${version}'
    },
  })`

const MANIFEST = manifest('devloop', `functions:
  - name: greet
    entrypoint: functions/greet.ts
    access: public
`)

describe('isBundlePath', () => {
  test('only service.yaml and files under functions/, public/ and database/migrations/ trigger a deploy', () => {
    for (const path of ['service.yaml', 'functions/a.ts', 'public/index.html', 'database/migrations/0001_a.sql', 'public\\app.js']) {
      assert.ok(isBundlePath(path), path)
    }
    for (const path of ['README.md', 'test/app.test.mjs', 'functions/.a.ts.swp', '.git/index', 'public/node_modules/x.js', 'database/seed.sql']) {
      assert.ok(!isBundlePath(path), path)
    }
  })
})

describe(`service dev and logs --follow (${backend})`, () => {
  let cli: OwnerCli
  let h: Harness
  let env: Record<string, string>
  let dir: string
  before(async () => {
    cli = await startOwnerCli({ 'service.yaml': MANIFEST, 'public/index.html': '<h1>dev</h1>', 'functions/greet.ts': greet('v1') }, 'service-cli-devloop-')
    ;({ h, env, dir } = cli)
    env = { ...env, SERVICE_POLL_INTERVAL_MS: '50' }
  })
  after(() => cli.close())

  /** Starts a long-running command; `stop()` is its Ctrl-C and resolves to its exit code. */
  function start(args: string[]) {
    const controller = new AbortController()
    const c = capture(env)
    const io = { ...c.io, signal: controller.signal }
    const running = main(args, io)
    return {
      out: c.out,
      err: c.err,
      async stop() {
        controller.abort()
        return await running
      },
    }
  }

  async function invoke(): Promise<string> {
    const c = capture(env)
    assert.equal(await main(['functions', 'invoke', 'greet', '--app', 'devloop', '--dev', 'alice', '--json'], c.io), 0, c.err.join('\n'))
    return JSON.parse(c.out[0]!).value as string
  }

  async function releases(): Promise<number> {
    const res = await h.request('/v1/apps/devloop/dev/alice/releases', { token: cli.ownerToken })
    return ((await res.json()) as { releases: unknown[] }).releases.length
  }

  const count = (lines: string[], pattern: RegExp) => lines.filter((line) => pattern.test(line)).length
  const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  test('dev deploys, redeploys on save, streams the logs, survives a broken save, and stops on Ctrl-C', async () => {
    const dev = start(['dev', dir, '--dev', 'alice'])
    await printed(dev.out, /^deployed devloop release 1 to development namespace alice; watching /)
    assert.match(dev.err.join('\n'), /^created app devloop\nuploading 3 files/m)
    assert.equal(await invoke(), 'v1')
    await printed(dev.out, /info {2}greet greeting v1$/)

    writeFileSync(join(dir, 'functions/greet.ts'), greet('v2'))
    await printed(dev.out, /^deployed devloop release 2 /)
    assert.match(dev.err.join('\n'), /^changed: functions\/greet\.ts; deploying\.\.\.$/m)
    assert.equal(await invoke(), 'v2')
    await printed(dev.out, /greeting v2$/)

    // Not part of the bundle: no deploy.
    writeFileSync(join(dir, 'NOTES.md'), 'not deployed')
    await settle(1000)
    assert.equal(await releases(), 2)

    writeFileSync(join(dir, 'service.yaml'), MANIFEST.replace('access: public', 'access: everyone'))
    await printed(dev.err, /^error MANIFEST_INVALID: .*service\.yaml has 1 problem\(s\); nothing was deployed \(the namespace keeps its last release; fix and save\)$/)
    assert.equal(await releases(), 2)
    writeFileSync(join(dir, 'service.yaml'), MANIFEST)
    await printed(dev.out, /^deployed devloop release 3 /)

    assert.equal(await dev.stop(), 130)
    assert.equal(count(dev.out, /greeting v1$/), 1, 'each log line once')
    assert.equal(count(dev.out, /greeting v2$/), 1, 'each log line once')
    assert.equal(await releases(), 3)
  })

  test('dev --json prints one event a line: deployed, then the log lines', async () => {
    const dev = start(['dev', dir, '--dev', 'alice', '--json'])
    await printed(dev.out, /"event":"deployed"/)
    await invoke()
    await printed(dev.out, /"event":"log"/)
    assert.equal(await dev.stop(), 130)
    const events = dev.out.map((line) => JSON.parse(line))
    assert.equal(events[0].event, 'deployed')
    assert.equal(events[0].dev, 'alice')
    assert.deepEqual(events[0].upload.files, 3)
    const log = events.find((e) => e.event === 'log')
    assert.match(log.message, /^greeting v\d$/)
    assert.equal(log.function, 'greet')
    for (const line of dev.err) assert.ok(JSON.parse(line).notice, line)
  })

  test('logs --follow prints the newest lines, then each new line once, until Ctrl-C', async () => {
    await invoke()
    const follow = start(['logs', '--app', 'devloop', '--dev', 'alice', '--follow'])
    await printed(follow.err, /^following devloop \(development namespace alice\); Ctrl-C to stop$/)
    const before = follow.out.length
    assert.ok(before > 0, 'the newest lines first')
    await invoke()
    await invoke()
    for (let i = 0; i < 200 && follow.out.length < before + 2; i++) await settle(25)
    await settle(300)
    assert.equal(await follow.stop(), 130)
    assert.equal(follow.out.length, before + 2, follow.out.join('\n'))
    assert.match(follow.out.at(-1)!, /info {2}greet greeting v\d$/)

    const json = start(['logs', '--app', 'devloop', '--dev', 'alice', '--follow', '--json', '--limit', '1'])
    await printed(json.out, /"message":"greeting v\d"/)
    await invoke()
    for (let i = 0; i < 200 && json.out.length < 2; i++) await settle(25)
    assert.equal(await json.stop(), 130)
    assert.equal(json.out.length, 2)
    for (const line of json.out) assert.deepEqual(Object.keys(JSON.parse(line)).sort(), ['fields', 'function', 'id', 'level', 'message', 'releaseId', 'requestId', 'time'])

    const refused = capture(env)
    assert.equal(await main(['logs', '--app', 'devloop', '--follow', '--to', '2026-11-21T12:00:00Z'], refused.io), 2)
  })

  test('the real command stops on Ctrl-C (SIGINT) with exit 130', async () => {
    const child = spawn(process.execPath, [BIN, 'logs', '--app', 'devloop', '--dev', 'alice', '--follow'], {
      env: { ...process.env, ...env, SERVICE_CREDENTIALS_FILE: join(dir, 'none.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve))
    for (let i = 0; i < 600 && !stderr.includes('Ctrl-C to stop'); i++) await settle(50)
    assert.match(stderr, /following devloop \(development namespace alice\); Ctrl-C to stop/)
    child.kill('SIGINT')
    assert.equal(await closed, 130, stderr)
  })
})
