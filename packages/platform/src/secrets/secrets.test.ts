/**
 * App secrets end to end: the owner API (values in, never out; names and sizes checked;
 * another owner and app tokens refused), encryption at rest bound to app, namespace and
 * name, the deploy warning for a required secret without a value, `ctx.secrets` in real
 * Deno (declared names only; `get` null and `require` SECRET_NOT_SET when unset), and
 * redaction of every value from what leaves a Function: stored log lines (message, nested
 * fields, JSON strings, keys), HTTP error bodies (message, details, stack) and the worker's
 * console output in the platform log.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { createSecretStore } from './secrets.ts'
import { recordingLogger } from '../functions/test-bundle.ts'
import { eventually } from '../../test/eventually.ts'

/** Characters JSON escapes and URLs encode, so each redacted form is exercised. */
const SECRET = 'sk_live_"q"\\b/ü 42'
const ROTATED = 'sk_rotated_7f3a9c'

const SECRETS_YAML = `functions:
  - name: secret
    entrypoint: functions/secret.ts
    access: public
secrets:
  API_KEY: required
  OPTIONAL_KEY: required
`

const FILES = {
  'public/index.html': '<h1>s</h1>',
  'functions/secret.ts': `
    import { defineFunction, enum as enumOf, errors, isServiceError, object } from '@service/server'
    let cached = null
    export default defineFunction({
      input: object({ mode: enumOf(['get', 'require-unset', 'undeclared', 'log', 'throw', 'throw-typed', 'cached']) }),
      async handler({ input, secrets, log }) {
        if (input.mode === 'get') return { value: await secrets.get('API_KEY'), unset: await secrets.get('OPTIONAL_KEY') }
        if (input.mode === 'require-unset') return await secrets.require('OPTIONAL_KEY')
        if (input.mode === 'undeclared') {
          const outcomes = []
          for (const run of [() => secrets.get('NOT_DECLARED'), () => secrets.require('NOT_DECLARED')]) {
            try { await run() } catch (error) { outcomes.push({ typed: isServiceError(error), code: error.code, details: error.details }) }
          }
          return outcomes
        }
        if (input.mode === 'cached') {
          // A value kept in a module global outlives a rotation of the secret.
          if (cached === null) { cached = await secrets.require('API_KEY'); return 'cached' }
          throw new Error('old value ' + cached)
        }
        const key = await secrets.require('API_KEY')
        if (input.mode === 'log') {
          log.warn('using ' + key, { nested: { deep: [key, { again: key }] }, json: JSON.stringify({ key }), twice: JSON.stringify(JSON.stringify({ key })), url: 'https://x.test/?k=' + encodeURIComponent(key), [key]: 'as a key' })
          console.log('console sees', key)
          return 'logged'
        }
        if (input.mode === 'throw') throw new Error('upstream refused ' + key)
        throw errors.badRequest('KEY_REJECTED', 'rejected ' + key, { key, nested: { list: [key] }, json: JSON.stringify({ key }) })
      },
    })`,
}

