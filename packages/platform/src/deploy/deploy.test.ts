import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'

type Json = Record<string, any>

describe(`deploys: validate, migrate, activate, keep the previous release on failure (${backend})`, () => {
  let h: Harness
  let token: string
  const deploy = async (slug: string, files: Record<string, string>) => {
    const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: bundle(files) })
    return { status: res.status, body: (await res.json()) as Json }
  }
  const page = (slug: string, path = '/') => h.request(path, { host: slug })
  const releases = async (slug: string) =>
    ((await (await h.request(`/v1/apps/${slug}/releases`, { token })).json()) as Json).releases as Json[]

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('ana@acme.test')).token
    for (const slug of ['shop', 'blog']) {
      const res = await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })
      assert.equal(res.status, 201)
    }
  })
  after(() => h.close())

  const v1 = {
    'service.yaml': manifest('shop'),
    'public/index.html': '<h1>shop v1</h1>',
    'public/app.js': 'console.log(1)',
    'database/migrations/0001_items.sql': 'create table items (id serial primary key, name text not null);',
  }

  test('a valid bundle becomes release 1, runs its migration and serves its frontend', async () => {
    const { status, body } = await deploy('shop', v1)
    assert.equal(status, 201, JSON.stringify(body))
    assert.equal(body.release.version, 1)
    assert.equal(body.release.status, 'active')
    assert.deepEqual(body.migrationsApplied, ['0001_items.sql'])
    const res = await page('shop')
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8')
    assert.equal(await res.text(), '<h1>shop v1</h1>')
  })

  test('the frontend falls back to index.html for page routes, not for missing assets', async () => {
    const deep = await page('shop', '/orders/42')
    assert.equal(deep.status, 200)
    assert.equal(await deep.text(), '<h1>shop v1</h1>')
    const js = await page('shop', '/app.js')
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8')
    assert.equal((await page('shop', '/missing.js')).status, 404)
    const etag = js.headers.get('etag')!
    const again = await h.request('/app.js', { host: 'shop', headers: { 'if-none-match': etag } })
    assert.equal(again.status, 304)
  })

  test('a second deploy becomes release 2 and supersedes release 1; applied migrations do not rerun', async () => {
    const { status, body } = await deploy('shop', { ...v1, 'public/index.html': '<h1>shop v2</h1>' })
    assert.equal(status, 201)
    assert.equal(body.release.version, 2)
    assert.deepEqual(body.migrationsApplied, [])
    assert.equal(await (await page('shop')).text(), '<h1>shop v2</h1>')
    assert.deepEqual((await releases('shop')).map((r) => [r.version, r.status]), [[2, 'active'], [1, 'superseded']])
  })

  test('a migration that fails half-way changes nothing and the previous release keeps serving', async () => {
    const { status, body } = await deploy('shop', {
      ...v1,
      'public/index.html': '<h1>shop broken</h1>',
      'database/migrations/0002_more.sql': 'create table orders (id serial primary key);\n\ninsert into nowhere values (1);',
    })
    assert.equal(status, 422)
    assert.equal(body.error.code, 'MIGRATION_FAILED')
    assert.equal(body.error.details.migration, 'database/migrations/0002_more.sql')
    assert.equal(body.error.details.sqlState, '42P01')
    assert.equal(body.error.details.line, 3)
    assert.equal(await (await page('shop')).text(), '<h1>shop v2</h1>')
    assert.deepEqual((await releases('shop')).map((r) => r.version), [2, 1])
    const [row] = await h.t.db.query<{ n: number }>(
      `select count(*)::int as n from pg_tables where schemaname = 'app_shop' and tablename = 'orders'`)
    assert.equal(row!.n, 0)
    const [applied] = await h.t.db.query<{ n: number }>('select count(*)::int as n from platform.app_migrations')
    assert.equal(applied!.n, 1)
  })

  test('changing an applied migration is refused', async () => {
    const { status, body } = await deploy('shop', { ...v1, 'database/migrations/0001_items.sql': 'create table items (id int);' })
    assert.equal(status, 422)
    assert.equal(body.error.code, 'MIGRATION_MODIFIED')
  })

  test('an invalid manifest is refused with every problem and its position', async () => {
    const { status, body } = await deploy('shop', {
      'service.yaml': manifest('shop', 'queues:\n  - name: q\n    function: nope\nbogus: 1\n'),
      'public/index.html': 'x',
    })
    assert.equal(status, 422)
    assert.equal(body.error.code, 'MANIFEST_INVALID')
    assert.ok(body.error.details.errors.length >= 2)
    for (const problem of body.error.details.errors) {
      assert.equal(typeof problem.code, 'string')
      assert.ok(problem.line > 0 && problem.column > 0)
    }
    assert.equal(await (await page('shop')).text(), '<h1>shop v2</h1>')
  })

  test('malformed YAML is refused as an invalid manifest', async () => {
    const { status, body } = await deploy('shop', { 'service.yaml': 'schemaVersion: [3\n', 'public/index.html': 'x' })
    assert.equal(status, 422)
    assert.equal(body.error.code, 'MANIFEST_INVALID')
  })

  test('a bundle without a manifest, or with unsafe paths, is refused', async () => {
    const none = await deploy('shop', { 'public/index.html': 'x' })
    assert.equal(none.status, 422)
    assert.equal(none.body.error.code, 'BUNDLE_INVALID')
    for (const path of ['../etc/passwd', '/abs.txt', 'public/../../x', 'secrets.txt', 'database/migrations/1_bad.sql']) {
      const bad = await deploy('shop', { 'service.yaml': manifest('shop'), [path]: 'x' })
      assert.equal(bad.status, 422, path)
      assert.equal(bad.body.error.code, 'BUNDLE_INVALID', path)
    }
  })

  test("a manifest for another app is refused", async () => {
    const { status, body } = await deploy('blog', { 'service.yaml': manifest('shop') })
    assert.equal(status, 422)
    assert.equal(body.error.code, 'MANIFEST_APP_MISMATCH')
  })

  test('an app with no release answers APP_NOT_DEPLOYED; an unknown app APP_NOT_FOUND', async () => {
    const blog = await page('blog')
    assert.equal(blog.status, 503)
    assert.equal(((await blog.json()) as Json).error.code, 'APP_NOT_DEPLOYED')
    const ghost = await page('ghost')
    assert.equal(ghost.status, 404)
    assert.equal(((await ghost.json()) as Json).error.code, 'APP_NOT_FOUND')
  })

  test('a private app admits nobody at the edge until sign-in exists', async () => {
    const res = await h.request('/v1/apps', { token, json: { slug: 'vault', visibility: 'private' } })
    assert.equal(res.status, 201)
    const deployed = await deploy('vault', { 'service.yaml': manifest('vault', '', 'private'), 'public/index.html': 'secret page' })
    assert.equal(deployed.status, 201)
    const edge = await page('vault')
    assert.equal(edge.status, 401)
    assert.doesNotMatch(await edge.text(), /secret page/)
  })

  test("one app's migration cannot reach another app's tables or the platform schema", async () => {
    const attempts = [
      'select * from app_shop.items;',
      'select * from platform.users;',
      'reset role; select * from platform.users;',
    ]
    for (const sql of attempts) {
      const { status, body } = await deploy('blog', {
        'service.yaml': manifest('blog'),
        'database/migrations/0001_steal.sql': sql,
      })
      assert.equal(status, 422, sql)
      assert.equal(body.error.code, 'MIGRATION_FAILED', sql)
    }
  })

  test("integrations other apps of the organisation publish are checked at deploy", async () => {
    const provider = `provides:
  integration:
    name: acme-crm
    title: Acme CRM
    description: Contacts
    capabilities:
      - name: contacts.read
        description: Read contacts
    operations:
      - name: contacts.list
        capability: contacts.read
        function: listContacts
        description: Lists contacts
functions:
  - name: listContacts
    entrypoint: functions/list.ts
    access: system
`
    for (const slug of ['crm', 'crm-copy', 'shopfront']) {
      assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
    }
    const published = await deploy('crm', { 'service.yaml': manifest('crm', provider), 'functions/list.ts': 'export default 1' })
    assert.equal(published.status, 201, JSON.stringify(published.body))

    const taken = await deploy('crm-copy', { 'service.yaml': manifest('crm-copy', provider), 'functions/list.ts': 'export default 1' })
    assert.equal(taken.status, 422)
    assert.ok(taken.body.error.details.errors.some((p: any) => p.code === 'MANIFEST_INTEGRATION_NAME_TAKEN'))

    const consumer = await deploy('shopfront', {
      'service.yaml': manifest('shopfront', `integrations:
  crm:
    provider: custom
    integration: acme-crm
    account: app
    cardinality: one
    capabilities: [contacts.read, contacts.write]
`),
    })
    assert.equal(consumer.status, 201, JSON.stringify(consumer.body))
    assert.deepEqual(consumer.body.warnings.map((w: any) => w.code), ['MANIFEST_CAPABILITY_NOT_OFFERED'])
  })
})
