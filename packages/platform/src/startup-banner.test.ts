/**
 * The start-up banner: every deployed app on every start (not only the examples deployed by
 * this start), and the "first owner" hint only while the example apps' owner is the only one.
 */
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, before, describe, test } from 'node:test'
import { BASE, bundle, manifest, startHarness, type Harness } from '../test/harness.ts'
import { backend } from '../test/test-db.ts'
import { deployExamples } from './deploy/examples.ts'
import { silentLogger } from './lib/logger.ts'
import { BANNER_APP_LIMIT, readBannerFacts, startupBanner, type BannerFacts } from './startup-banner.ts'

const EXAMPLES_DIR = fileURLToPath(new URL('../../../examples', import.meta.url))

describe(`the start-up banner (${backend})`, () => {
  let h: Harness
  before(async () => {
    h = await startHarness()
  })
  after(() => h.close())

  const banner = (facts: BannerFacts, deployedNow: string[] = []) => startupBanner({
    urls: h.platform.urls, storage: 'pglite:test', devMailbox: true, operatorKey: 'in .service/operator-key', facts, deployedNow: new Set(deployedNow),
  })
  const FIRST_OWNER = /first owner {2}npx service operator create-user/

  test('a first start lists the examples it deployed and prints the first-owner hint', async () => {
    const examples = await deployExamples({ db: h.t.db, clock: h.clock, logger: silentLogger, dir: EXAMPLES_DIR, baseUrl: new URL(BASE), masterKey: new Uint8Array(32) })
    assert.deepEqual(examples.map((e) => [e.slug, e.deployedNow]), [['orders', true], ['orders-desk', true], ['tasks', true]])
    const facts = await readBannerFacts(h.t.db)
    assert.deepEqual(facts, {
      apps: [
        { slug: 'orders', visibility: 'public', status: 'active' },
        { slug: 'orders-desk', visibility: 'public', status: 'active' },
        { slug: 'tasks', visibility: 'private', status: 'active' },
      ],
      moreApps: 0,
      ownerExists: false,
    })
    const lines = banner(facts, ['orders', 'orders-desk', 'tasks'])
    assert.ok(lines.includes(`  app tasks       ${h.platform.urls.app('tasks')}  (private, deployed now)`), lines.join('\n'))
    assert.ok(lines.some((line) => FIRST_OWNER.test(line)))
  })

  test('a restart after an owner deployed an app lists every deployed app and no first-owner hint', async () => {
    const { token } = await h.createOwner('ana@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'notes', visibility: 'public' } })).status, 201)
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'draft', visibility: 'public' } })).status, 201)
    const deployed = await h.request('/v1/apps/notes/deployments', { token, json: bundle({ 'service.yaml': manifest('notes'), 'public/index.html': 'hi' }) })
    assert.equal(deployed.status, 201, await deployed.text())
    const again = await deployExamples({ db: h.t.db, clock: h.clock, logger: silentLogger, dir: EXAMPLES_DIR, baseUrl: new URL(BASE), masterKey: new Uint8Array(32) })
    assert.deepEqual(again.map((e) => [e.slug, e.deployedNow]), [['orders', false], ['orders-desk', false], ['tasks', false]])
    const facts = await readBannerFacts(h.t.db)
    assert.deepEqual(facts.apps.map((a) => a.slug), ['notes', 'orders', 'orders-desk', 'tasks'], 'every app with a release, not the undeployed draft')
    assert.equal(facts.ownerExists, true)
    const lines = banner(facts)
    assert.ok(lines.includes(`  app notes       ${h.platform.urls.app('notes')}  (public)`), lines.join('\n'))
    assert.ok(lines.includes(`  app tasks       ${h.platform.urls.app('tasks')}  (private)`), lines.join('\n'))
    assert.ok(!lines.some((line) => FIRST_OWNER.test(line)), lines.join('\n'))
  })

  test('more apps than the banner lists end in a count of the rest', () => {
    const apps = Array.from({ length: BANNER_APP_LIMIT }, (_, i) => ({ slug: `app-${String(i).padStart(2, '0')}`, visibility: 'public' as const, status: 'active' }))
    const lines = banner({ apps, moreApps: 3, ownerExists: true })
    assert.equal(lines.filter((line) => line.startsWith('  app ')).length, BANNER_APP_LIMIT)
    assert.ok(lines.includes('  … and 3 more deployed apps'), lines.join('\n'))
  })
})
