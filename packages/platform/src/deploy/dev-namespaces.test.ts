/**
 * Development namespaces are bounded and can be deleted (security review, issue #5): each
 * is a schema, three cluster-wide roles and a Deno pool, so an app has at most 10; a
 * DELETE removes the schema, roles, releases, logs and secrets in one transaction and
 * closes its pools; secrets for a name never deployed are refused.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { MAX_DEV_NAMESPACES } from '../namespaces/dev-names.ts'

const FUNCTIONS = `functions:
  - name: hello
    entrypoint: functions/hello.ts
    access: public
`
const FILES = {
  'service.yaml': manifest('devs', FUNCTIONS),
  'public/index.html': '<h1>d</h1>',
  'database/migrations/0001_notes.sql': 'create table notes (id int primary key);',
  'functions/hello.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler({ environment, log }) { log.info('hello ' + environment); return 'hi ' + environment } })`,
}

describe(`development namespaces: limit and delete (${backend})`, () => {
  let h: Harness
  let token: string
  let otherToken: string

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@acme.test')).token
    otherToken = (await h.createOwner('mallory@evil.test', 'Evil')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'devs', visibility: 'public' } })).status, 201)
    assert.equal((await h.request('/v1/apps/devs/deployments', { token, json: bundle(FILES) })).status, 201)
  })
  after(async () => {
    await h.close()
  })

  const api = (method: string, path: string, options: { json?: unknown; as?: string } = {}) =>
    ownerApi(h, options.as ?? token, method, path, options.json)
  const deployDev = (devName: string) => api('POST', `/v1/apps/devs/dev/${devName}/deployments`, { json: bundle(FILES) })
  const appId = async () => (await findAppBySlug(h.t.db, 'devs'))!.id
  const count = async (sql: string, params: unknown[]) => (await h.t.db.query<{ n: number }>(`select count(*)::int as n from ${sql}`, params))[0]!.n

  test('secrets for a development namespace that was never deployed are refused, and nothing is stored', async () => {
    const res = await api('PUT', '/v1/apps/devs/dev/ghost/secrets/KEY', { json: { value: 'x'.repeat(1024) } })
    assert.equal(res.status, 404, res.text)
    assert.equal(res.body.error.code, 'DEV_NAMESPACE_NOT_FOUND')
    assert.equal(await count('platform.app_secrets where app_id = $1', [await appId()]), 0)
  })

  test(`an app has at most ${MAX_DEV_NAMESPACES} development namespaces`, async () => {
    for (let index = 1; index <= MAX_DEV_NAMESPACES; index += 1) {
      const res = await deployDev(`d${index}`)
      assert.equal(res.status, 201, res.text)
    }
    const refused = await deployDev('d11')
    assert.equal(refused.status, 409, refused.text)
    assert.equal(refused.body.error.code, 'DEV_NAMESPACE_LIMIT_REACHED')
    assert.equal(refused.body.error.details.limit, MAX_DEV_NAMESPACES)
    assert.equal(await count(`platform.namespaces where app_id = $1 and dev_name = 'd11'`, [await appId()]), 0)
    assert.equal(await count(`information_schema.schemata where schema_name = 'app_devs__dev_d11'`, []), 0)
    assert.equal((await deployDev('d3')).status, 201, 'an existing namespace still takes deploys')
  })

  test('DELETE removes the schema, roles, releases, logs and secrets, and closes its pool', async () => {
    const id = await appId()
    const invoked = await api('POST', '/v1/apps/devs/dev/d1/functions/hello/invoke', { json: { input: {} } })
    assert.equal(invoked.status, 200, invoked.text)
    assert.equal(invoked.body.value, 'hi development')
    assert.equal((await api('PUT', '/v1/apps/devs/dev/d1/secrets/KEY', { json: { value: 'dev secret' } })).status, 201)
    const [namespace] = await h.t.db.query<{ role_prefix: string }>(`select role_prefix from platform.namespaces where app_id = $1 and dev_name = 'd1'`, [id])
    const livePools = h.platform.functions.stats().live

    assert.equal((await api('DELETE', '/v1/apps/devs/dev/d1', { as: otherToken })).status, 404, 'another owner cannot')
    assert.equal((await api('DELETE', '/v1/apps/devs/dev/D1')).status, 400)
    assert.equal(await count(`platform.namespaces where app_id = $1 and dev_name = 'd1'`, [id]), 1)

    const deleted = await api('DELETE', '/v1/apps/devs/dev/d1')
    assert.equal(deleted.status, 204, deleted.text)
    assert.equal(await count(`platform.namespaces where app_id = $1 and dev_name = 'd1'`, [id]), 0)
    assert.equal(await count(`information_schema.schemata where schema_name = 'app_devs__dev_d1'`, []), 0)
    assert.equal(await count(`pg_roles where rolname like $1`, [`${namespace!.role_prefix}_%`]), 0)
    assert.equal(await count(`platform.releases where app_id = $1 and dev_name = 'd1'`, [id]), 0)
    assert.equal(await count(`platform.function_logs where app_id = $1 and dev_name = 'd1'`, [id]), 0)
    assert.equal(await count(`platform.app_secrets where app_id = $1 and dev_name = 'd1'`, [id]), 0)
    assert.equal(h.platform.functions.stats().live, livePools - 1, 'its pool is closed')

    const gone = await api('POST', '/v1/apps/devs/dev/d1/functions/hello/invoke', { json: { input: {} } })
    assert.equal(gone.body.error.code, 'DEV_NAMESPACE_NOT_FOUND')
    const again = await api('DELETE', '/v1/apps/devs/dev/d1')
    assert.equal(again.status, 404)
    assert.equal(again.body.error.code, 'DEV_NAMESPACE_NOT_FOUND')

    // Production and the other development namespaces are untouched; the freed place takes a new one.
    const prod = await h.request('/_service/functions/hello', { host: 'devs', method: 'POST', body: '{}', headers: { 'x-service-sdk': '1' } })
    assert.equal(await prod.json(), 'hi production')
    assert.equal((await api('POST', '/v1/apps/devs/dev/d2/functions/hello/invoke', { json: { input: {} } })).body.value, 'hi development')
    assert.equal((await deployDev('d11')).status, 201)
    const redeployed = await deployDev('d1')
    assert.equal(redeployed.status, 409, 'd1 would be the eleventh')
  })
})
