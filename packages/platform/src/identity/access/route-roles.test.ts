// Which app role each owner API route family needs (issue 12): secrets, Function logs, cron
// and jobs take Edit; app access tokens are listed and revoked with Administer and created by
// the owner only; custom domains are read with Administer (platform administrators keep their
// access); GET /v1/apps lists every app the caller holds a role on, with that role. A lower
// role is 403 FORBIDDEN with {role, required}; no role, or another organisation, is 404
// APP_NOT_FOUND, exactly as for an app that does not exist.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { bundle, manifest, ownerApi, startHarness, type Harness } from '../../../test/harness.ts'
import { eventually } from '../../../test/eventually.ts'

type Person = { token: string; userId: string }

const APP = `functions:
  - name: note
    entrypoint: functions/note.ts
    access: public
  - name: tick
    entrypoint: functions/tick.ts
    access: system
cron:
  - name: hourly
    schedule: "0 * * * *"
    function: tick
`

const FILES = {
  'functions/note.ts': `import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), async handler({ log }) { log.info('ledger noted'); return 'noted' } })`,
  'functions/tick.ts': `import { defineFunction, literal, object, string } from '@service/server'
export default defineFunction({
  input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }),
  async handler() { return null },
})`,
}

describe(`owner API routes by app role (${backend})`, () => {
  let h: Harness
  let owner: Person
  let editor: Person
  let admin: Person
  let user: Person
  let stranger: Person
  let rival: Person
  let operatorAdmin: string

  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test', 'Acme')
    editor = await h.createOwner('ed@acme.test', 'Acme')
    admin = await h.createOwner('ada@acme.test', 'Acme')
    user = await h.createOwner('usa@acme.test', 'Acme')
    stranger = await h.createOwner('stan@acme.test', 'Acme')
    rival = await h.createOwner('rival@globex.test', 'Globex')
    const made = await h.request('/v1/operator/users', { token: h.operatorKey, json: { email: 'ops@platform.test', company: 'Platform', platformAdmin: true } })
    assert.equal(made.status, 201)
    operatorAdmin = ((await made.json()) as { token: string }).token

    assert.equal((await api(owner, 'POST', '/v1/apps', { slug: 'ledger', visibility: 'public' })).status, 201)
    const deployed = await api(owner, 'POST', '/v1/apps/ledger/deployments', bundle({ 'service.yaml': manifest('ledger', APP), ...FILES }))
    assert.equal(deployed.status, 201, deployed.text)
    for (const [who, role] of [['ed', 'edit'], ['ada', 'administer'], ['usa', 'use']] as const) {
      assert.equal((await api(owner, 'PUT', `/v1/apps/ledger/members/${who}@acme.test`, { role })).status, 201)
    }
  })
  after(() => h.close())

  const api = (who: Person | string, method: string, path: string, json?: unknown) =>
    ownerApi(h, typeof who === 'string' ? who : who.token, method, path, json)

  /** `who` is refused with FORBIDDEN naming the role held and the one needed. */
  async function forbidden(who: Person, method: string, path: string, details: { role: string; required: string }, json?: unknown) {
    const res = await api(who, method, path, json)
    assert.equal(res.status, 403, `${method} ${path}: ${res.text}`)
    assert.equal(res.body.error.code, 'FORBIDDEN', path)
    assert.deepEqual(res.body.error.details, details, path)
  }

  /** Neither a person without a role nor one of another organisation learns that the app exists. */
  async function hidden(method: string, path: string, json?: unknown) {
    for (const who of [stranger, rival]) {
      const res = await api(who, method, path, json)
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`)
      assert.equal(res.body.error.code, 'APP_NOT_FOUND', path)
    }
  }

  test('secrets: Edit sets, lists and deletes them; a Use member can neither read the names nor set one', async () => {
    const set = await api(editor, 'PUT', '/v1/apps/ledger/secrets/API_KEY', { value: 'sk_by_editor' })
    assert.equal(set.status, 201, set.text)
    const listed = await api(editor, 'GET', '/v1/apps/ledger/secrets')
    assert.equal(listed.status, 200)
    assert.deepEqual(listed.body.secrets.map((s: { name: string; set: boolean }) => [s.name, s.set]), [['API_KEY', true]])
    assert.equal((await api(admin, 'GET', '/v1/apps/ledger/secrets')).status, 200, 'Administer includes Edit')

    const useEdit = { role: 'use', required: 'edit' }
    await forbidden(user, 'GET', '/v1/apps/ledger/secrets', useEdit)
    await forbidden(user, 'GET', '/v1/apps/ledger/dev/alice/secrets', useEdit)
    await forbidden(user, 'PUT', '/v1/apps/ledger/secrets/API_KEY', useEdit, { value: 'sk_by_use' })
    await forbidden(user, 'PUT', '/v1/apps/ledger/secrets/OTHER', useEdit, { value: 'sk_by_use' })
    await forbidden(user, 'DELETE', '/v1/apps/ledger/secrets/API_KEY', useEdit)
    await hidden('GET', '/v1/apps/ledger/secrets')
    await hidden('PUT', '/v1/apps/ledger/secrets/OTHER', { value: 'sk_by_stranger' })
    await hidden('DELETE', '/v1/apps/ledger/secrets/API_KEY')
    const after = await api(owner, 'GET', '/v1/apps/ledger/secrets')
    assert.deepEqual(after.body.secrets.map((s: { name: string; updatedAt: string }) => [s.name, s.updatedAt]),
      [['API_KEY', listed.body.secrets[0].updatedAt]], 'the refused writes changed nothing')

    assert.equal((await api(editor, 'DELETE', '/v1/apps/ledger/secrets/API_KEY')).status, 204)
    assert.deepEqual((await api(owner, 'GET', '/v1/apps/ledger/secrets')).body.secrets, [])
  })

  test('Function logs: Edit reads the lines the owner reads; a Use member cannot read them', async () => {
    const called = await h.request('/_service/functions/note', { host: 'ledger', json: {}, headers: { 'x-service-sdk': '1' } })
    assert.equal(called.status, 200, await called.text())
    // Lines are written after the response; wait until the owner sees the line.
    let owners: { logs: { message: string }[] } = { logs: [] }
    await eventually(async () => (owners = (await api(owner, 'GET', '/v1/apps/ledger/logs?function=note')).body).logs.length > 0,
      'the owner sees the line', 10_000)
    assert.deepEqual(owners.logs.map((line) => line.message), ['ledger noted'])
    const edits = await api(editor, 'GET', '/v1/apps/ledger/logs?function=note')
    assert.equal(edits.status, 200)
    assert.deepEqual(edits.body, owners)

    await forbidden(user, 'GET', '/v1/apps/ledger/logs', { role: 'use', required: 'edit' })
    await forbidden(user, 'GET', '/v1/apps/ledger/dev/alice/logs', { role: 'use', required: 'edit' })
    await hidden('GET', '/v1/apps/ledger/logs')
  })

  test('cron and jobs: Edit lists cron, runs it now and reads the job; a Use member does none of it', async () => {
    const cron = await api(editor, 'GET', '/v1/apps/ledger/cron')
    assert.equal(cron.status, 200)
    assert.deepEqual(cron.body.cron.map((entry: { name: string }) => entry.name), ['hourly'])
    const run = await api(editor, 'POST', '/v1/apps/ledger/cron/hourly/runs')
    assert.equal(run.status, 202, run.text)
    const jobId: string = run.body.run.jobId
    const job = await api(editor, 'GET', `/v1/apps/ledger/jobs/${jobId}`)
    assert.equal(job.status, 200)
    assert.equal(job.body.job.queue, 'cron:hourly')
    const jobs = await api(editor, 'GET', '/v1/apps/ledger/jobs')
    assert.equal(jobs.status, 200)
    assert.deepEqual(jobs.body.jobs.map((j: { id: string }) => j.id), [jobId])
    assert.equal((await api(editor, 'GET', '/v1/apps/ledger/signals')).status, 200)

    const useEdit = { role: 'use', required: 'edit' }
    for (const [method, path] of [
      ['GET', '/v1/apps/ledger/cron'], ['POST', '/v1/apps/ledger/cron/hourly/runs'], ['GET', '/v1/apps/ledger/jobs'],
      ['GET', `/v1/apps/ledger/jobs/${jobId}`], ['GET', '/v1/apps/ledger/signals'], ['GET', '/v1/apps/ledger/dev/alice/jobs'],
    ] as const) {
      await forbidden(user, method, path, useEdit)
      await hidden(method, path)
    }
    const total = await h.t.db.query(`select count(*)::int as n from platform.jobs j join platform.apps a on a.id = j.app_id where a.slug = 'ledger'`)
    assert.equal(total[0]!.n, 1, 'the refused manual runs enqueued nothing')
  })

  test('app access tokens: Administer lists and revokes them; only the owner creates one; Edit and Use do neither', async () => {
    const created = await api(owner, 'POST', '/v1/apps/ledger/access-tokens', { name: 'ci' })
    assert.equal(created.status, 201, created.text)
    const tokenId: string = created.body.token.id
    const listed = await api(admin, 'GET', '/v1/apps/ledger/access-tokens')
    assert.equal(listed.status, 200)
    assert.deepEqual(listed.body.tokens.map((t: { id: string }) => t.id), [tokenId])

    // A token acts as the owner: an Administer holder who minted one would act as the owner.
    await forbidden(admin, 'POST', '/v1/apps/ledger/access-tokens', { role: 'administer', required: 'owner' }, { name: 'mine' })
    await forbidden(editor, 'POST', '/v1/apps/ledger/access-tokens', { role: 'edit', required: 'owner' }, { name: 'mine' })
    await forbidden(user, 'POST', '/v1/apps/ledger/access-tokens', { role: 'use', required: 'owner' }, { name: 'mine' })
    await hidden('POST', '/v1/apps/ledger/access-tokens', { name: 'mine' })
    for (const who of [editor, user]) {
      const role = who === editor ? 'edit' : 'use'
      await forbidden(who, 'GET', '/v1/apps/ledger/access-tokens', { role, required: 'administer' })
      await forbidden(who, 'DELETE', `/v1/apps/ledger/access-tokens/${tokenId}`, { role, required: 'administer' })
    }
    await hidden('GET', '/v1/apps/ledger/access-tokens')
    await hidden('DELETE', `/v1/apps/ledger/access-tokens/${tokenId}`)
    const rows = await h.t.db.query<{ name: string; revoked: boolean }>(
      `select t.name, t.revoked_at is not null as revoked from platform.app_access_tokens t
         join platform.apps a on a.id = t.app_id where a.slug = 'ledger'`)
    assert.deepEqual(rows.map((row) => [row.name, row.revoked]), [['ci', false]], 'nobody but the owner minted a token; none was revoked')

    assert.equal((await api(admin, 'DELETE', `/v1/apps/ledger/access-tokens/${tokenId}`)).status, 204)
    assert.deepEqual((await api(owner, 'GET', '/v1/apps/ledger/access-tokens')).body.tokens, [])
  })

  test('custom domains: Administer reads them, only a platform administrator maps them; Edit and Use do not read them', async () => {
    assert.equal((await api(operatorAdmin, 'PUT', '/v1/apps/ledger/domains/ledger.example.test')).status, 201)
    const read = await api(admin, 'GET', '/v1/apps/ledger/domains')
    assert.equal(read.status, 200)
    assert.deepEqual(read.body.domains.map((d: { domain: string }) => d.domain), ['ledger.example.test'])
    assert.deepEqual((await api(owner, 'GET', '/v1/apps/ledger/domains')).body, read.body)
    assert.deepEqual((await api(operatorAdmin, 'GET', '/v1/apps/ledger/domains')).body, read.body)

    const mapped = await api(admin, 'PUT', '/v1/apps/ledger/domains/other.example.test')
    assert.equal(mapped.status, 403)
    assert.equal(mapped.body.error.code, 'FORBIDDEN')
    assert.equal((await api(admin, 'DELETE', '/v1/apps/ledger/domains/ledger.example.test')).status, 403)
    await forbidden(editor, 'GET', '/v1/apps/ledger/domains', { role: 'edit', required: 'administer' })
    await forbidden(user, 'GET', '/v1/apps/ledger/domains', { role: 'use', required: 'administer' })
    await hidden('GET', '/v1/apps/ledger/domains')
  })

  test('GET /v1/apps lists every app the caller holds a role on, with the role; others never see it', async () => {
    assert.equal((await api(editor, 'POST', '/v1/apps', { slug: 'ed-notes', visibility: 'private' })).status, 201)
    const roles = async (who: Person) => {
      const res = await api(who, 'GET', '/v1/apps')
      assert.equal(res.status, 200)
      return res.body.apps.map((app: { slug: string; role: string; owned: boolean }) => [app.slug, app.role, app.owned])
    }
    assert.deepEqual(await roles(owner), [['ledger', 'administer', true]])
    assert.deepEqual(await roles(editor), [['ledger', 'edit', false], ['ed-notes', 'administer', true]])
    assert.deepEqual(await roles(admin), [['ledger', 'administer', false]])
    assert.deepEqual(await roles(user), [['ledger', 'use', false]])
    assert.deepEqual(await roles(stranger), [])
    assert.deepEqual(await roles(rival), [])
    const shown = (await api(user, 'GET', '/v1/apps')).body.apps[0]
    assert.deepEqual(Object.keys(shown).sort(),
      ['activeReleaseId', 'createdAt', 'id', 'name', 'owned', 'role', 'slug', 'status', 'updatedAt', 'url', 'visibility'])
    assert.equal(shown.url, 'http://ledger.localhost:8787')

    // The role is read live: Edit outside the organisation counts as Use; an unconfirmed member holds none.
    const globex = (await h.t.db.query<{ organisation_id: string }>('select organisation_id from platform.users where id = $1', [rival.userId]))[0]!.organisation_id
    const acme = (await h.t.db.query<{ organisation_id: string }>('select organisation_id from platform.users where id = $1', [editor.userId]))[0]!.organisation_id
    await h.t.db.query('update platform.users set organisation_id = $1 where id = $2', [globex, editor.userId])
    assert.deepEqual((await roles(editor))[0], ['ledger', 'use', false])
    await h.t.db.query('update platform.users set organisation_id = $1, email_confirmed_at = null where id = $2', [acme, editor.userId])
    assert.deepEqual(await roles(editor), [['ed-notes', 'administer', true]])
    await h.t.db.query('update platform.users set email_confirmed_at = now() where id = $1', [editor.userId])
    assert.deepEqual(await roles(editor), [['ledger', 'edit', false], ['ed-notes', 'administer', true]])
  })
})
