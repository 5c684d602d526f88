/**
 * The app edge caches apps by slug in process. These tests hold it to the rule that a change
 * bites on the very next request in the process that made it, and within the change notice's
 * latency in any other process (on PostgreSQL: a second platform with its own connection pool
 * over the same database). App access tokens are not cached: a revocation bites on the next
 * request everywhere.
 *
 * The process making the changes hears no change notices (its LISTEN is replaced by one that
 * never delivers: the worst case of notice latency), so what refuses its next request is the
 * synchronous drop after the commit, not its own NOTIFY coming back.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb } from '../../test/test-db.ts'
import type { Db } from '../db/db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { deployPage } from '../../test/sign-in-flow.ts'
import { openPostgres } from '../db/postgres.ts'
import { createApp, findAppBySlug } from '../apps/apps.ts'
import { deployBundle } from '../deploy/deploy.ts'
import { confirmEmail, createAppToken, createUser, enforceConfirmationDeadlines, findUserById } from '../identity/index.ts'
import { isPing } from '../db/notified-cache.ts'
import { eventually } from '../../test/eventually.ts'

/**
 * The same database, but a LISTEN on it never hears a change notice. It still hears the
 * heartbeat's pings, or its caches would notice the silence and stop keeping anything.
 */
function deaf(db: Db): Db {
  return { ...db, listen: (channel, onPayload, options) => db.listen(channel, (payload) => isPing(payload) && onPayload(payload), options) }
}

describe(`app edge caches: changes bite on the next request (${backend})`, () => {
  let h: Harness
  /** On PostgreSQL, a second platform over the same database, as another process. */
  let other: Harness | null = null
  let owner: { token: string; userId: string }
  const status = async (on: Harness, slug: string, token?: string) =>
    (await on.request('/', { host: slug, headers: { accept: 'application/json' }, ...(token ? { token } : {}) })).status
  const everywhere = () => [h, ...(other ? [other] : [])]

  before(async () => {
    const t = await createTestDb()
    h = await startHarness({ ...t, db: deaf(t.db) })
    await h.platform.ready()
    owner = await h.createOwner('owner@acme.test')
    if (h.t.url) {
      const pool = openPostgres({ url: h.t.url, maxConnections: 2 })
      other = await startHarness({ db: pool, cleanup: () => pool.close() })
      await other.platform.ready()
    }
  })
  after(async () => {
    await other?.close()
    await h.close()
  })

  test('redeploying a public app as private refuses anonymous callers on the next request', async () => {
    await deployPage(h, owner.token, 'flip', 'public')
    for (const on of everywhere()) assert.equal(await status(on, 'flip'), 200)
    const res = await h.request('/v1/apps/flip/deployments', {
      token: owner.token, json: bundle({ 'service.yaml': manifest('flip', '', 'private'), 'public/index.html': 'now private' }),
    })
    assert.equal(res.status, 201)
    assert.equal(await status(h, 'flip'), 401, 'the deploying process')
    if (other) await eventually(async () => (await status(other!, 'flip')) === 401, 'the other process refuses')
  })

  test('an app paused at its owner\'s confirmation deadline is refused on the next request, and served again on confirmation', async () => {
    const late = await createUser(h.t.db, {
      // A deadline a second away, so the clock need not move past the caches' 30-second bound.
      email: 'late@acme.test', organisationId: null, confirmationDeadline: new Date(h.clock.now().getTime() + 1000),
    })
    const app = await createApp(h.t.db, late, { slug: 'late-app', visibility: 'public' })
    await deployBundle({ db: h.t.db, clock: h.clock }, {
      app, user: late, body: bundle({ 'service.yaml': manifest('late-app'), 'public/index.html': 'late page' }),
    })
    for (const on of everywhere()) assert.equal(await status(on, 'late-app'), 200)

    h.clock.advance(2000)
    assert.equal(await enforceConfirmationDeadlines(h.t.db, h.clock), 1)
    assert.equal(await status(h, 'late-app'), 503, 'the pausing process')
    if (other) await eventually(async () => (await status(other!, 'late-app')) === 503, 'the other process refuses')

    await confirmEmail(h.t.db, h.clock, { userId: late.id, byRegistrant: true })
    assert.equal((await findUserById(h.t.db, late.id))!.pausedAt, null)
    assert.equal(await status(h, 'late-app'), 200, 'the confirming process')
    if (other) await eventually(async () => (await status(other!, 'late-app')) === 200, 'the other process serves it again')
  })

  test('a revoked app token is refused on the very next request in every process (spec 2.3: revalidated on every request)', async () => {
    await deployPage(h, owner.token, 'tokens', 'private')
    const app = (await findAppBySlug(h.t.db, 'tokens'))!
    const { token, secret } = await createAppToken(h.t.db, h.clock, { appId: app.id, name: 'ci', createdBy: owner.userId })
    for (const on of everywhere()) assert.equal(await status(on, 'tokens', secret), 200)
    const revoked = await h.request(`/v1/apps/tokens/access-tokens/${token.id}`, { token: owner.token, method: 'DELETE' })
    assert.equal(revoked.status, 204)
    for (const on of everywhere()) assert.equal(await status(on, 'tokens', secret), 401)
  })
})
