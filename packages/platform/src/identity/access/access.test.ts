import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../../test/harness.ts'
import { CookieClient } from '../../../test/cookie-client.ts'
import { appUrl, deployPage, signInTo } from '../../../test/sign-in-flow.ts'
import { findAppBySlug, type App } from '../../apps/apps.ts'
import { findUserByEmail } from '../accounts/users.ts'
import { platformMigrations } from '../../db/migrate.ts'
import { isOrganisationAdmin, mayAdministerIntegration, mayChangeIntegrationAudience, mayUseIntegration } from '../index.ts'

type Person = { token: string; userId: string }

describe(`app roles and integration audiences (${backend})`, () => {
  let h: Harness
  let owner: Person
  let ana: Person
  let bo: Person
  let cy: Person
  let rival: Person
  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test', 'Acme')
    ana = await h.createOwner('ana@acme.test', 'Acme')
    bo = await h.createOwner('bo@acme.test', 'Acme')
    cy = await h.createOwner('cy@acme.test', 'Acme')
    rival = await h.createOwner('rival@globex.test', 'Globex')
    await deployPage(h, owner.token, 'vault', 'private', 'vault page')
  })
  after(() => h.close())

  const api = (who: Person, method: string, path: string, json?: unknown) => ownerApi(h, who.token, method, path, json)
  const deploy = (who: Person, text = 'new page') => api(who, 'POST', '/v1/apps/vault/deployments',
    bundle({ 'service.yaml': manifest('vault', '', 'private'), 'public/index.html': text }))
  const setRole = (who: Person, member: string, body: unknown) => api(who, 'PUT', `/v1/apps/vault/members/${encodeURIComponent(member)}`, body)

  test('a grant is Use: it lists as a member with role use and admits at the edge exactly as before', async () => {
    const b = new CookieClient(h)
    const { response } = await signInTo(b, 'vault', 'guest@elsewhere.test')
    assert.equal(response.status, 403)
    assert.equal((await api(owner, 'POST', '/v1/apps/vault/grants', { email: 'guest@elsewhere.test' })).status, 201)
    assert.equal(await (await b.fetch(`${appUrl('vault')}/`)).text(), 'vault page')
    const { body } = await api(owner, 'GET', '/v1/apps/vault/members')
    const guest = body.members.find((m: { email: string }) => m.email === 'guest@elsewhere.test')
    assert.equal(guest.role, 'use')
    assert.deepEqual(guest.roles, ['use'])
    assert.equal(body.owner.email, 'owner@acme.test')
    assert.deepEqual(body.owner.roles, ['use', 'edit', 'administer'])
    // A guest (no company) may hold Use, never Edit or Administer.
    const edit = await setRole(owner, 'guest@elsewhere.test', { role: 'edit' })
    assert.equal(edit.status, 403)
    assert.equal(edit.body.error.code, 'MEMBER_OUTSIDE_ORGANISATION')
    assert.equal((await api(owner, 'DELETE', `/v1/apps/vault/grants/${guest.userId}`)).status, 204)
    assert.equal((await b.fetch(`${appUrl('vault')}/`)).status, 403)
  })

  test('a person of another organisation is refused every role, through members and grants', async () => {
    for (const role of ['use', 'edit', 'administer']) {
      const res = await setRole(owner, 'rival@globex.test', { role })
      assert.equal(res.status, 403, role)
      assert.equal(res.body.error.code, 'MEMBER_OUTSIDE_ORGANISATION')
    }
    const grant = await api(owner, 'POST', '/v1/apps/vault/grants', { email: 'rival@globex.test' })
    assert.equal(grant.body.error.code, 'MEMBER_OUTSIDE_ORGANISATION')
    const byId = await setRole(owner, rival.userId, { role: 'use' })
    assert.equal(byId.body.error.code, 'MEMBER_OUTSIDE_ORGANISATION')
    const { body } = await api(owner, 'GET', '/v1/apps/vault/members')
    assert.equal(body.members.some((m: { userId: string }) => m.userId === rival.userId), false)
    assert.equal((await api(rival, 'GET', '/v1/apps/vault/members')).body.error.code, 'APP_NOT_FOUND')
  })

  test('Edit may deploy and read releases; Use may not; no role sees no app', async () => {
    assert.equal((await setRole(owner, 'ana@acme.test', { role: 'edit' })).status, 201)
    assert.equal((await setRole(owner, 'bo@acme.test', { role: 'use' })).status, 201)

    const byEdit = await deploy(ana, 'deployed by ana')
    assert.equal(byEdit.status, 201, byEdit.text)
    assert.equal((await api(ana, 'GET', '/v1/apps/vault/releases')).status, 200)
    assert.equal((await api(ana, 'GET', '/v1/apps/vault')).body.app.slug, 'vault', 'service deploy reads the app first')
    const page = new CookieClient(h)
    await signInTo(page, 'vault', 'ana@acme.test')
    assert.equal(await (await page.fetch(`${appUrl('vault')}/`)).text(), 'deployed by ana', 'Edit includes Use')

    const byUse = await deploy(bo)
    assert.equal(byUse.status, 403)
    assert.equal(byUse.body.error.code, 'FORBIDDEN')
    assert.deepEqual(byUse.body.error.details, { role: 'use', required: 'edit' })
    assert.equal((await api(bo, 'GET', '/v1/apps/vault/releases')).status, 403)
    const byNobody = await deploy(cy)
    assert.equal(byNobody.status, 404)
    assert.equal(byNobody.body.error.code, 'APP_NOT_FOUND')
    const byRival = await deploy(rival)
    assert.equal(byRival.body.error.code, 'APP_NOT_FOUND')
  })

  test('Administer manages roles; Edit and Use cannot', async () => {
    await setRole(owner, 'ana@acme.test', { role: 'edit' })
    await setRole(owner, 'bo@acme.test', { role: 'use' })
    for (const who of [ana, bo]) {
      for (const res of [
        await api(who, 'GET', '/v1/apps/vault/members'),
        await setRole(who, 'cy@acme.test', { role: 'use' }),
        await api(who, 'DELETE', '/v1/apps/vault/members/bo@acme.test'),
        await api(who, 'POST', '/v1/apps/vault/grants', { email: 'cy@acme.test' }),
        await api(who, 'GET', '/v1/apps/vault/integration-audience'),
      ]) {
        assert.equal(res.status, 403)
        assert.equal(res.body.error.code, 'FORBIDDEN')
      }
    }
    const promoted = await setRole(owner, 'cy@acme.test', { roles: ['use', 'administer'] })
    assert.equal(promoted.status, 201)
    assert.equal(promoted.body.member.role, 'administer')
    assert.deepEqual(promoted.body.member.roles, ['use', 'edit', 'administer'])
    // cy, an administrator of the app, changes and removes roles and may deploy.
    const changed = await setRole(cy, 'bo@acme.test', { role: 'edit' })
    assert.equal(changed.status, 200)
    assert.equal(changed.body.member.role, 'edit')
    assert.equal((await deploy(bo, 'by bo')).status, 201)
    assert.equal((await deploy(cy, 'by cy')).status, 201)
    assert.equal((await api(cy, 'DELETE', `/v1/apps/vault/members/${bo.userId}`)).status, 204)
    assert.equal((await deploy(bo)).body.error.code, 'APP_NOT_FOUND', 'a removed member loses the app')
    assert.equal((await api(cy, 'DELETE', '/v1/apps/vault/members/bo@acme.test')).body.error.code, 'NOT_FOUND')
    assert.equal((await api(cy, 'POST', '/v1/apps/vault/grants', { email: 'bo@acme.test' })).status, 201, 'the grants alias')
    assert.equal((await api(cy, 'GET', '/v1/apps/vault/grants')).status, 200)
    // The alias for Use never lowers a role someone holds.
    assert.equal((await api(cy, 'POST', '/v1/apps/vault/grants', { email: 'ana@acme.test' })).status, 201)
    const { body } = await api(cy, 'GET', '/v1/apps/vault/members')
    assert.equal(body.members.find((m: { email: string }) => m.email === 'ana@acme.test').role, 'edit')
    await api(owner, 'DELETE', '/v1/apps/vault/members/cy@acme.test')
    assert.equal((await api(cy, 'GET', '/v1/apps/vault/members')).body.error.code, 'APP_NOT_FOUND')
  })

  test('Edit and integration use end when the person leaves the organisation or is unconfirmed, on the next request', async () => {
    await setRole(owner, 'bo@acme.test', { role: 'edit' })
    const provider = (await findAppBySlug(h.t.db, 'vault'))!
    assert.equal((await deploy(bo, 'by bo')).status, 201)
    const globex = (await findUserByEmail(h.t.db, 'rival@globex.test'))!.organisationId
    const acme = (await findUserByEmail(h.t.db, 'bo@acme.test'))!.organisationId
    // Accounts never move through the API; the rows are changed here to show the checks are live.
    await h.t.db.query('update platform.users set organisation_id = $1 where id = $2', [globex, bo.userId])
    const moved = await deploy(bo)
    assert.equal(moved.status, 403)
    assert.deepEqual(moved.body.error.details, { role: 'use', required: 'edit' })
    assert.equal(await mayUseIntegration(h.t.db, { user: { id: bo.userId }, providerApp: provider }), false)
    await h.t.db.query('update platform.users set organisation_id = $1, email_confirmed_at = null where id = $2', [acme, bo.userId])
    assert.equal((await deploy(bo)).body.error.code, 'APP_NOT_FOUND')
    assert.equal(await mayUseIntegration(h.t.db, { user: { id: bo.userId }, providerApp: provider }), false)
    await h.t.db.query('update platform.users set email_confirmed_at = now() where id = $1', [bo.userId])
    assert.equal((await deploy(bo, 'vault page')).status, 201)
    assert.equal(await mayUseIntegration(h.t.db, { user: { id: bo.userId }, providerApp: provider }), true)
    await api(owner, 'DELETE', '/v1/apps/vault/members/bo@acme.test')
  })

  test('role requests are validated precisely', async () => {
    const cases: [unknown, string][] = [
      [{ role: 'owner' }, 'role'], [{ roles: [] }, 'roles'], [{ roles: ['use', 'admin'] }, 'roles'],
      [{}, 'roles'], [{ role: 'use', roles: ['use'] }, 'role'],
    ]
    for (const [body, field] of cases) {
      const res = await setRole(owner, 'cy@acme.test', body)
      assert.equal(res.status, 400, JSON.stringify(body))
      assert.equal(res.body.error.code, 'VALIDATION_FAILED')
      assert.equal(res.body.error.details.field, field)
    }
    assert.equal((await setRole(owner, 'owner@acme.test', { role: 'use' })).body.error.code, 'CONFLICT')
    assert.equal((await setRole(owner, 'nobody@acme.test', { role: 'use' })).body.error.code, 'NOT_FOUND')
    assert.equal((await setRole(owner, 'not an email', { role: 'use' })).body.error.code, 'VALIDATION_FAILED')
  })

  describe('integration audiences', () => {
    let provider: App
    before(async () => {
      provider = (await findAppBySlug(h.t.db, 'vault'))!
    })
    const mayUse = (who: Person) => mayUseIntegration(h.t.db, { user: { id: who.userId }, providerApp: provider })
    const mayAdminister = (who: Person) => mayAdministerIntegration(h.t.db, { user: { id: who.userId }, providerApp: provider })
    const setAudience = (who: Person, body: unknown) => api(who, 'PUT', '/v1/apps/vault/integration-audience', body)

    test('the Use audience defaults to the organisation, never beyond it', async () => {
      const { body } = await api(owner, 'GET', '/v1/apps/vault/integration-audience')
      assert.deepEqual(body.audience, { useScope: 'organisation', usePeople: [], administerPeople: [] })
      assert.equal(await mayUse(owner), true)
      assert.equal(await mayUse(ana), true)
      assert.equal(await mayUse(cy), true, 'no app role needed: the organisation')
      assert.equal(await mayUse(rival), false, 'another organisation')
      const guest = (await findUserByEmail(h.t.db, 'guest@elsewhere.test'))!
      assert.equal(await mayUseIntegration(h.t.db, { user: guest, providerApp: provider }), false, 'a person of no company')
      assert.equal(await mayAdminister(owner), true)
      assert.equal(await mayAdminister(ana), false)
    })

    test('narrowing the Use audience stops mayUseIntegration; widening restores it', async () => {
      const narrowed = await setAudience(owner, { useScope: 'people', usePeople: ['ana@acme.test'], administerPeople: [bo.userId] })
      assert.equal(narrowed.status, 200, narrowed.text)
      assert.deepEqual(narrowed.body.audience, {
        useScope: 'people',
        usePeople: [{ userId: ana.userId, email: 'ana@acme.test' }],
        administerPeople: [{ userId: bo.userId, email: 'bo@acme.test' }],
      })
      assert.equal(await mayUse(ana), true)
      assert.equal(await mayUse(cy), false, 'narrowed out')
      assert.equal(await mayUse(bo), true, 'who may administer may use')
      assert.equal(await mayUse(owner), true, 'the owner always')
      assert.equal(await mayAdminister(bo), true)
      assert.equal(await mayAdminister(ana), false)

      const widened = await setAudience(owner, { useScope: 'organisation' })
      assert.equal(widened.body.audience.useScope, 'organisation')
      assert.deepEqual(widened.body.audience.usePeople, [{ userId: ana.userId, email: 'ana@acme.test' }], 'kept for later')
      assert.equal(await mayUse(cy), true)
      assert.equal(await mayUse(rival), false)
    })

    test('audiences stay inside the organisation and are set only by the owner or Administer holders', async () => {
      const outside = await setAudience(owner, { usePeople: ['rival@globex.test'] })
      assert.equal(outside.status, 403)
      assert.equal(outside.body.error.code, 'MEMBER_OUTSIDE_ORGANISATION')
      assert.equal((await setAudience(owner, { administerPeople: ['guest@elsewhere.test'] })).body.error.code, 'MEMBER_OUTSIDE_ORGANISATION')
      // Nothing of the refused request was stored (one transaction).
      const refused = await setAudience(owner, { useScope: 'people', usePeople: ['rival@globex.test'] })
      assert.equal(refused.status, 403)
      assert.equal((await api(owner, 'GET', '/v1/apps/vault/integration-audience')).body.audience.useScope, 'organisation')
      for (const [body, field] of [[{ useScope: 'everyone' }, 'useScope'], [{ usePeople: 'ana@acme.test' }, 'usePeople'], [{ audience: 1 }, 'audience']] as const) {
        const res = await setAudience(owner, body)
        assert.equal(res.body.error.code, 'VALIDATION_FAILED')
        assert.equal(res.body.error.details.field, field)
      }
      await setRole(owner, 'ana@acme.test', { role: 'edit' })
      assert.equal((await setAudience(ana, { useScope: 'people' })).body.error.code, 'FORBIDDEN')
      assert.equal((await setAudience(rival, { useScope: 'people' })).body.error.code, 'APP_NOT_FOUND')
      await setRole(owner, 'ana@acme.test', { role: 'administer' })
      assert.equal((await setAudience(ana, { useScope: 'people', usePeople: [] })).status, 200)
      assert.equal(await mayUse(cy), false)
      assert.equal((await setAudience(ana, { useScope: 'organisation' })).status, 200)
      await setRole(owner, 'ana@acme.test', { role: 'edit' })
    })

    test('the Administer audience changes the audiences through the API without any app role, as on the integration page', async () => {
      assert.equal((await api(cy, 'GET', '/v1/apps/vault/integration-audience')).body.error.code, 'APP_NOT_FOUND', 'cy holds no role and is not named')
      assert.equal((await setAudience(owner, { useScope: 'organisation', administerPeople: ['cy@acme.test'] })).status, 200)
      assert.equal(await mayChangeIntegrationAudience(h.t.db, { user: (await findUserByEmail(h.t.db, 'cy@acme.test'))!, app: provider }), true)
      const read = await api(cy, 'GET', '/v1/apps/vault/integration-audience')
      assert.equal(read.status, 200, read.text)
      const changed = await setAudience(cy, { useScope: 'organisation', usePeople: [], administerPeople: [] })
      assert.equal(changed.status, 200, changed.text)
      assert.deepEqual(changed.body.audience.administerPeople, [], 'cy removed themself')
      assert.equal((await api(cy, 'GET', '/v1/apps/vault/integration-audience')).body.error.code, 'APP_NOT_FOUND', 'and lost the right at once')
      assert.equal((await api(cy, 'GET', '/v1/apps/vault/members')).body.error.code, 'APP_NOT_FOUND', 'the audience never reached the app\'s members')
    })
  })

  test('migration 0015 turns the grants already stored into Use', async () => {
    const migration = platformMigrations().find((m) => m.version === 15)!
    const rollback = new Error('rollback')
    const roles = await h.t.db.transaction(async (tx) => {
      // The schema as 0014 left it, with a grant in it; then 0015 as the platform runs it.
      await tx.exec(`drop table platform.integration_audience_people; drop table platform.integration_audiences;
        alter table platform.app_grants drop column role, drop column updated_at`)
      await tx.query(`insert into platform.apps (organisation_id, owner_id, slug, name, visibility)
        select organisation_id, id, 'old-app', 'old', 'private' from platform.users where id = $1`, [owner.userId])
      await tx.query(`insert into platform.app_grants (app_id, user_id, granted_by)
        select id, $1, $2 from platform.apps where slug = 'old-app'`, [ana.userId, owner.userId])
      await tx.exec(migration.sql)
      const rows = await tx.query<{ role: string }>(
        `select g.role from platform.app_grants g join platform.apps a on a.id = g.app_id where a.slug = 'old-app'`)
      throw Object.assign(rollback, { rows })
    }).catch((error: unknown) => {
      if (error !== rollback) throw error
      return (error as Error & { rows: { role: string }[] }).rows.map((r) => r.role)
    })
    assert.deepEqual(roles, ['use'])
  })

  test('isOrganisationAdmin: a confirmed admin of that organisation only', async () => {
    const boss = (await findUserByEmail(h.t.db, 'owner@acme.test'))!
    const member = (await findUserByEmail(h.t.db, 'ana@acme.test'))!
    assert.equal(boss.organisationRole, 'admin', 'the first person of a company administers it')
    assert.equal(isOrganisationAdmin(boss, boss.organisationId), true)
    assert.equal(isOrganisationAdmin(member, member.organisationId), false)
    const other = (await findUserByEmail(h.t.db, 'rival@globex.test'))!
    assert.equal(isOrganisationAdmin(boss, other.organisationId), false)
    assert.equal(isOrganisationAdmin(boss, null), false)
    assert.equal(isOrganisationAdmin({ ...boss, emailConfirmedAt: null }, boss.organisationId), false)
  })
})
