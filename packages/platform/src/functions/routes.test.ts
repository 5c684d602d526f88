/**
 * Functions over HTTP, end to end: an app deployed with Functions in real Deno, called from
 * the browser SDK (`service.functions.call`, cookie session), with a bearer JWT and with an
 * `svc_app_` token. Covers access levels, row-level security through `ctx.data` (per user,
 * and the system identity for a `system` Function), anonymous writes refused, `ctx.log`
 * stored per app, members not built yet, strict input, unknown names, timeouts, and
 * admission of a private app.
 */
import assert from 'node:assert/strict'
import { runInNewContext } from 'node:vm'
import { after, before, describe, test } from 'node:test'
import { BROWSER_SDK_SOURCE } from '@service/browser-sdk'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { appUrl, revealAppToken, signIn, type SignedIn } from '../../test/data-fixture.ts'
import type { CookieClient } from '../../test/cookie-client.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { eventually } from '../../test/eventually.ts'

const SQL = `
create table notes (id serial primary key, owner_id uuid default auth.uid(), title text not null);
alter table notes enable row level security;
create policy notes_all on notes for all using (owner_id = auth.uid() or auth.is_system())
  with check (owner_id = auth.uid() or auth.is_system());
create view whoami as select 1 as id, auth.uid() as uid, auth.is_system() as system;
`

const FUNCTIONS = `functions:
  - name: notes
    entrypoint: functions/notes.ts
    access: user
  - name: whoami
    entrypoint: functions/whoami.ts
    access: public
  - name: addNote
    entrypoint: functions/add-note.ts
    access: public
  - name: sweep
    entrypoint: functions/sweep.ts
    access: system
  - name: chatty
    entrypoint: functions/chatty.ts
    access: public
  - name: upload
    entrypoint: functions/upload.ts
    access: public
  - name: strict
    entrypoint: functions/strict.ts
    access: public
  - name: badData
    entrypoint: functions/bad-data.ts
    access: public
  - name: spin
    entrypoint: functions/spin.ts
    access: public
    timeoutSeconds: 1
`

const FILES = {
  'functions/notes.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({
      input: object({ title: string() }),
      async handler({ input, data, user }) {
        const created = await data.table('notes').create({ title: input.title })
        const renamed = await data.table('notes').updateById(created.id, { title: input.title + '!' })
        const all = await data.table('notes').list({ select: ['id', 'title'], limit: 50 })
        const mine = await data.table('notes').list({ where: { title: input.title + '!' } })
        const me = await data.table('whoami').getById(1)
        return { created, renamed, all, mine, me, user }
      },
    })`,
  'functions/whoami.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ data, user, environment, requestId, http, job }) {
        return { user, environment, requestId, http, job, me: await data.table('whoami').getById(1) }
      },
    })`,
  'functions/add-note.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ data }) {
        return await data.table('notes').create({ title: 'anonymous?' })
      },
    })`,
  'functions/sweep.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ data, user }) {
        const notes = await data.table('notes').list({ limit: 1000 })
        return { user, titles: notes.map((note) => note.title).sort(), me: await data.table('whoami').getById(1) }
      },
    })`,
  'functions/chatty.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ log }) {
        log.info('hello', { n: 1 })
        log.warn('x'.repeat(5000))
        log.error('big', { big: 'y'.repeat(20000) })
        return 'logged'
      },
    })`,
  'functions/upload.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ notifications }) {
        return await notifications.send({ to: 'someone', title: 'Hi', body: 'there' })
      },
    })`,
  'functions/strict.ts': `
    import { defineFunction, number, object } from '@service/server'
    export default defineFunction({
      input: object({ count: number() }),
      async handler({ input, log }) {
        log.info('strict ran')
        return input.count
      },
    })`,
  'functions/bad-data.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ data }) {
        const attempts = [
          () => data.table('pg_user').list(),
          () => data.table('notes').list({ where: { 'title" or true --': 'x' } }),
          () => data.table('notes').list({ limit: 1001 }),
          () => data.table('notes').list({ select: ['nope'] }),
        ]
        const codes = []
        for (const attempt of attempts) {
          try { await attempt(); codes.push('ran') } catch (error) { codes.push(error.code + ' ' + error.status) }
        }
        return codes
      },
    })`,
  'functions/spin.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler() {
        while (true) {}
      },
    })`,
}

