/**
 * Function routes (schema 3, SDK 2.3.0) and byte results end to end: an app deployed with
 * routes in real Deno, requested with plain HTTP (anonymous, cookie, bearer JWT, `svc_app_`
 * token). Covers `ctx.http`, GET/HEAD input, JSON body input, literal-over-parameter
 * matching, 405 for other methods, the frontend for unrouted paths, the cross-origin
 * attack on a cookie POST, private-app admission, a new release's table, and a Function
 * that streams bytes. Also: `system` Functions are 404 from every HTTP caller (the
 * in-process path that runs them is tested in routes.test.ts).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { appUrl, revealAppToken, signIn, type SignedIn } from '../../test/data-fixture.ts'

const SQL = `
create table tasks (id serial primary key, owner_id uuid default auth.uid(), title text not null);
alter table tasks enable row level security;
create policy tasks_all on tasks for all using (owner_id = auth.uid() or auth.is_system())
  with check (owner_id = auth.uid() or auth.is_system());
`

const FUNCTIONS = `functions:
  - name: getTask
    entrypoint: functions/get-task.ts
    access: public
    routes:
      - method: GET
        path: /api/tasks/:id
      - method: DELETE
        path: /api/tasks/:id
  - name: newTask
    entrypoint: functions/new-task.ts
    access: public
    routes:
      - method: GET
        path: /api/tasks/new
  - name: createTask
    entrypoint: functions/create-task.ts
    access: user
    routes:
      - method: POST
        path: /api/tasks
      - method: PUT
        path: /api/tasks/:id
  - name: exportTasks
    entrypoint: functions/export.ts
    access: public
    routes:
      - method: GET
        path: /export.csv
  - name: sweep
    entrypoint: functions/sweep.ts
    access: system
`

const FILES = {
  'functions/get-task.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler({ input, user, http }) {
        return {
          input, user, method: http.method, pathname: http.pathname, params: http.params,
          tags: http.query.getAll('tag'), q: http.query.get('q'), query: http.query.toString(),
        }
      },
    })`,
  'functions/new-task.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: ({ http }) => ({ form: 'new', params: http.params }) })`,
  'functions/create-task.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({
      input: object({ title: string() }),
      async handler({ input, user, http, data }) {
        const row = await data.table('tasks').create({ title: input.title })
        return { row, user, method: http.method, params: http.params }
      },
    })`,
  'functions/export.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler({ http }) {
        return new Response(new ReadableStream({
          start(controller) { controller.enqueue('id,title\\n'); controller.enqueue('1,milk\\n'); controller.close() },
        }), {
          status: 200,
          headers: {
            'content-type': 'text/csv; charset=utf-8',
            'content-disposition': 'attachment; filename="tasks.csv"',
            etag: '"' + http.method + '"',
            'set-cookie': 'svc_app_session=forged; Path=/',
            'x-powered-by': 'tests',
          },
        })
      },
    })`,
  'functions/sweep.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: ({ user }) => ({ swept: true, user }) })`,
}

async function deploy(h: Harness, token: string, slug: string, visibility: 'public' | 'private', files: Record<string, string> = FILES, functions = FUNCTIONS) {
  const res = await h.request(`/v1/apps/${slug}/deployments`, {
    token,
    json: bundle({
      'service.yaml': manifest(slug, functions, visibility),
      'public/index.html': `<h1>${slug} frontend</h1>`,
      'database/migrations/0001_tasks.sql': SQL,
      ...files,
    }),
  })
  assert.equal(res.status, 201, await res.text())
}

async function json(res: Response): Promise<{ status: number; body: any }> {
  return { status: res.status, body: await res.json() }
}

describe(`Function routes over HTTP (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  let ann: SignedIn
  let appToken: string
  const shop = appUrl('shop')

  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
    for (const [slug, visibility] of [['shop', 'public'], ['vault', 'private']] as const) {
      assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug, visibility } })).status, 201)
      await deploy(h, owner.token, slug, visibility)
    }
    ann = await signIn(h, 'shop', 'ann@example.test')
    const ownerSession = await signIn(h, 'shop', 'owner@acme.test')
    appToken = await revealAppToken(h, { ownerToken: owner.token, ownerBrowser: ownerSession.browser, slug: 'shop' })
  })
  after(() => h.close())

  const get = (path: string, init: RequestInit & { token?: string } = {}) => h.request(path, { host: 'shop', ...init })

  test('a GET route reaches its Function with input {}, path parameters and the query in ctx.http', async () => {
    const { status, body } = await json(await get('/api/tasks/42?tag=a&tag=b&q=milk%20and%20eggs'))
    assert.equal(status, 200)
    assert.deepEqual(body, {
      input: {}, user: null, method: 'GET', pathname: '/api/tasks/42', params: { id: '42' },
      tags: ['a', 'b'], q: 'milk and eggs', query: 'tag=a&tag=b&q=milk+and+eggs',
    })
  })

  test('path parameters are percent-decoded; pathname stays as requested', async () => {
    const { body } = await json(await get('/api/tasks/a%20b'))
    assert.deepEqual([body.params, body.pathname], [{ id: 'a b' }, '/api/tasks/a%20b'])
  })

  test('a literal path wins over a parameter', async () => {
    const { body } = await json(await get('/api/tasks/new'))
    assert.deepEqual(body, { form: 'new', params: {} })
  })

  test('a signed-in caller is ctx.user on a public route (cookie and bearer JWT)', async () => {
    const cookie = await json(await ann.browser.fetch(`${shop}/api/tasks/1`, { headers: { accept: 'application/json' } }))
    assert.deepEqual(cookie.body.user, { id: ann.userId })
    const jwt = await json(await get('/api/tasks/1', { token: ann.accessToken }))
    assert.deepEqual(jwt.body.user, { id: ann.userId })
  })

  test('HEAD runs the GET route and answers its status and headers without a body', async () => {
    const full = await get('/api/tasks/9')
    const fullText = await full.text()
    const res = await get('/api/tasks/9', { method: 'HEAD' })
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
    assert.equal(res.headers.get('content-length'), String(Buffer.byteLength(fullText.replace('"GET"', '"HEAD"'))))
    assert.equal((await res.arrayBuffer()).byteLength, 0)
  })

  test('a Function that returns a Response streams its bytes with its status and allowed headers only', async () => {
    const res = await get('/export.csv')
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'text/csv; charset=utf-8')
    assert.equal(res.headers.get('content-disposition'), 'attachment; filename="tasks.csv"')
    assert.equal(res.headers.get('etag'), '"GET"')
    assert.equal(res.headers.get('x-service-stream'), '1')
    assert.equal(res.headers.get('set-cookie'), null, 'a Function cannot set cookies on the app origin')
    assert.equal(res.headers.get('x-powered-by'), null)
    assert.equal(await res.text(), 'id,title\n1,milk\n')
    const head = await get('/export.csv', { method: 'HEAD' })
    assert.equal(head.headers.get('etag'), '"HEAD"', 'the handler ran for HEAD')
    assert.equal(head.headers.get('content-type'), 'text/csv; charset=utf-8')
    assert.equal((await head.arrayBuffer()).byteLength, 0)
  })

  test('a user route refuses anonymous callers with 401 AUTH_REQUIRED', async () => {
    const { status, body } = await json(await get('/api/tasks', { method: 'POST', body: JSON.stringify({ title: 'x' }) }))
    assert.equal(status, 401)
    assert.equal(body.error.code, 'AUTH_REQUIRED')
  })

  test('an svc_app_ token calls a user route as the owner, with the JSON body as input', async () => {
    const { status, body } = await json(await get('/api/tasks', { method: 'POST', token: appToken, body: JSON.stringify({ title: 'from a script' }) }))
    assert.equal(status, 200, JSON.stringify(body))
    assert.deepEqual(body.user, { id: owner.userId })
    assert.equal(body.row.owner_id, owner.userId)
    assert.equal(body.row.title, 'from a script')
    assert.deepEqual([body.method, body.params], ['POST', {}])
    const put = await json(await get('/api/tasks/7', { method: 'PUT', token: appToken, body: JSON.stringify({ title: 'put' }) }))
    assert.deepEqual([put.status, put.body.method, put.body.params], [200, 'PUT', { id: '7' }])
    const invalid = await json(await get('/api/tasks', { method: 'POST', token: appToken, body: JSON.stringify({ title: 3 }) }))
    assert.equal(invalid.status, 400)
    assert.equal(invalid.body.error.code, 'INPUT_INVALID')
  })

  test('a cookie POST from the app\'s own page runs; the same POST from another app of the platform is refused before the Function runs', async () => {
    const own = await ann.browser.fetch(`${shop}/api/tasks`, {
      method: 'POST', body: JSON.stringify({ title: 'mine' }), headers: { origin: shop, 'sec-fetch-site': 'same-origin', accept: 'application/json' },
    })
    assert.equal(own.status, 200, await own.clone().text())
    assert.equal(((await own.json()) as any).row.owner_id, ann.userId)
    // evil.localhost is a sibling origin: same site, so the Lax session cookie is sent along.
    for (const headers of [
      { origin: appUrl('evil'), 'sec-fetch-site': 'same-site' },
      { origin: appUrl('evil') },
      { 'content-type': 'text/plain' },
    ]) {
      const attack = await ann.browser.fetch(`${shop}/api/tasks`, { method: 'POST', body: JSON.stringify({ title: 'csrf' }), headers: { accept: 'application/json', ...headers } })
      assert.equal(attack.status, 403, JSON.stringify(headers))
      assert.equal(((await attack.json()) as any).error.code, 'FORBIDDEN')
    }
    const rows = await h.t.db.query(`select 1 from app_shop.tasks where title = 'csrf'`)
    assert.equal(rows.length, 0)
    const safe = await ann.browser.fetch(`${shop}/api/tasks/5`, { headers: { origin: appUrl('evil'), 'sec-fetch-site': 'same-site', accept: 'application/json' } })
    assert.equal(safe.status, 200, 'GET is a safe method and passes')
  })

  test('a method a route path does not declare answers 405 with Allow; an unrouted GET reaches the frontend', async () => {
    const patch = await get('/api/tasks/5', { method: 'PATCH', token: appToken, body: '{}' })
    assert.equal(patch.status, 405)
    assert.deepEqual(patch.headers.get('allow')!.split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'PUT'])
    assert.equal(((await patch.json()) as any).error.code, 'METHOD_NOT_ALLOWED')
    const page = await get('/api/tasks', { headers: { accept: 'text/html' } })
    assert.equal(page.status, 200)
    assert.match(await page.text(), /shop frontend/)
    const unrouted = await get('/api/unknown', { method: 'POST', token: appToken, body: '{}' })
    assert.equal(unrouted.status, 405, 'the frontend answers other methods as before')
    assert.equal(unrouted.headers.get('allow'), 'GET, HEAD')
  })

  test('routes sit behind private-app admission', async () => {
    const anonymous = await json(await h.request('/api/tasks/1', { host: 'vault' }))
    assert.equal(anonymous.status, 401)
    assert.equal(anonymous.body.error.code, 'AUTH_REQUIRED')
    const page = await h.request('/api/tasks/1', { host: 'vault', headers: { accept: 'text/html' } })
    assert.equal(page.status, 302)
    assert.match(page.headers.get('location')!, /\/authorize\?app=vault/)
  })

  test('a system Function is 404 FUNCTION_NOT_FOUND from every HTTP caller, like an unknown name', async () => {
    const path = `${shop}/_service/functions/sweep`
    const sdk = { 'x-service-sdk': '1', origin: shop, accept: 'application/json' }
    const answers = [
      await h.request('/_service/functions/sweep', { host: 'shop', method: 'POST', body: '{}', headers: sdk }),
      await ann.browser.fetch(path, { method: 'POST', body: '{}', headers: sdk }),
      await h.request('/_service/functions/sweep', { host: 'shop', method: 'POST', body: '{}', token: ann.accessToken }),
      await h.request('/_service/functions/sweep', { host: 'shop', method: 'POST', body: '{}', token: appToken }),
    ]
    for (const res of answers) {
      assert.equal(res.status, 404)
      assert.deepEqual(((await res.json()) as any).error, { code: 'FUNCTION_NOT_FOUND', message: 'This app has no Function named sweep' })
    }
  })

  test('a new release brings its own route table', async () => {
    await deploy(h, owner.token, 'shop', 'public', {
      ...FILES,
      'functions/new-task.ts': `
        import { defineFunction, object } from '@service/server'
        export default defineFunction({ input: object({}), handler: () => ({ form: 'v2' }) })`,
    }, `functions:
  - name: newTask
    entrypoint: functions/new-task.ts
    access: public
    routes:
      - method: GET
        path: /v2/new
`)
    assert.deepEqual((await json(await get('/v2/new'))).body, { form: 'v2' })
    const old = await get('/api/tasks/1', { headers: { accept: 'text/html' } })
    assert.match(await old.text(), /shop frontend/, 'the old route is gone')
  })
})

