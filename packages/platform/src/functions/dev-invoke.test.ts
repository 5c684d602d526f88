/**
 * Development namespaces end to end, with real Deno: a deploy into `dev/<name>` gets its
 * own schema, roles and release numbering and leaves production alone; the owner invokes
 * any of its Functions (system ones too) as the owner or anonymously, with development
 * error detail and the invocation's log lines; and the logs owner API pages a namespace's
 * lines newest first with its filters. Another owner, app tokens and bad input are refused.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug } from '../apps/apps.ts'

const FUNCTIONS = `functions:
  - name: whoami
    entrypoint: functions/whoami.ts
    access: user
  - name: peek
    entrypoint: functions/whoami.ts
    access: public
  - name: sweep
    entrypoint: functions/sweep.ts
    access: system
  - name: fail
    entrypoint: functions/fail.ts
    access: public
  - name: chatty
    entrypoint: functions/chatty.ts
    access: public
`

const SQL = `create table notes (id serial primary key, owner_id uuid default auth.uid(), body text not null);
alter table notes enable row level security;
create policy notes_all on notes for all using (owner_id = auth.uid() or auth.is_system()) with check (owner_id = auth.uid() or auth.is_system());
create view whoami as select 1 as id, auth.uid() as uid, auth.is_system() as system;
`

function files(version: string) {
  return {
    'public/index.html': '<h1>dev</h1>',
    'database/migrations/0001_notes.sql': SQL,
    'functions/whoami.ts': `
      import { defineFunction, object, optional, string } from '@service/server'
      export default defineFunction({
        input: object({ note: optional(string()) }),
        async handler({ input, user, environment, data, log }) {
          log.info('whoami called', { version: '${version}' })
          const created = input.note === undefined ? null : await data.table('notes').create({ body: input.note })
          return { version: '${version}', user, environment, me: await data.table('whoami').getById(1), created }
        },
      })`,
    'functions/sweep.ts': `
      import { defineFunction, object } from '@service/server'
      export default defineFunction({
        input: object({}),
        async handler({ data, user }) {
          return { user, me: await data.table('whoami').getById(1), count: (await data.table('notes').list({ limit: 1000 })).length }
        },
      })`,
    'functions/fail.ts': `
      import { defineFunction, object } from '@service/server'
      export default defineFunction({
        input: object({}),
        async handler({ log }) {
          log.error('about to fail')
          throw new Error('dev detail ${version}')
        },
      })`,
    'functions/chatty.ts': `
      import { defineFunction, number, object } from '@service/server'
      export default defineFunction({
        input: object({ n: number() }),
        async handler({ input, log }) {
          log.debug('debug ' + input.n)
          log.info('info ' + input.n)
          log.warn('warn ' + input.n)
          log.error('error ' + input.n, { n: input.n })
          return input.n
        },
      })`,
  }
}

describe(`development namespaces: deploy, invoke and logs (${backend})`, () => {
  let h: Harness
  let token: string
  let ownerId: string
  let otherToken: string

  before(async () => {
    h = await startHarness()
    ;({ token, userId: ownerId } = await h.createOwner('owner@acme.test'))
    otherToken = (await h.createOwner('mallory@evil.test', 'Evil')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'devapp', visibility: 'public' } })).status, 201)
    const prod = await h.request('/v1/apps/devapp/deployments', { token, json: bundle({ 'service.yaml': manifest('devapp', FUNCTIONS), ...files('prod') }) })
    assert.equal(prod.status, 201, await prod.text())
  })
  after(async () => {
    await h.close()
  })

  const api = (method: string, path: string, options: { json?: unknown; as?: string } = {}) =>
    ownerApi(h, options.as ?? token, method, path, options.json)
  const invoke = (name: string, json: unknown, devName = 'alice') => api('POST', `/v1/apps/devapp/dev/${devName}/functions/${name}/invoke`, { json })

  test('a deploy into a development namespace gets its own schema and releases and leaves production serving', async () => {
    const before = (await findAppBySlug(h.t.db, 'devapp'))!
    const res = await api('POST', '/v1/apps/devapp/dev/alice/deployments', { json: bundle({ 'service.yaml': manifest('devapp', FUNCTIONS), ...files('dev-1') }) })
    assert.equal(res.status, 201, res.text)
    assert.equal(res.body.devName, 'alice')
    assert.equal(res.body.release.version, 1)
    assert.deepEqual(res.body.migrationsApplied, ['0001_notes.sql'])
    const after = (await findAppBySlug(h.t.db, 'devapp'))!
    assert.equal(after.activeReleaseId, before.activeReleaseId)
    const namespaces = await h.t.db.query<{ environment: string; dev_name: string; schema_name: string }>(
      `select environment, dev_name, schema_name from platform.namespaces where app_id = $1 order by dev_name`, [after.id])
    assert.deepEqual(namespaces.map((row) => ({ ...row })), [
      { environment: 'production', dev_name: '', schema_name: 'app_devapp' },
      { environment: 'development', dev_name: 'alice', schema_name: 'app_devapp__dev_alice' },
    ])
    assert.deepEqual((await api('GET', '/v1/apps/devapp/releases')).body.releases.map((r: any) => r.version), [1])
    assert.deepEqual((await api('GET', '/v1/apps/devapp/dev/alice/releases')).body.releases.map((r: any) => r.version), [1])
    const prod = await h.request('/_service/functions/fail', { host: 'devapp', method: 'POST', headers: { 'x-service-sdk': '1' }, body: '{}' })
    assert.match(await prod.text(), /dev detail prod/)
  })

  test('the owner invokes a user Function as the owner, in development, with its log lines', async () => {
    const res = await invoke('whoami', { input: { note: 'from dev' } })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.ok, true)
    assert.equal(res.body.value.version, 'dev-1')
    assert.deepEqual(res.body.value.user, { id: ownerId })
    assert.equal(res.body.value.environment, 'development')
    assert.deepEqual(res.body.value.me, { id: 1, uid: ownerId, system: false })
    assert.equal(res.body.value.created.body, 'from dev')
    assert.deepEqual(res.body.logs.map((l: any) => [l.level, l.message, l.fields, l.function, l.requestId]), [
      ['info', 'whoami called', { version: 'dev-1' }, 'whoami', res.body.requestId],
    ])
    // The row went to the development schema only.
    assert.equal((await h.t.db.query(`select 1 from app_devapp__dev_alice.notes where body = 'from dev'`)).length, 1)
    assert.equal((await h.t.db.query(`select 1 from app_devapp.notes`)).length, 0)
  })

  test('as anonymous a user Function is refused 401 AUTH_REQUIRED, as over HTTP, and its handler never runs', async () => {
    const res = await invoke('whoami', { input: { note: 'anon' }, as: 'anonymous' })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.ok, false)
    assert.equal(res.body.status, 401)
    assert.equal(res.body.error.code, 'AUTH_REQUIRED')
    assert.match(res.body.error.message, /whoami.*signed-in caller/)
    assert.deepEqual(res.body.logs, [], 'no line logged: the handler did not run')
    const stored = await h.t.db.query(`select 1 from platform.function_logs where request_id = $1`, [res.body.requestId])
    assert.equal(stored.length, 0)
    assert.equal((await h.t.db.query(`select 1 from app_devapp__dev_alice.notes where body = 'anon'`)).length, 0)
    assert.deepEqual((await invoke('whoami', { input: {}, as: 'owner' })).body.value.user, { id: ownerId }, 'as the owner it still runs')
  })

  test('as anonymous a public Function runs without a user, and anonymous writes are refused', async () => {
    const res = await invoke('peek', { input: { note: 'anon' }, as: 'anonymous' })
    assert.equal(res.body.ok, false)
    assert.equal(res.body.status, 401)
    assert.equal(res.body.error.code, 'AUTH_REQUIRED')
    assert.deepEqual(res.body.logs.map((l: any) => [l.message, l.function]), [['whoami called', 'peek']], 'it ran up to the write')
    const read = await invoke('peek', { input: {}, as: 'anonymous' })
    assert.equal(read.body.ok, true, read.text)
    assert.equal(read.body.value.user, null)
    assert.deepEqual(read.body.value.me, { id: 1, uid: null, system: false })
  })

  test('a system Function is invocable and runs as the system role', async () => {
    const res = await invoke('sweep', {})
    assert.equal(res.body.ok, true, res.text)
    assert.deepEqual(res.body.value, { user: null, me: { id: 1, uid: null, system: true }, count: 1 })
  })

  test('an explicit null input reaches the schema as null (no input at all is {})', async () => {
    const res = await invoke('sweep', { input: null })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.ok, false)
    assert.equal(res.body.status, 400)
    assert.equal(res.body.error.code, 'INPUT_INVALID')
    assert.equal((await invoke('sweep', {})).body.ok, true)
  })

  test('a failure answers with development detail and the lines logged before it', async () => {
    const res = await invoke('fail', {})
    assert.equal(res.status, 200)
    assert.equal(res.body.ok, false)
    assert.equal(res.body.status, 500)
    assert.equal(res.body.error.code, 'FUNCTION_FAILED')
    assert.equal(res.body.error.message, 'The Function failed: dev detail dev-1')
    assert.match(res.body.error.details.stack, /functions\/fail\.ts/)
    assert.deepEqual(res.body.logs.map((l: any) => [l.level, l.message]), [['error', 'about to fail']])
  })

  test('a second deploy runs the new code; namespaces never share releases', async () => {
    const res = await api('POST', '/v1/apps/devapp/dev/alice/deployments', { json: bundle({ 'service.yaml': manifest('devapp', FUNCTIONS), ...files('dev-2') }) })
    assert.equal(res.body.release.version, 2)
    assert.deepEqual(res.body.migrationsApplied, [])
    assert.equal((await invoke('whoami', { input: {} })).body.value.version, 'dev-2')
    const bob = await api('POST', '/v1/apps/devapp/dev/bob/deployments', { json: bundle({ 'service.yaml': manifest('devapp', FUNCTIONS), ...files('bob') }) })
    assert.equal(bob.body.release.version, 1)
    assert.equal((await invoke('whoami', { input: {} }, 'bob')).body.value.version, 'bob')
    assert.equal((await invoke('whoami', { input: {} })).body.value.version, 'dev-2')
  })

  test('unknown namespaces and Functions, bad names and bodies are refused precisely', async () => {
    const cases: Array<[string, unknown, number, string]> = [
      ['/v1/apps/devapp/dev/carol/functions/whoami/invoke', {}, 404, 'DEV_NAMESPACE_NOT_FOUND'],
      ['/v1/apps/devapp/dev/alice/functions/nope/invoke', {}, 404, 'FUNCTION_NOT_FOUND'],
      ['/v1/apps/devapp/dev/Alice/functions/whoami/invoke', {}, 400, 'VALIDATION_FAILED'],
      ['/v1/apps/devapp/dev/a-very-long-name/functions/whoami/invoke', {}, 400, 'VALIDATION_FAILED'],
      ['/v1/apps/devapp/dev/alice/functions/whoami/invoke', { as: 'admin' }, 400, 'VALIDATION_FAILED'],
      ['/v1/apps/devapp/dev/alice/functions/whoami/invoke', { input: {}, user: 'x' }, 400, 'VALIDATION_FAILED'],
    ]
    for (const [path, json, status, code] of cases) {
      const res = await api('POST', path, { json })
      assert.equal(res.status, status, `${path} ${res.text}`)
      assert.equal(res.body.error.code, code, path)
    }
    const strict = await invoke('whoami', { input: { extra: true } })
    assert.equal(strict.body.ok, false)
    assert.equal(strict.body.status, 400)
  })

  test('another owner and app tokens cannot deploy to, invoke in or read logs of a development namespace', async () => {
    for (const [method, path, json] of [
      ['POST', '/v1/apps/devapp/dev/alice/functions/whoami/invoke', {}],
      ['POST', '/v1/apps/devapp/dev/alice/deployments', bundle({ 'service.yaml': manifest('devapp', FUNCTIONS), ...files('evil') })],
      ['GET', '/v1/apps/devapp/dev/alice/logs', undefined],
      ['GET', '/v1/apps/devapp/logs', undefined],
      ['GET', '/v1/apps/devapp/dev/alice/releases', undefined],
    ] as const) {
      const other = await api(method, path, { as: otherToken, ...(json ? { json } : {}) })
      assert.equal(other.status, 404, `${method} ${path}`)
      assert.equal(other.body.error.code, 'APP_NOT_FOUND')
      const appToken = await api(method, path, { as: 'svc_app_anything', ...(json ? { json } : {}) })
      assert.equal(appToken.status, 403)
      assert.equal((await h.request(path, { method, ...(json ? { json } : {}) })).status, 401)
    }
    assert.equal((await invoke('whoami', { input: {} })).body.value.version, 'dev-2')
  })

  test('the logs API pages a namespace newest first and filters by function, level, time and request', async () => {
    await h.t.db.query(`delete from platform.function_logs`)
    h.clock.set('2026-11-21T13:00:00Z')
    await invoke('chatty', { input: { n: 1 } })
    h.clock.set('2026-11-21T13:01:00Z')
    const second = await invoke('chatty', { input: { n: 2 } })
    h.clock.set('2026-11-21T13:02:00Z')
    await invoke('whoami', { input: {} })

    const all = await api('GET', '/v1/apps/devapp/dev/alice/logs')
    assert.equal(all.status, 200)
    assert.deepEqual(all.body.logs.map((l: any) => l.message), ['whoami called', 'error 2', 'warn 2', 'info 2', 'debug 2', 'error 1', 'warn 1', 'info 1', 'debug 1'])
    assert.equal(all.body.nextCursor, null)
    assert.deepEqual(Object.keys(all.body.logs[1]).sort(), ['fields', 'function', 'id', 'level', 'message', 'releaseId', 'requestId', 'time'])
    assert.equal(all.body.logs[1].time, '2026-11-21T13:01:00.000Z')
    assert.deepEqual((await api('GET', '/v1/apps/devapp/logs')).body.logs, [])

    const pages: string[][] = []
    let cursor: string | null = ''
    while (cursor !== null) {
      const page: any = await api('GET', `/v1/apps/devapp/dev/alice/logs?limit=4${cursor ? `&cursor=${cursor}` : ''}`)
      pages.push(page.body.logs.map((l: any) => l.message))
      cursor = page.body.nextCursor
    }
    assert.deepEqual(pages, [['whoami called', 'error 2', 'warn 2', 'info 2'], ['debug 2', 'error 1', 'warn 1', 'info 1'], ['debug 1']])

    const query = async (q: string) => (await api('GET', `/v1/apps/devapp/dev/alice/logs?${q}`)).body.logs.map((l: any) => l.message)
    assert.deepEqual(await query('function=chatty&level=warn'), ['error 2', 'warn 2', 'error 1', 'warn 1'])
    assert.deepEqual(await query('level=error'), ['error 2', 'error 1'])
    assert.deepEqual(await query('from=2026-11-21T13:01:00Z&to=2026-11-21T13:01:00Z'), ['error 2', 'warn 2', 'info 2', 'debug 2'])
    assert.deepEqual(await query('from=2026-11-21T13:01:00.001Z'), ['whoami called'])
    assert.deepEqual(await query('to=2026-11-21T14:00:00%2B01:00&level=error'), ['error 1'])
    assert.deepEqual(await query(`requestId=${second.body.requestId}&level=info`), ['error 2', 'warn 2', 'info 2'])
  })

  test('after a page\'s newestCursor the logs API answers only lines written since, told apart at the same time by write order', async () => {
    await h.t.db.query(`delete from platform.function_logs`)
    h.clock.set('2026-11-21T15:00:00Z')
    const empty = await api('GET', '/v1/apps/devapp/dev/alice/logs?limit=1')
    assert.equal(empty.body.newestCursor, null)
    await invoke('chatty', { input: { n: 1 } })
    const first = await api('GET', '/v1/apps/devapp/dev/alice/logs?limit=1')
    assert.deepEqual(first.body.logs.map((l: any) => l.message), ['error 1'])
    // The same clock time: only the write order tells the next invocation's lines apart.
    await invoke('chatty', { input: { n: 2 } })
    const since = await api('GET', `/v1/apps/devapp/dev/alice/logs?after=${first.body.newestCursor}`)
    assert.deepEqual(since.body.logs.map((l: any) => l.message), ['error 2', 'warn 2', 'info 2', 'debug 2'])
    const paged = await api('GET', `/v1/apps/devapp/dev/alice/logs?after=${first.body.newestCursor}&limit=3`)
    assert.deepEqual(paged.body.logs.map((l: any) => l.message), ['error 2', 'warn 2', 'info 2'])
    const rest = await api('GET', `/v1/apps/devapp/dev/alice/logs?after=${first.body.newestCursor}&cursor=${paged.body.nextCursor}`)
    assert.deepEqual(rest.body.logs.map((l: any) => l.message), ['debug 2'])
    assert.equal(rest.body.nextCursor, null)
    const none = await api('GET', `/v1/apps/devapp/dev/alice/logs?after=${since.body.newestCursor}`)
    assert.deepEqual(none.body, { logs: [], nextCursor: null, newestCursor: null })

    for (const q of ['level=fatal', 'limit=0', 'limit=1001', 'limit=x', 'from=yesterday', 'to=2026-11-21T13:00:00', 'cursor=bm9wZQ', 'after=bm9wZQ', 'function=']) {
      const res = await api('GET', `/v1/apps/devapp/dev/alice/logs?${q}`)
      assert.equal(res.status, 400, q)
      assert.equal(res.body.error.code, 'VALIDATION_FAILED', q)
    }
  })
})
