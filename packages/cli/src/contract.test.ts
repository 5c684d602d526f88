// What agents and scripts rely on (issue 18): every command's --json output parses and has
// the shape docs/cli.md documents, errors are one JSON line with the documented exit code
// and the next command, `service --help` and `service <command> --help` answer for every
// command, and docs/cli.md carries every command's usage. A real platform over HTTP.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { manifest, type Harness } from '../../platform/test/harness.ts'
import { backend } from '../../platform/test/test-db.ts'
import { capture, printed, startOwnerCli, type OwnerCli } from '../test/cli-harness.ts'
import { COMMAND_HELP } from './help.ts'
import { main } from './main.ts'

const APP_FILES: Record<string, string> = {
  'service.yaml': manifest('shapes', `functions:
  - name: hello
    entrypoint: functions/hello.ts
    access: public
  - name: tick
    entrypoint: functions/tick.ts
    access: system
cron:
  - name: nightly
    schedule: "30 2 * * *"
    function: tick
secrets:
  API_KEY: required
`, 'private'),
  'public/index.html': '<h1>shapes</h1>',
  'functions/hello.ts': `import { defineFunction, errors, object, string } from '@service/server'
export default defineFunction({
  input: object({ name: string() }),
  handler({ input, log }) {
    log.info('hello called', { name: input.name })
    if (input.name === '') throw errors.badRequest('NAME_EMPTY', 'a name please')
    return { greeting: 'Hello, ' + input.name }
  },
})`,
  'functions/tick.ts': `import { defineFunction, literal, object, string } from '@service/server'
export default defineFunction({ input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }), async handler() { return null } })`,
}

const keys = (value: object) => Object.keys(value).sort()