async function deployFunctionsApp(h: Harness, token: string, slug: string, visibility: 'public' | 'private'): Promise<void> {
  const created = await h.request('/v1/apps', { token, json: { slug, visibility } })
  assert.equal(created.status, 201, await created.clone().text())
  const res = await h.request(`/v1/apps/${slug}/deployments`, {
    token,
    json: bundle({
      'service.yaml': manifest(slug, FUNCTIONS, visibility),
      'public/index.html': `<h1>${slug}</h1>`,
      'database/migrations/0001_notes.sql': SQL,
      ...FILES,
    }),
  })
  assert.equal(res.status, 201, await res.text())
}

interface Sdk {
  functions: { call(name: string, input?: unknown): Promise<any> }
  ServiceError: new (...args: any[]) => Error
}

/** The real browser SDK (sdk.js) evaluated against a signed-in browser's cookie jar. */
function browserSdk(browser: CookieClient | null, h: Harness, slug: string): Sdk {
  const origin = appUrl(slug)
  const window: Record<string, any> = {}
  const fetch = (path: string, init: RequestInit) => {
    const url = new URL(path, origin).toString()
    return browser ? browser.fetch(url, init) : h.platform.fetch(new Request(url, init))
  }
  runInNewContext(BROWSER_SDK_SOURCE, { window, fetch, location: new URL(origin + '/'), URL, JSON, Object, Error, String })
  return window['service'] as Sdk
}

async function callWith(h: Harness, slug: string, name: string, options: { token?: string; input?: unknown; headers?: Record<string, string> } = {}) {
  const res = await h.request(`/_service/functions/${name}`, {
    host: slug,
    method: 'POST',
    ...(options.token ? { token: options.token } : {}),
    headers: options.headers ?? {},
    body: JSON.stringify(options.input ?? {}),
  })
  return { status: res.status, body: (await res.json()) as any }
}

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  assert.fail('expected the call to reject')
}

