// `service init` scaffolds an app that `service validate` accepts and `service deploy`
// deploys to a real platform (served over HTTP, real Deno): the migration applies, the page
// is served, and the scaffold's own test (test/app.test.mjs, run with node --test as a
// builder would, the real `service` command in child processes) passes against it.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { SERVICE_SDK_VERSION } from '@service/server'
import type { Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { BIN, capture, startOwnerCli, type OwnerCli } from '../../test/cli-harness.ts'
import { main } from '../main.ts'

const FILES = [
  'database/migrations/0001_notes.sql',
  'functions/add-note.ts',
  'public/app.js',
  'public/index.html',
  'service.yaml',
  'test/app.test.mjs',
]

describe(`service init (${backend})`, () => {
  let cli: OwnerCli
  let h: Harness
  let env: Record<string, string>
  before(async () => {
    cli = await startOwnerCli({}, 'service-cli-init-')
    ;({ h, env } = cli)
  })
  after(() => cli.close())

  async function run(args: string[]) {
    const c = capture(env)
    const code = await main(args, c.io)
    return { code, out: c.out, err: c.err }
  }

  test('a public scaffold validates, deploys with its migration, serves its page, and its own test passes', async () => {
    const dir = join(cli.dir, 'notes-demo')
    const created = await run(['init', dir])
    assert.equal(created.code, 0, created.err.join('\n'))
    assert.equal(created.out[0], `created public app notes-demo in ${dir} (SDK ${SERVICE_SDK_VERSION}):`)
    assert.deepEqual(created.out.slice(1, 7), FILES.map((file) => `  ${join(dir, file)}`))
    const manifest = readFileSync(join(dir, 'service.yaml'), 'utf8')
    assert.match(manifest, /^schemaVersion: 3$/m)
    assert.match(manifest, /^ {2}id: notes-demo\n {2}name: "Notes Demo"\n {2}visibility: public$/m)
    assert.match(manifest, new RegExp(`^ {4}version: ${SERVICE_SDK_VERSION.replaceAll('.', '\\.')}$`, 'm'))

    const validated = await run(['validate', dir, '--json'])
    assert.equal(validated.code, 0, validated.err.join('\n'))
    assert.deepEqual(JSON.parse(validated.out[0]!), { valid: true, app: 'notes-demo', files: 5, errors: [], warnings: [] })

    const deployed = await run(['deploy', dir, '--json'])
    assert.equal(deployed.code, 0, deployed.err.join('\n'))
    const result = JSON.parse(deployed.out[0]!)
    assert.equal(result.created, true)
    assert.equal(result.release.version, 1)
    assert.deepEqual(result.migrationsApplied, ['0001_notes.sql'])
    assert.equal(result.upload.files, 5)
    const page = await h.request('/', { host: 'notes-demo' })
    assert.equal(page.status, 200)
    assert.match(await page.text(), /<h1>Notes Demo<\/h1>/)

    // The builder's own test, as they would run it: node --test in the app directory.
    // NODE_TEST_CONTEXT would make the child's runner report to this one instead of running.
    const { NODE_TEST_CONTEXT: _context, ...parentEnv } = process.env
    const child = spawn(process.execPath, ['--test', 'test/'], {
      cwd: dir,
      env: { ...parentEnv, ...env, SERVICE_CLI: `'${process.execPath}' '${BIN}'` },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    assert.equal(code, 0, output)
    assert.match(output, /# pass 2\n/)
    const dev = await h.request('/v1/apps/notes-demo/dev/test/releases', { token: cli.ownerToken })
    assert.equal(((await dev.json()) as { releases: unknown[] }).releases.length, 1, 'the scaffold test deployed to the development namespace "test"')
  })

  test('--private scaffolds a private app; --json prints what was written', async () => {
    const dir = join(cli.dir, 'somewhere')
    const created = await run(['init', dir, '--private', '--app', 'team-notes', '--name', 'Team: notes', '--json'])
    assert.equal(created.code, 0, created.err.join('\n'))
    assert.deepEqual(JSON.parse(created.out[0]!), {
      dir,
      app: { id: 'team-notes', name: 'Team: notes', visibility: 'private' },
      sdkVersion: SERVICE_SDK_VERSION,
      files: FILES,
      next: [`service validate ${dir}`, `service deploy ${dir}`, `service dev ${dir} --dev <your name>`, `(cd ${dir} && node --test test/)`],
    })
    assert.match(readFileSync(join(dir, 'public/index.html'), 'utf8'), /<title>Team: notes<\/title>/)
    assert.equal((await run(['validate', dir])).code, 0)
    const deployed = await run(['deploy', dir])
    assert.equal(deployed.code, 0, deployed.err.join('\n'))
    const page = await h.request('/', { host: 'team-notes', headers: { accept: 'text/html' } })
    assert.equal(page.status, 302, 'a private app sends a stranger to sign in')
  })

  test('init refuses a directory with files in it and an app id the platform would refuse', async () => {
    const dir = join(cli.dir, 'taken')
    mkdirSync(dir)
    writeFileSync(join(dir, 'keep.txt'), 'mine')
    const refused = await run(['init', dir, '--json'])
    assert.equal(refused.code, 1)
    assert.deepEqual(refused.out, [])
    const { error } = JSON.parse(refused.err.at(-1)!)
    assert.equal(error.code, 'INIT_DIR_NOT_EMPTY')
    assert.equal(error.next, 'service init <another dir>')
    assert.equal(readFileSync(join(dir, 'keep.txt'), 'utf8'), 'mine')

    const badId = await run(['init', join(cli.dir, 'My_App')])
    assert.equal(badId.code, 2)
    assert.match(badId.err.join('\n'), /"my_app" is not an app id .* name it with --app <id>\nusage: service init <dir>/)
    assert.equal((await run(['init'])).code, 2)
  })
})