describe(`app secrets (${backend})`, () => {
  let h: Harness
  let token: string
  let otherToken: string
  const logger = recordingLogger()

  before(async () => {
    h = await startHarness(undefined, { logger })
    token = (await h.createOwner('owner@acme.test')).token
    otherToken = (await h.createOwner('mallory@evil.test', 'Evil')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'vault', visibility: 'public' } })).status, 201)
  })
  after(async () => {
    await h.close()
  })

  const api = (method: string, path: string, options: { json?: unknown; as?: string } = {}) =>
    ownerApi(h, options.as ?? token, method, path, options.json)

  async function call(mode: string) {
    const res = await h.request('/_service/functions/secret', {
      host: 'vault', method: 'POST', headers: { 'x-service-sdk': '1', 'content-type': 'application/json' }, body: JSON.stringify({ mode }),
    })
    const text = await res.text()
    return { status: res.status, text, body: JSON.parse(text) }
  }

  test('a deploy with a required secret without a value warns at its line and still serves', async () => {
    const dry = await api('POST', '/v1/apps/vault/deployments?dryRun=true', { json: bundle({ 'service.yaml': manifest('vault', SECRETS_YAML), ...FILES }) })
    assert.equal(dry.status, 200, dry.text)
    assert.deepEqual(dry.body.warnings.map((w: any) => w.code), ['SECRET_NOT_SET', 'SECRET_NOT_SET'])
    const res = await api('POST', '/v1/apps/vault/deployments', { json: bundle({ 'service.yaml': manifest('vault', SECRETS_YAML), ...FILES }) })
    assert.equal(res.status, 201, res.text)
    const warnings = res.body.warnings.filter((w: any) => w.code === 'SECRET_NOT_SET')
    assert.deepEqual(warnings.map((w: any) => [w.path, w.line, w.column, w.severity]), [
      ['secrets.API_KEY', 13, 3, 'warning'],
      ['secrets.OPTIONAL_KEY', 14, 3, 'warning'],
    ])
    assert.match(warnings[0].message, /service secrets set API_KEY/)
    const unset = await call('get')
    assert.equal(unset.status, 200)
    assert.deepEqual(unset.body, { value: null, unset: null })
  })

  test('PUT stores a value and answers without it; GET lists names, declared and required status, never values', async () => {
    const created = await api('PUT', '/v1/apps/vault/secrets/API_KEY', { json: { value: SECRET } })
    assert.equal(created.status, 201, created.text)
    assert.equal(created.body.secret.name, 'API_KEY')
    assert.equal(created.body.secret.set, true)
    assert.ok(!created.text.includes('sk_live'))
    const replaced = await api('PUT', '/v1/apps/vault/secrets/API_KEY', { json: { value: SECRET } })
    assert.equal(replaced.status, 200)
    assert.equal((await api('PUT', '/v1/apps/vault/secrets/EXTRA_KEY', { json: { value: 'undeclared value' } })).status, 201)

    const listed = await api('GET', '/v1/apps/vault/secrets')
    assert.equal(listed.status, 200)
    assert.ok(!listed.text.includes('sk_live') && !listed.text.includes('undeclared value'))
    assert.deepEqual(listed.body.secrets.map((s: any) => [s.name, s.declared, s.required, s.set, typeof s.updatedAt]), [
      ['API_KEY', true, true, true, 'string'],
      ['EXTRA_KEY', false, false, true, 'string'],
      ['OPTIONAL_KEY', true, true, false, 'object'],
    ])
    assert.equal(listed.body.secrets[0].updatedAt, h.clock.now().toISOString())
  })

  test('a value is stored encrypted, bound to its app, namespace and name', async () => {
    const app = (await findAppBySlug(h.t.db, 'vault'))!
    const rows = await h.t.db.query<{ value_encrypted: string }>(
      `select value_encrypted from platform.app_secrets where app_id = $1 and name = 'API_KEY'`, [app.id])
    assert.match(rows[0]!.value_encrypted, /^v1\./)
    assert.ok(!rows[0]!.value_encrypted.includes('sk_live'))
    // A store with a known key: a ciphertext copied onto another name or namespace does not decrypt there.
    const store = createSecretStore({ db: h.t.db, clock: h.clock, key: new Uint8Array(32).fill(7) })
    const prod = { appId: app.id, devName: '' }
    await store.set(prod, { name: 'MOVED_FROM', value: 'moved value', userId: null })
    await store.set(prod, { name: 'MOVED_TO', value: 'other value', userId: null })
    await h.t.db.query(`update platform.app_secrets set value_encrypted = (select value_encrypted from platform.app_secrets where app_id = $1 and name = 'MOVED_FROM') where app_id = $1 and name = 'MOVED_TO'`, [app.id])
    await h.t.db.query(`insert into platform.app_secrets (app_id, dev_name, name, value_encrypted, created_at, updated_at)
      select app_id, 'bob', name, value_encrypted, created_at, updated_at from platform.app_secrets where app_id = $1 and name = 'MOVED_FROM'`, [app.id])
    assert.equal(await store.read(prod, 'MOVED_FROM'), 'moved value')
    await assert.rejects(store.read(prod, 'MOVED_TO'))
    await assert.rejects(store.read({ appId: app.id, devName: 'bob' }, 'MOVED_FROM'))
    await h.t.db.query(`delete from platform.app_secrets where app_id = $1 and name like 'MOVED_%'`, [app.id])
  })

  test('names, values and bodies are checked, and the refusals never repeat the value', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['lower_case', { value: 'x' }, 'VALIDATION_FAILED'],
      ['A'.repeat(65), { value: 'x' }, 'VALIDATION_FAILED'],
      ['GOOD', { value: '' }, 'VALIDATION_FAILED'],
      ['GOOD', { value: 42 }, 'VALIDATION_FAILED'],
      ['GOOD', {}, 'VALIDATION_FAILED'],
      ['GOOD', { value: 'sk_live_echo', extra: true }, 'VALIDATION_FAILED'],
      ['GOOD', { value: 'x'.repeat(64 * 1024 + 1) }, 'VALIDATION_FAILED'],
    ]
    for (const [name, json, code] of cases) {
      const res = await api('PUT', `/v1/apps/vault/secrets/${name}`, { json })
      assert.equal(res.status, 400, `${name} ${JSON.stringify(json).slice(0, 40)}: ${res.text}`)
      assert.equal(res.body.error.code, code)
      assert.ok(!res.text.includes('sk_live_echo'))
    }
    assert.equal((await api('PUT', '/v1/apps/vault/secrets/BIG', { json: { value: 'é'.repeat(32 * 1024) } })).status, 201)
    assert.equal((await api('DELETE', '/v1/apps/vault/secrets/BIG')).status, 204)
    const missing = await api('DELETE', '/v1/apps/vault/secrets/BIG')
    assert.equal(missing.status, 404)
    assert.equal(missing.body.error.code, 'SECRET_NOT_FOUND')
  })

  test('another owner, an app token and no token cannot list, set or remove secrets', async () => {
    for (const [method, path, json] of [
      ['GET', '/v1/apps/vault/secrets', undefined],
      ['PUT', '/v1/apps/vault/secrets/API_KEY', { value: 'hijacked' }],
      ['DELETE', '/v1/apps/vault/secrets/API_KEY', undefined],
      ['GET', '/v1/apps/vault/dev/alice/secrets', undefined],
    ] as const) {
      const other = await api(method, path, { as: otherToken, ...(json ? { json } : {}) })
      assert.equal(other.status, 404, `${method} ${path}`)
      assert.equal(other.body.error.code, 'APP_NOT_FOUND')
      const appToken = await api(method, path, { as: 'svc_app_forged', ...(json ? { json } : {}) })
      assert.equal(appToken.body.error.code, 'APP_TOKEN_NOT_ALLOWED')
      const res = await h.request(path, { method, ...(json ? { json } : {}) })
      assert.equal(res.status, 401)
    }
    assert.deepEqual((await call('get')).body, { value: SECRET, unset: null })
  })

  test('ctx.secrets reads declared secrets: get is null when unset, require fails naming it, undeclared names are typed errors', async () => {
    assert.deepEqual((await call('get')).body, { value: SECRET, unset: null })
    const unset = await call('require-unset')
    assert.equal(unset.status, 500)
    assert.equal(unset.body.error.code, 'SECRET_NOT_SET')
    assert.deepEqual(unset.body.error.details, { secret: 'OPTIONAL_KEY' })
    assert.match(unset.body.error.message, /OPTIONAL_KEY/)
    assert.deepEqual((await call('undeclared')).body, [
      { typed: true, code: 'SECRET_NOT_DECLARED', details: { secret: 'NOT_DECLARED' } },
      { typed: true, code: 'SECRET_NOT_DECLARED', details: { secret: 'NOT_DECLARED' } },
    ])
  })

  test("a Function of another app declaring the same name reads its own app's value, never this one's", async () => {
    assert.equal((await h.request('/v1/apps', { token: otherToken, json: { slug: 'copycat', visibility: 'public' } })).status, 201)
    const deployed = await api('POST', '/v1/apps/copycat/deployments', { as: otherToken, json: bundle({ 'service.yaml': manifest('copycat', SECRETS_YAML), ...FILES }) })
    assert.equal(deployed.status, 201, deployed.text)
    const res = await h.request('/_service/functions/secret', {
      host: 'copycat', method: 'POST', headers: { 'x-service-sdk': '1', 'content-type': 'application/json' }, body: JSON.stringify({ mode: 'get' }),
    })
    assert.deepEqual(await res.json(), { value: null, unset: null })
    assert.equal((await api('PUT', '/v1/apps/copycat/secrets/API_KEY', { as: otherToken, json: { value: 'copycat value' } })).status, 201)
    assert.deepEqual((await call('get')).body, { value: SECRET, unset: null })
  })

  test('a development namespace does not see production values', async () => {
    const dev = await api('POST', '/v1/apps/vault/dev/alice/deployments', { json: bundle({ 'service.yaml': manifest('vault', SECRETS_YAML), ...FILES }) })
    assert.equal(dev.status, 201, dev.text)
    assert.deepEqual(dev.body.warnings.filter((w: any) => w.code === 'SECRET_NOT_SET').map((w: any) => w.path), ['secrets.API_KEY', 'secrets.OPTIONAL_KEY'])
    const invoked = await api('POST', '/v1/apps/vault/dev/alice/functions/secret/invoke', { json: { input: { mode: 'get' } } })
    assert.deepEqual(invoked.body.value, { value: null, unset: null })
    assert.equal((await api('PUT', '/v1/apps/vault/dev/alice/secrets/API_KEY', { json: { value: 'dev-value-1' } })).status, 201)
    const again = await api('POST', '/v1/apps/vault/dev/alice/functions/secret/invoke', { json: { input: { mode: 'get' } } })
    assert.deepEqual(again.body.value, { value: 'dev-value-1', unset: null })
    assert.deepEqual((await call('get')).body, { value: SECRET, unset: null })
    const listed = await api('GET', '/v1/apps/vault/dev/alice/secrets')
    assert.deepEqual(listed.body.secrets.map((s: any) => [s.name, s.set]), [['API_KEY', true], ['OPTIONAL_KEY', false]])
  })

  test('a secret value never leaves a Function: stored logs, error bodies and the worker console are redacted', async () => {
    const forms = [SECRET, JSON.stringify(SECRET).slice(1, -1), encodeURIComponent(SECRET), 'sk_live']
    const leaks = (text: string) => forms.filter((form) => text.includes(form))

    assert.equal((await call('log')).body, 'logged')
    const app = (await findAppBySlug(h.t.db, 'vault'))!
    let rows: { message: string; fields: unknown }[] = []
    await eventually(async () => (rows = await h.t.db.query(
      `select message, fields from platform.function_logs where app_id = $1 and level = 'warn'`, [app.id])).length > 0, 'the warn line was stored', 10_000)
    assert.equal(rows.length, 1)
    const stored = JSON.stringify(rows[0])
    assert.deepEqual(leaks(stored), [], stored)
    assert.equal(rows[0]!.message, 'using [REDACTED]')
    assert.deepEqual((rows[0]!.fields as any).nested, { deep: ['[REDACTED]', { again: '[REDACTED]' }] })
    assert.equal((rows[0]!.fields as any).json, '{"key":"[REDACTED]"}')
    assert.equal((rows[0]!.fields as any)['[REDACTED]'], 'as a key')

    const logs = await api('GET', '/v1/apps/vault/logs?level=warn')
    assert.equal(logs.status, 200)
    assert.deepEqual(leaks(logs.text), [])

    for (const mode of ['throw', 'throw-typed']) {
      const failed = await call(mode)
      assert.ok(failed.status >= 400)
      assert.deepEqual(leaks(failed.text), [], failed.text)
      assert.match(failed.text, /\[REDACTED\]/)
    }
    const typed = await call('throw-typed')
    assert.equal(typed.body.error.code, 'KEY_REJECTED')
    assert.deepEqual(typed.body.error.details, { key: '[REDACTED]', nested: { list: ['[REDACTED]'] }, json: '{"key":"[REDACTED]"}' })
    const untyped = await call('throw')
    assert.equal(untyped.body.error.message, 'The Function failed: upstream refused [REDACTED]')
    assert.match(untyped.body.error.details.stack, /upstream refused \[REDACTED\]/)

    const output = logger.lines.filter((line) => line.message === 'function output')
    assert.ok(output.some((line) => String(line.fields?.['line']).includes('console sees [REDACTED]')), JSON.stringify(output))
    assert.deepEqual(leaks(JSON.stringify(logger.lines)), [])
  })

  test('a value a Function kept is still redacted after the secret is rotated or removed', async () => {
    assert.equal((await call('cached')).body, 'cached')
    assert.equal((await api('PUT', '/v1/apps/vault/secrets/API_KEY', { json: { value: ROTATED } })).status, 200)
    const failed = await call('cached')
    assert.equal(failed.body.error.message, 'The Function failed: old value [REDACTED]')
    assert.equal((await api('DELETE', '/v1/apps/vault/secrets/API_KEY')).status, 204)
    const removed = await call('cached')
    assert.equal(removed.body.error.message, 'The Function failed: old value [REDACTED]')
    assert.deepEqual((await call('get')).body, { value: null, unset: null })
  })
})
