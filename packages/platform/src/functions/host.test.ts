// The Functions host across releases: a release's files are materialised once as regular
// files, and after a redeploy the next call runs the new release's code.
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { materialiseRelease } from './bundle-files.ts'

const FUNCTIONS = `functions:
  - name: version
    entrypoint: functions/version.ts
    access: public
`

function versionBundle(slug: string, version: number) {
  return bundle({
    'service.yaml': manifest(slug, FUNCTIONS),
    'public/index.html': '<h1>v</h1>',
    'functions/version.ts': `
      import { defineFunction, object } from '@service/server'
      export default defineFunction({ input: object({}), async handler() { return ${version} } })`,
  })
}

describe(`Functions host (${backend})`, () => {
  let h: Harness
  let token: string
  const scratch = mkdtempSync(join(tmpdir(), 'service-host-test-'))

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@acme.test')).token
    const created = await h.request('/v1/apps', { token, json: { slug: 'versions', visibility: 'public' } })
    assert.equal(created.status, 201)
  })
  after(async () => {
    rmSync(scratch, { recursive: true, force: true })
    await h.close()
  })

  async function deploy(version: number): Promise<void> {
    const res = await h.request('/v1/apps/versions/deployments', { token, json: versionBundle('versions', version) })
    assert.equal(res.status, 201, await res.text())
  }

  async function call(): Promise<unknown> {
    const res = await h.request('/_service/functions/version', { host: 'versions', method: 'POST', body: '{}', headers: { 'x-service-sdk': '1' } })
    assert.equal(res.status, 200)
    return await res.json()
  }

  test('after a redeploy the next call runs the new release', async () => {
    await deploy(1)
    assert.equal(await call(), 1)
    await deploy(2)
    assert.equal(await call(), 2)
    assert.equal(await call(), 2)
  })

  test('a release is written once as regular files, with no staging left behind', async () => {
    const app = (await findAppBySlug(h.t.db, 'versions'))!
    const releaseId = app.activeReleaseId!
    const dir = await materialiseRelease(h.t.db, { bundlesDir: scratch, releaseId })
    assert.equal(dir, join(scratch, releaseId))
    const file = join(dir, 'functions/version.ts')
    assert.match(readFileSync(file, 'utf8'), /return 2/)
    assert.ok(statSync(file).isFile())
    const written = statSync(file).mtimeMs
    await materialiseRelease(h.t.db, { bundlesDir: scratch, releaseId })
    assert.equal(statSync(file).mtimeMs, written, 'the second call leaves the files alone')
    assert.deepEqual(readdirSync(scratch), [releaseId])
  })

  test('a release id that is not a UUID is refused before touching the disk', async () => {
    await assert.rejects(materialiseRelease(h.t.db, { bundlesDir: scratch, releaseId: '../etc' }), /not a release id/)
  })
})