describe(`--json, errors, exit codes and help (${backend})`, () => {
  let cli: OwnerCli
  let h: Harness
  let env: Record<string, string>
  before(async () => {
    cli = await startOwnerCli(APP_FILES, 'service-cli-contract-')
    ;({ h, env } = cli)
    await h.createOwner('ana@acme.test')
  })
  after(() => cli.close())

  /** Runs `service <args> --json`: the exit code, stdout lines parsed, stderr lines parsed (each must parse). */
  async function json(args: string[], options: { env?: Record<string, string>; secret?: string } = {}) {
    const c = capture(options.env ?? env)
    if (options.secret !== undefined) c.io.readSecret = async () => options.secret!
    const code = await main([...args, '--json'], c.io)
    const out = c.out.map((line) => JSON.parse(line) as Record<string, any>)
    const err = c.err.map((line) => JSON.parse(line) as Record<string, any>)
    return { code, out, err, result: out[0]!, error: err.at(-1)?.error as { code: string; message: string; next?: string; details?: unknown } | undefined }
  }

  test('the app commands print their documented JSON documents', async () => {
    const validated = await json(['validate', cli.dir])
    assert.equal(validated.code, 0)
    assert.deepEqual(keys(validated.result), ['app', 'errors', 'files', 'valid', 'warnings'])

    const deployed = await json(['deploy', cli.dir])
    assert.equal(deployed.code, 0, JSON.stringify(deployed.err))
    assert.deepEqual(keys(deployed.result), ['app', 'created', 'dev', 'migrationsApplied', 'release', 'upload', 'warnings'])
    assert.deepEqual(keys(deployed.result.app), ['id', 'slug', 'url'])
    assert.deepEqual(keys(deployed.result.upload), ['bytes', 'files'])
    assert.ok(deployed.err.every((line) => typeof line.notice === 'string'), 'progress is notices')
    assert.ok(deployed.err.some((line) => /^uploading 4 files/.test(line.notice)))

    const apps = await json(['apps', 'list'])
    assert.deepEqual(apps.result.apps.map((a: { slug: string }) => a.slug), ['shapes'])
    const releases = await json(['releases', 'list', 'shapes'])
    assert.deepEqual(keys(releases.result), ['releases'])
    assert.equal(releases.result.releases[0].version, 1)

    const devDeployed = await json(['deploy', cli.dir, '--dev', 'alice'])
    assert.equal(devDeployed.result.dev, 'alice')
    assert.equal((await json(['releases', 'list', 'shapes', '--dev', 'alice'])).result.releases.length, 1)

    const invoked = await json(['functions', 'invoke', 'hello', '--app', 'shapes', '--dev', 'alice', '--input', '{"name":"Ada"}'])
    assert.equal(invoked.code, 0)
    assert.deepEqual(keys(invoked.result), ['logs', 'ok', 'requestId', 'value'])
    assert.deepEqual(invoked.result.value, { greeting: 'Hello, Ada' })
    const failed = await json(['functions', 'invoke', 'hello', '--app', 'shapes', '--dev', 'alice', '--input', '{"name":""}'])
    assert.equal(failed.code, 1)
    assert.equal(failed.result.ok, false)
    assert.equal(failed.error?.code, 'NAME_EMPTY')

    const logs = await json(['logs', '--app', 'shapes', '--dev', 'alice'])
    assert.deepEqual(keys(logs.result), ['logs', 'nextCursor'])
    assert.deepEqual(keys(logs.result.logs[0]), ['fields', 'function', 'id', 'level', 'message', 'releaseId', 'requestId', 'time'])

    const unset = await json(['secrets', 'list', '--app', 'shapes'])
    assert.deepEqual(unset.err, [{ notice: 'warning: API_KEY required but not set; set with: service secrets set <NAME>' }])
    const set = await json(['secrets', 'set', 'API_KEY', '--app', 'shapes'], { secret: 's3cret-value' })
    assert.deepEqual(keys(set.result.secret), ['declared', 'name', 'required', 'set', 'updatedAt'])
    const secrets = await json(['secrets', 'list', '--app', 'shapes'])
    assert.deepEqual(secrets.result.secrets.map((s: { name: string }) => s.name), ['API_KEY'])
    assert.doesNotMatch(JSON.stringify(secrets), /s3cret-value/)
    assert.deepEqual((await json(['secrets', 'unset', 'API_KEY', '--app', 'shapes'])).result, { removed: 'API_KEY' })

    const next = await json(['cron', 'next', '30 2 * * *', '--tz', 'Europe/Berlin', '--from', '2026-03-28T12:00Z', '--count', '2'])
    assert.deepEqual(next.result, { next: ['2026-03-29T03:00:00+02:00', '2026-03-30T02:30:00+02:00'] })
    const cron = await json(['cron', 'list', 'shapes'])
    assert.deepEqual(keys(cron.result.cron[0]), ['enabled', 'function', 'lastJobId', 'lastScheduledAt', 'name', 'nextRunAt', 'nextRunAtLocal', 'schedule', 'timezone'])
    const run = await json(['cron', 'run', 'shapes', 'nightly'])
    assert.deepEqual(keys(run.result.run), ['cron', 'jobId', 'scheduledAt'])

    const jobs = await json(['jobs', 'list', '--app', 'shapes'])
    assert.deepEqual(keys(jobs.result), ['from', 'jobs', 'nextCursor', 'to', 'totals'])
    const job = jobs.result.jobs.find((j: { id: string }) => j.id === run.result.run.jobId)
    assert.deepEqual(keys(job), ['attempts', 'createdAt', 'finishedAt', 'id', 'kind', 'lastError', 'maxAttempts', 'queue', 'runAt', 'startedAt', 'state', 'updatedAt'])
    assert.equal(job.queue, 'cron:nightly')
    const one = await json(['jobs', 'get', job.id, '--app', 'shapes'])
    assert.deepEqual(one.result, { job })
    const missing = await json(['jobs', 'get', '00000000-0000-4000-8000-000000000000', '--app', 'shapes', '--dev', 'alice'])
    assert.equal(missing.code, 1)
    assert.equal(missing.error?.code, 'JOB_NOT_FOUND')
    assert.equal(missing.error?.next, 'service jobs list --app shapes --dev alice')

    const deleted = await json(['dev', 'delete', 'alice', '--app', 'shapes', '--yes'])
    assert.deepEqual(deleted.result, { deleted: 'alice', app: 'shapes' })
  })

  test('the sharing, token, integration and operator commands print their documented JSON documents', async () => {
    const added = await json(['grants', 'add', 'shapes', 'ana@acme.test'])
    assert.equal(added.code, 0, JSON.stringify(added.err))
    assert.deepEqual(keys(added.result.grant), ['email', 'userId'])
    const grants = await json(['grants', 'list', 'shapes'])
    assert.deepEqual(grants.result.grants.map((g: { email: string }) => g.email), ['ana@acme.test'])
    assert.deepEqual(keys(grants.result.grants[0]), ['createdAt', 'email', 'userId'])
    const access = await json(['access', 'list', 'shapes'])
    assert.deepEqual(keys(access.result), ['members', 'owner'])
    assert.deepEqual(access.result.members.map((m: { email: string; role: string }) => [m.email, m.role]), [['ana@acme.test', 'use']])
    const edit = await json(['access', 'set', 'shapes', 'ana@acme.test', 'edit'])
    assert.deepEqual(keys(edit.result.member), ['createdAt', 'email', 'role', 'roles', 'updatedAt', 'userId'])
    assert.deepEqual((await json(['access', 'remove', 'shapes', 'ana@acme.test'])).result, { removed: 'ana@acme.test' })
    assert.equal((await json(['grants', 'add', 'shapes', 'ana@acme.test'])).code, 0)
    assert.deepEqual((await json(['grants', 'remove', 'shapes', 'ana@acme.test'])).result, { removed: 'ana@acme.test' })
    assert.deepEqual((await json(['grants', 'list', 'shapes'])).result, { grants: [] })

    const created = await json(['app', 'access-token', 'create', 'shapes', '--name', 'ci'])
    assert.deepEqual(keys(created.result), ['revealUrl', 'token'])
    assert.doesNotMatch(JSON.stringify(created), /svc_app_/, 'never the token itself')
    const tokens = await json(['app', 'access-token', 'list', 'shapes'])
    assert.deepEqual(keys(tokens.result.tokens[0]), ['createdAt', 'id', 'lastUsedAt', 'name'])
    assert.deepEqual((await json(['app', 'access-token', 'revoke', 'shapes', created.result.token.id])).result, { revoked: created.result.token.id })

    assert.deepEqual((await json(['integrations', 'list', 'shapes'])).result, { slots: [] })
    assert.deepEqual((await json(['connections', 'list'])).result, { connections: [] })

    const user = await json(['operator', 'create-user', '--email', 'ops@acme.test', '--company', 'Acme'], { env: { ...env, SERVICE_OPERATOR_KEY: h.operatorKey } })
    assert.deepEqual(keys(user.result), ['token', 'user'])
    assert.match(user.result.token, /^svc_owner_/)

    const { SERVICE_TOKEN: _token, ...noToken } = env
    const signedOut = await json(['logout'], { env: { ...noToken, SERVICE_CREDENTIALS_FILE: `${cli.dir}/none.json` } })
    assert.deepEqual(signedOut.result, { signedOut: false })

    // request: the approval link first, then (here, unapproved) REQUEST_EXPIRED naming the command to run again.
    const request = capture({ ...noToken, SERVICE_POLL_INTERVAL_MS: '10', SERVICE_CREDENTIALS_FILE: `${cli.dir}/none.json` })
    const requesting = main(['app', 'access-token', 'request', 'shapes', '--json'], request.io)
    await printed(request.out, /"approveUrl"/)
    assert.deepEqual(keys(JSON.parse(request.out[0]!)), ['approveUrl', 'expiresAt'])
    h.clock.advance(16 * 60 * 1000)
    assert.equal(await requesting, 1)
    assert.deepEqual(JSON.parse(request.err.at(-1)!).error, {
      code: 'REQUEST_EXPIRED', message: 'the request was not approved in time', next: 'service app access-token request shapes',
    })
    h.clock.advance(-16 * 60 * 1000)
    const documented = /request: (\{[^}]*\}) first/.exec(COMMAND_HELP.app!.json)?.[1] ?? ''
    assert.deepEqual([...documented.matchAll(/"(\w+)"/g)].map((m) => m[1]).sort(), ['approveUrl', 'expiresAt'],
      'the help documents the first line request prints')
  })

  test('errors are one JSON line with the documented exit code and the next command', async () => {
    const usage = await json(['deploy'])
    assert.equal(usage.code, 2)
    assert.deepEqual(usage.out, [])
    assert.equal(usage.error?.code, 'USAGE')
    assert.match((usage.error?.details as { usage: string }).usage, /^usage: service deploy <dir>/)
    assert.equal((await json(['launch', 'rockets'])).code, 2)
    assert.equal((await json(['apps', 'list', '--bogus'])).code, 2)

    const { SERVICE_TOKEN: _token, ...noToken } = env
    const unauthenticated = await json(['apps', 'list'], { env: { ...noToken, SERVICE_CREDENTIALS_FILE: `${cli.dir}/none.json` } })
    assert.equal(unauthenticated.code, 3)
    assert.equal(unauthenticated.error?.code, 'UNAUTHENTICATED')
    assert.match(unauthenticated.error?.next ?? '', /^service login/)
    // An app access token where an owner token belongs is the same mistake: exit 3, same next step.
    const appToken = await json(['apps', 'list'], { env: { ...env, SERVICE_TOKEN: `svc_app_${'x'.repeat(43)}` } })
    assert.equal(appToken.code, 3)
    assert.equal(appToken.error?.code, 'APP_TOKEN_NOT_ALLOWED')
    assert.equal(appToken.error?.next, 'service login (or set SERVICE_TOKEN to an owner API token)')

    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const unreachable = await json(['apps', 'list'], { env: { ...env, SERVICE_URL: `http://127.0.0.1:${port}` } })
    assert.equal(unreachable.code, 4)
    assert.equal(unreachable.error?.code, 'PLATFORM_UNREACHABLE')
    assert.match(unreachable.error?.next ?? '', /SERVICE_URL/)

    const notFound = await json(['releases', 'list', 'nowhere'])
    assert.equal(notFound.code, 1)
    assert.equal(notFound.error?.code, 'APP_NOT_FOUND')
    assert.match(notFound.error?.next ?? '', /^service apps list/)
    const noManifest = await json(['deploy', `${cli.dir}/public`])
    assert.equal(noManifest.code, 1)
    assert.deepEqual(noManifest.error, {
      code: 'BUNDLE_MANIFEST_MISSING', message: `${cli.dir}/public/service.yaml does not exist: the directory has no service.yaml`, next: `service init ${cli.dir}/public`,
    })
    const noNamespace = await json(['logs', '--app', 'shapes', '--dev', 'nobody'])
    assert.equal(noNamespace.code, 0, 'an empty namespace has no lines, not an error')
    const human = capture(env)
    assert.equal(await main(['jobs', 'get', '00000000-0000-4000-8000-000000000000', '--app', 'shapes'], human.io), 1)
    assert.deepEqual(human.err, ['error JOB_NOT_FOUND: no job "00000000-0000-4000-8000-000000000000" in this app namespace', 'next: service jobs list --app shapes'])
  })

  test('service --help lists every command; service <command> --help and service help <command> print its usage, --json shape and exit codes', async () => {
    const general = capture(env)
    assert.equal(await main(['--help'], general.io), 0)
    for (const name of Object.keys(COMMAND_HELP)) assert.match(general.out[0]!, new RegExp(`^  ${name} +\\S`, 'm'), name)
    assert.match(general.out[0]!, /exit codes: +0 ok, 1 failed/)

    for (const [name, help] of Object.entries(COMMAND_HELP)) {
      for (const args of [[name, '--help'], ['help', name], [name, 'list', '-h']]) {
        const c = capture(env)
        assert.equal(await main(args, c.io), 0, args.join(' '))
        const text = c.out.join('\n')
        assert.ok(text.startsWith(`usage: ${help.usage[0]}\n`), `${args.join(' ')}: ${text.slice(0, 80)}`)
        for (const line of help.usage) assert.ok(text.includes(line), line)
        assert.match(text, /--json prints: /)
        assert.match(text, /exit codes: +0 ok/)
      }
    }
    const unknown = capture(env)
    assert.equal(await main(['nope', '--help'], unknown.io), 0)
    assert.match(unknown.out[0]!, /^usage: service <command>/)
    const none = capture(env)
    assert.equal(await main([], none.io), 2)
    assert.match(none.err[0]!, /^usage: service <command>/)
  })

  test('service --version and -V print the CLI\'s version and the public CLI version whose commands it has', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
    for (const flag of ['--version', '-V']) {
      const c = capture(env)
      assert.equal(await main([flag], c.io), 0, c.err.join('\n'))
      assert.deepEqual(c.out, [`service ${version} (commands of public CLI v3.10.3)`])
      assert.deepEqual(c.err, [])
    }
    const asJson = await json(['--version'])
    assert.equal(asJson.code, 0)
    assert.deepEqual(asJson.result, { version, publicCliVersion: '3.10.3' })
  })

  test('docs/cli.md documents every command\'s usage, --json shape and each exit code', () => {
    const doc = readFileSync(new URL('../../../docs/cli.md', import.meta.url), 'utf8')
    for (const help of Object.values(COMMAND_HELP)) for (const line of help.usage) assert.ok(doc.includes(line), line)
    // The commands section is generated from help.ts (newlines become spaces), so the shapes agree.
    const flat = (text: string) => text.replace(/\s+/g, ' ')
    for (const [name, help] of Object.entries(COMMAND_HELP)) assert.ok(flat(doc).includes(`\`--json\` prints: ${flat(help.json)}`), `${name}: --json shape`)
    for (const code of [0, 1, 2, 3, 4, 130]) assert.match(doc, new RegExp(`^\\| ${code} \\|`, 'm'), String(code))
  })
})
