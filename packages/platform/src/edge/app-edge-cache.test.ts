/**
 * The app edge caches apps by slug in process. These tests hold it to the rule that a change
 * bites on the very next request in the process that made it, and within the change notice's
 * latency in any other process (on PostgreSQL: a second platform with its own connection pool
 * over the same database). App access tokens are not cached: a revocation, the owner's lost
 * confirmation or the app's move to another owner bites on the next request everywhere, on
 * the data API too, whose statement checks the token itself (migration 0033's table of
 * tokens, kept by triggers in the transactions that make those changes).
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
import { announceChange, dropLocal, isPing } from '../db/notified-cache.ts'
import { APP_CHANGED } from '../apps/apps.ts'
import { eventually } from '../../test/eventually.ts'
import { deployDataApp } from '../../test/data-fixture.ts'

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
      other = await startHarness({ db: pool, cleanup: () => pool.close() }, { masterKey: h.masterKey })
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

  test('an app token on the data API is refused on the very next request in every process once its owner is unconfirmed, the app moves to another owner, the app is paused or the token is revoked', async () => {
    await deployDataApp(h, owner.token, {
      slug: 'ledger',
      visibility: 'private',
      sql: `create table entries (id int primary key); insert into entries values (1);
            create function whoami() returns text language sql stable as $$ select auth.jwt() ->> 'email' $$;`,
    })
    const app = (await findAppBySlug(h.t.db, 'ledger'))!
    const { token, secret } = await createAppToken(h.t.db, h.clock, { appId: app.id, name: 'ci', createdBy: owner.userId })
    const read = async (on: Harness, path = '/rest/v1/entries') =>
      on.request(path, { host: 'ledger', token: secret, headers: { accept: 'application/json' } })
    const expectEverywhere = async (status: number, why: string) => {
      for (const on of everywhere()) assert.equal((await read(on)).status, status, why)
    }
    await expectEverywhere(200, 'a new token')
    // The owner and email changes below are not announced: the token check reads no cache.

    await h.t.db.query('update platform.users set email_confirmed_at = null where id = $1', [owner.userId])
    await expectEverywhere(401, 'the owner no longer confirmed')
    await h.t.db.query('update platform.users set email_confirmed_at = $2 where id = $1', [owner.userId, h.clock.now()])
    await expectEverywhere(200, 'confirmed again')

    // The claims follow the owner's email as it changes.
    await h.t.db.query(`update platform.users set email = 'renamed@acme.test' where id = $1`, [owner.userId])
    try {
      for (const on of everywhere()) assert.equal(await (await read(on, '/rest/v1/rpc/whoami')).json(), 'renamed@acme.test')
    } finally {
      await h.t.db.query(`update platform.users set email = 'owner@acme.test' where id = $1`, [owner.userId])
    }

    const heir = await h.createOwner('heir@acme.test')
    await h.t.db.query('update platform.apps set owner_id = $2 where id = $1', [app.id, heir.userId])
    try {
      await expectEverywhere(401, 'the app moved to another owner')
    } finally {
      await h.t.db.query('update platform.apps set owner_id = $2 where id = $1', [app.id, owner.userId])
    }
    await expectEverywhere(200, 'moved back to the token\'s creator')

    // A pause is the edge's to refuse (the app directory: at once here, on the notice elsewhere).
    const setStatus = async (status: string) => {
      await h.t.db.transaction(async (tx) => {
        await tx.query('update platform.apps set status = $2 where id = $1', [app.id, status])
        await announceChange(tx, APP_CHANGED, 'test')
      })
      dropLocal(h.t.db, APP_CHANGED)
    }
    await setStatus('paused')
    assert.equal((await read(h)).status, 503, 'the pausing process')
    if (other) await eventually(async () => (await read(other!)).status === 503, 'the other process refuses')
    await setStatus('active')
    assert.equal((await read(h)).status, 200)
    if (other) await eventually(async () => (await read(other!)).status === 200, 'the other process serves it again')

    const revoked = await h.request(`/v1/apps/ledger/access-tokens/${token.id}`, { token: owner.token, method: 'DELETE' })
    assert.equal(revoked.status, 204)
    await expectEverywhere(401, 'revoked')
  })
})