describe(`Functions over HTTP (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  let ann: SignedIn
  let bob: SignedIn
  let appToken: string
  let anonSdk: Sdk
  let annSdk: Sdk
  let bobSdk: Sdk

  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
    await deployFunctionsApp(h, owner.token, 'notes', 'public')
    await deployFunctionsApp(h, owner.token, 'locked', 'private')
    ann = await signIn(h, 'notes', 'ann@example.test')
    bob = await signIn(h, 'notes', 'bob@example.test')
    const ownerSession = await signIn(h, 'notes', 'owner@acme.test')
    appToken = await revealAppToken(h, { ownerToken: owner.token, ownerBrowser: ownerSession.browser, slug: 'notes' })
    anonSdk = browserSdk(null, h, 'notes')
    annSdk = browserSdk(ann.browser, h, 'notes')
    bobSdk = browserSdk(bob.browser, h, 'notes')
  })
  after(() => h.close())

  test('a public Function answers anonymous callers with ctx.user null and the anon identity', async () => {
    const { requestId, ...value } = await anonSdk.functions.call('whoami', {})
    assert.equal(typeof requestId, 'string')
    assert.deepEqual(value, { user: null, environment: 'production', http: null, job: null, me: { id: 1, uid: null, system: false } })
  })

  test('ctx.requestId is the request\'s own id: a well-formed x-request-id is kept, and answered back', async () => {
    const res = await h.request('/_service/functions/whoami', { host: 'notes', json: {}, headers: { 'x-request-id': 'req-42.trace', 'x-service-sdk': '1' } })
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('x-request-id'), 'req-42.trace')
    assert.equal(((await res.json()) as { requestId: string }).requestId, 'req-42.trace')
    const minted = await h.request('/_service/functions/whoami', { host: 'notes', json: {}, headers: { 'x-request-id': 'bad id <script>', 'x-service-sdk': '1' } })
    const id = minted.headers.get('x-request-id')!
    assert.notEqual(id, 'bad id <script>')
    assert.equal(((await minted.json()) as { requestId: string }).requestId, id)
  })

  test('a public Function sees a signed-in caller through the SDK cookie session', async () => {
    const value = await annSdk.functions.call('whoami', {})
    assert.deepEqual(value.user, { id: ann.userId })
    assert.deepEqual(value.me, { id: 1, uid: ann.userId, system: false })
  })

  test('a user Function refuses anonymous callers with AUTH_REQUIRED', async () => {
    const error = await rejection(anonSdk.functions.call('notes', { title: 'x' }))
    assert.equal(error.name, 'ServiceError')
    assert.equal(error.code, 'AUTH_REQUIRED')
    const raw = await callWith(h, 'notes', 'notes', { input: { title: 'x' }, headers: { 'x-service-sdk': '1' } })
    assert.equal(raw.status, 401)
    assert.equal(raw.body.error.code, 'AUTH_REQUIRED')
  })

  test('row-level security applies through ctx.data: each person sees only their own notes', async () => {
    const annValue = await annSdk.functions.call('notes', { title: 'ann note' })
    assert.equal(annValue.created.title, 'ann note')
    assert.equal(annValue.created.owner_id, ann.userId)
    assert.equal(annValue.renamed.title, 'ann note!')
    assert.deepEqual(annValue.all.map((row: any) => Object.keys(row)), [['id', 'title']])
    assert.deepEqual(annValue.mine.map((row: any) => row.title), ['ann note!'])
    assert.deepEqual(annValue.me, { id: 1, uid: ann.userId, system: false })
    assert.deepEqual(annValue.user, { id: ann.userId })

    const bobValue = await bobSdk.functions.call('notes', { title: 'bob note' })
    assert.deepEqual(bobValue.all.map((row: any) => row.title), ['bob note!'], 'Bob cannot see Ann\'s note')
  })

  test('a bearer JWT and an svc_app_ token (the owner) may call a user Function', async () => {
    const jwt = await callWith(h, 'notes', 'notes', { token: bob.accessToken, input: { title: 'bob jwt' } })
    assert.equal(jwt.status, 200, JSON.stringify(jwt.body))
    assert.deepEqual(jwt.body.all.map((row: any) => row.title).sort(), ['bob jwt!', 'bob note!'])
    const token = await callWith(h, 'notes', 'notes', { token: appToken, input: { title: 'owner note' } })
    assert.equal(token.status, 200, JSON.stringify(token.body))
    assert.deepEqual(token.body.user, { id: owner.userId })
    assert.deepEqual(token.body.all.map((row: any) => row.title), ['owner note!'])
  })

  test('cookie and anonymous callers need the same-origin SDK header', async () => {
    const res = await ann.browser.fetch(`${appUrl('notes')}/_service/functions/whoami`, { method: 'POST', body: '{}' })
    assert.equal(res.status, 403)
    const crossSite = await ann.browser.fetch(`${appUrl('notes')}/_service/functions/whoami`, {
      method: 'POST', body: '{}', headers: { 'x-service-sdk': '1', origin: 'http://evil.test' },
    })
    assert.equal(crossSite.status, 403)
  })

  test('a system Function is not callable over HTTP and answers like an unknown name', async () => {
    const system = await callWith(h, 'notes', 'sweep', { token: appToken })
    const unknown = await callWith(h, 'notes', 'nope', { token: appToken })
    assert.equal(system.status, 404)
    assert.equal(unknown.status, 404)
    assert.equal(system.body.error.code, 'FUNCTION_NOT_FOUND')
    assert.equal(unknown.body.error.code, 'FUNCTION_NOT_FOUND')
    const error = await rejection(annSdk.functions.call('nope', {}))
    assert.equal(error.code, 'FUNCTION_NOT_FOUND')
  })

  test('a system Function run in-process sees every row, with auth.is_system() true and ctx.user null', async () => {
    const app = (await findAppBySlug(h.t.db, 'notes'))!
    const fn = (await h.platform.functions.resolve(app, 'sweep'))!
    assert.equal(fn.declaration.access, 'system')
    const result = await h.platform.functions.run(fn, { input: {}, user: { id: ann.userId } })
    assert.ok(result.ok, JSON.stringify(result))
    const value = result.value as any
    assert.equal(value.user, null)
    assert.deepEqual(value.me, { id: 1, uid: null, system: true })
    assert.deepEqual(value.titles, ['ann note!', 'bob jwt!', 'bob note!', 'owner note!'])
  })

  test(`ctx.data runs ${backend === 'postgres' ? 'through the namespace login pools (the system role on its own), one statement a call' : 'through the namespace wrapper'}`, async () => {
    const app = (await findAppBySlug(h.t.db, 'notes'))!
    const fn = (await h.platform.functions.resolve(app, 'sweep'))!
    const before = h.platform.appSql.stats()
    const result = await h.platform.functions.run(fn, { input: {}, user: null })
    assert.ok(result.ok, JSON.stringify(result))
    const userValue = await annSdk.functions.call('notes', { title: 'pooled note' })
    assert.equal(userValue.created.owner_id, ann.userId)
    const after = h.platform.appSql.stats()
    if (backend === 'postgres') {
      assert.ok(after.login > before.login, 'login pool statements')
      assert.equal(after.wrapper, before.wrapper, 'nothing through the wrapper')
      assert.ok(after.pools >= 2, 'the user role and the system role each have a pool')
    } else {
      assert.equal(after.login, 0)
      assert.ok(after.wrapper > before.wrapper)
    }
  })

  test('an anonymous caller cannot write through a public Function', async () => {
    const error = await rejection(anonSdk.functions.call('addNote', {}))
    assert.equal(error.code, 'AUTH_REQUIRED')
    const rows = await h.t.db.query(`select title from app_notes.notes where title = 'anonymous?'`)
    assert.equal(rows.length, 0)
    const signedIn = await annSdk.functions.call('addNote', {})
    assert.equal(signedIn.owner_id, ann.userId)
  })

  test('ctx.log lines are stored per app, bounded', async () => {
    assert.equal(await anonSdk.functions.call('chatty', {}), 'logged')
    const app = (await findAppBySlug(h.t.db, 'notes'))!
    // ctx.log does not wait for the insert, so the response can arrive first: poll briefly.
    let rows: { level: string; message: string; fields: any; function_name: string; release_id: string }[] = []
    await eventually(async () => (rows = await h.t.db.query(
      `select level, message, fields, function_name, release_id from platform.function_logs where app_id = $1 and function_name = 'chatty' order by level`,
      [app.id],
    )).length >= 3, 'the three lines were stored', 10_000)
    assert.deepEqual(rows.map((row) => row.level), ['error', 'info', 'warn'])
    const [error, info, warn] = rows
    assert.deepEqual(info!.fields, { n: 1 })
    assert.equal(info!.message, 'hello')
    assert.equal(info!.release_id, app.activeReleaseId)
    assert.equal(warn!.message.length, 4096)
    assert.equal(error!.fields.truncated, true)
    const other = (await findAppBySlug(h.t.db, 'locked'))!
    const elsewhere = await h.t.db.query('select 1 from platform.function_logs where app_id = $1', [other.id])
    assert.equal(elsewhere.length, 0)
  })

  test('ctx.data refuses unknown tables and columns and limits past 1000 before any SQL runs', async () => {
    assert.deepEqual(await annSdk.functions.call('badData', {}), ['NOT_FOUND 404', 'BAD_REQUEST 400', 'BAD_REQUEST 400', 'BAD_REQUEST 400'])
  })

  test('a platform refusal a Function does not catch reaches the caller with its code and status (ctx.notifications, every member being built)', async () => {
    const res = await callWith(h, 'notes', 'upload', { token: appToken })
    assert.equal(res.status, 400)
    assert.equal(res.body.error.code, 'NOTIFICATION_INVALID')
    assert.deepEqual(res.body.error.details, { field: 'to' })
  })

  test('strict input fails with INPUT_INVALID and its paths, and the handler does not run', async () => {
    const error = await rejection(annSdk.functions.call('strict', { count: 'three' }))
    assert.equal(error.code, 'INPUT_INVALID')
    assert.deepEqual(error.details.issues.map((issue: any) => issue.path), [['count']])
    const res = await callWith(h, 'notes', 'strict', { token: appToken, input: { count: 'three' } })
    assert.equal(res.status, 400)
    const ran = await h.t.db.query(`select 1 from platform.function_logs where function_name = 'strict'`)
    assert.equal(ran.length, 0)
  })

  test('a body that is not JSON is a 400, and over 1 MiB a 413', async () => {
    const bad = await h.request('/_service/functions/whoami', { host: 'notes', method: 'POST', token: appToken, body: '{' })
    assert.equal(bad.status, 400)
    const big = await h.request('/_service/functions/whoami', { host: 'notes', method: 'POST', token: appToken, body: JSON.stringify({ a: 'x'.repeat(1024 * 1024) }) })
    assert.equal(big.status, 413)
  })

  test('a Function past its timeout answers 504 FUNCTION_TIMEOUT and the next call works', async () => {
    await anonSdk.functions.call('whoami', {})
    const res = await callWith(h, 'notes', 'spin', { token: appToken })
    assert.equal(res.status, 504)
    assert.equal(res.body.error.code, 'FUNCTION_TIMEOUT')
    const next = await anonSdk.functions.call('whoami', {})
    assert.equal(next.user, null)
  })

  test('a private app keeps its Functions behind admission', async () => {
    const res = await callWith(h, 'locked', 'whoami', { headers: { 'x-service-sdk': '1' } })
    assert.equal(res.status, 401)
    assert.equal(res.body.error.code, 'AUTH_REQUIRED')
  })
})
