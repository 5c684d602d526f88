import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'

describe(`control plane: health, hosts, operator, owner tokens, apps (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('ana@acme.test')
  })
  after(() => h.close())

  test('GET /v1/health answers 200 and names the storage in use', async () => {
    const res = await h.request('/v1/health')
    assert.equal(res.status, 200)
    const body = (await res.json()) as { status: string; storage: { kind: string } }
    assert.equal(body.status, 'ok')
    assert.equal(body.storage.kind, backend)
  })

  test('an unknown host gets a 404 JSON error', async () => {
    const res = await h.platform.fetch(new Request('http://elsewhere.example:8787/v1/health'))
    assert.equal(res.status, 404)
    assert.deepEqual(((await res.json()) as { error: { code: string } }).error.code, 'HOST_NOT_FOUND')
    const wrongPort = await h.platform.fetch(new Request('http://localhost:9999/v1/health'))
    assert.equal(wrongPort.status, 404)
  })

  test('an unknown route on the base host is a 404 in the error shape', async () => {
    const res = await h.request('/v1/nothing-here')
    assert.equal(res.status, 404)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'NOT_FOUND')
  })

  test('operator calls need the operator key', async () => {
    for (const token of [undefined, 'svc_operator_wrong', h.operatorKey + 'x']) {
      const res = await h.request('/v1/operator/users', { ...(token ? { token } : {}), json: { email: 'x@y.test', company: 'Y' } })
      assert.equal(res.status, 401)
    }
  })

  test('the operator creates a user once; a second time is a conflict', async () => {
    const res = await h.request('/v1/operator/users', { token: h.operatorKey, json: { email: 'Ana@Acme.test', company: 'Acme' } })
    assert.equal(res.status, 409)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'USER_EXISTS')
  })

  test('an owner token identifies its user and is stored only as a hash', async () => {
    const res = await h.request('/v1/me', { token: owner.token })
    assert.equal(res.status, 200)
    assert.equal(((await res.json()) as { user: { email: string } }).user.email, 'ana@acme.test')
    const rows = await h.t.db.query<{ token_hash: Uint8Array }>('select token_hash from platform.owner_tokens')
    assert.ok(rows.length >= 1)
    for (const row of rows) assert.ok(!Buffer.from(row.token_hash).toString('utf8').includes('svc_owner_'))
  })

  test('the owner API refuses missing, unknown and app access tokens', async () => {
    assert.equal((await h.request('/v1/apps')).status, 401)
    assert.equal((await h.request('/v1/apps', { token: 'svc_owner_forged' })).status, 401)
    const app = await h.request('/v1/apps', { token: 'svc_app_anything' })
    assert.equal(app.status, 403)
    assert.equal(((await app.json()) as { error: { code: string } }).error.code, 'APP_TOKEN_NOT_ALLOWED')
  })

  test('owners create apps with a checked slug and list only their own', async () => {
    const created = await h.request('/v1/apps', { token: owner.token, json: { slug: 'notes', visibility: 'public' } })
    assert.equal(created.status, 201)
    const app = ((await created.json()) as { app: { id: string; url: string; visibility: string } }).app
    assert.equal(app.url, 'http://notes.localhost:8787')
    assert.equal(app.visibility, 'public')

    for (const slug of ['No', 'a', '-x-', 'two--dashes', 'auth', 'x'.repeat(41)]) {
      const res = await h.request('/v1/apps', { token: owner.token, json: { slug, visibility: 'public' } })
      assert.equal(res.status, 400, slug)
    }
    const taken = await h.request('/v1/apps', { token: owner.token, json: { slug: 'notes', visibility: 'private' } })
    assert.equal(taken.status, 409)

    const other = await h.createOwner('bo@other.test', 'Other')
    const list = (await (await h.request('/v1/apps', { token: other.token })).json()) as { apps: unknown[] }
    assert.deepEqual(list.apps, [])
    const peek = await h.request(`/v1/apps/${app.id}`, { token: other.token })
    assert.equal(peek.status, 404)
    const mine = await h.request('/v1/apps/notes', { token: owner.token })
    assert.equal(mine.status, 200)
  })

  test('a body that is not JSON is a 400 with a clear code', async () => {
    const res = await h.request('/v1/apps', { token: owner.token, method: 'POST', body: '{nope', headers: { 'content-type': 'application/json' } })
    assert.equal(res.status, 400)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'BAD_REQUEST')
  })
})
