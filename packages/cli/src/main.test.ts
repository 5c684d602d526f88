import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { ServerType } from '@hono/node-server'
import { startHarness, type Harness } from '../../platform/test/harness.ts'
import { backend } from '../../platform/test/test-db.ts'
import { capture, serveHarness } from '../test/cli-harness.ts'
import { main } from './main.ts'

function appDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}

describe(`the service CLI over HTTP (${backend})`, () => {
  let h: Harness
  let server: ServerType
  let env: Record<string, string>
  before(async () => {
    h = await startHarness()
    let url: string
    ;({ server, url } = await serveHarness(h))
    env = { SERVICE_URL: url, SERVICE_OPERATOR_KEY: h.operatorKey }
  })
  after(async () => {
    server.close()
    await h.close()
  })

  test('validate prints file:line:col code message for each problem and exits non-zero', async () => {
    const dir = appDir({ 'service.yaml': 'schemaVersion: 3\napp:\n  id: demo\n  colour: red\nruntime:\n  sdk:\n    version: 2.3.0\n' })
    const { io, err } = capture(env)
    assert.equal(await main(['validate', dir], io), 1)
    assert.match(err[0]!, new RegExp(`^${dir}/service\\.yaml:4:3 MANIFEST_UNKNOWN_FIELD `))
  })

  test('validate accepts the example app and exits 0', async () => {
    const { io, out } = capture(env)
    assert.equal(await main(['validate', new URL('../../../examples/tasks', import.meta.url).pathname], io), 0)
    assert.match(out[0]!, /valid \(app tasks/)
  })

  test('validate reports a directory without a manifest', async () => {
    const { io, err } = capture(env)
    assert.equal(await main(['validate', appDir({ 'public/index.html': 'x' })], io), 1)
    assert.match(err[0]!, /BUNDLE_MANIFEST_MISSING/)
  })

  test('operator create-user prints a token once; deploy, apps list and releases list use it', async () => {
    const created = capture(env)
    assert.equal(await main(['operator', 'create-user', '--email', 'cli@acme.test', '--company', 'Acme'], created.io), 0)
    const token = created.out.find((l) => l.startsWith('svc_owner_'))
    assert.ok(token)
    const withToken = { ...env, SERVICE_TOKEN: token }

    const dir = appDir({
      'service.yaml': 'schemaVersion: 3\napp:\n  id: cli-demo\n  visibility: public\nruntime:\n  sdk:\n    version: 2.3.0\n',
      'public/index.html': '<p>from the cli</p>',
    })
    const deployed = capture(withToken)
    assert.equal(await main(['deploy', dir], deployed.io), 0, deployed.err.join('\n'))
    assert.deepEqual(deployed.out, ['deployed cli-demo release 1: http://cli-demo.localhost:8787'])
    assert.match(deployed.err.join('\n'), /^created app cli-demo\nuploading 2 files \(\d+ B\) to cli-demo \(production\)\.\.\.\nno new migrations\nrelease 1 is live \(\d+\.\d s\)$/)
    assert.equal(await (await h.request('/', { host: 'cli-demo' })).text(), '<p>from the cli</p>')

    const again = capture(withToken)
    assert.equal(await main(['deploy', dir], again.io), 0)
    assert.deepEqual(again.out, ['deployed cli-demo release 2: http://cli-demo.localhost:8787'])

    const list = capture(withToken)
    assert.equal(await main(['apps', 'list'], list.io), 0)
    assert.match(list.out[0]!, /^cli-demo\s+public\s+active\s+http:\/\/cli-demo\.localhost:8787$/)

    const releases = capture(withToken)
    assert.equal(await main(['releases', 'list', 'cli-demo'], releases.io), 0)
    assert.equal(releases.out.length, 2)
    assert.match(releases.out[0]!, /^\s+2 active/)
  })

  test('a failed migration is printed with its file, line and SQLSTATE', async () => {
    const created = capture(env)
    await main(['operator', 'create-user', '--email', 'mig@acme.test', '--company', 'Acme'], created.io)
    const token = created.out.find((l) => l.startsWith('svc_owner_'))!
    const dir = appDir({
      'service.yaml': 'schemaVersion: 3\napp:\n  id: broken\nruntime:\n  sdk:\n    version: 2.3.0\n',
      'database/migrations/0001_bad.sql': 'create table ok (id int);\nselect * from missing_table;\n',
    })
    const run = capture({ ...env, SERVICE_TOKEN: token })
    assert.equal(await main(['deploy', dir], run.io), 1)
    assert.match(run.err.join('\n'), /error MIGRATION_FAILED/)
    assert.match(run.err.join('\n'), /database\/migrations\/0001_bad\.sql:2:\d+ SQLSTATE 42P01/)
  })

  test('without a token the owner API refusal is printed with the next command, exit 3', async () => {
    const { io, err } = capture(env)
    assert.equal(await main(['apps', 'list'], io), 3)
    assert.match(err[0]!, /^error UNAUTHENTICATED/)
    assert.match(err.at(-1)!, /^next: service login/)
  })

  test('an unknown command prints usage and exits 2', async () => {
    const { io, err } = capture(env)
    assert.equal(await main(['launch', 'rockets'], io), 2)
    assert.match(err[0]!, /unknown command/)
  })
})
