/**
 * One app's slow SQL holds no one else past the statement timeout (issue 11, finding 5): an
 * anonymous RPC to the app's own function that sleeps for a minute is cancelled with the
 * data API's timeout error (57014), and the owner API and another app's edge, asked while it
 * sleeps, answer. On PGlite, one session in the platform's thread, they wait behind the
 * sleeping statement, and get their turn once the timeout ends it; on PostgreSQL they run
 * beside it and the server's statement_timeout ends it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Db } from '../db/db.ts'
import type { PgliteDb } from '../db/pglite.ts'
import { eventually } from '../../test/eventually.ts'
import { ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { deployDataApp, expectJson, rest } from '../../test/data-fixture.ts'
import { STUBBORN_BODY } from '../../test/integration-fixture.ts'

/** Longer than the timeout by far: were it not cancelled, the test would see it succeed a minute later. */
const SLEEPY_SQL = `
create function nap() returns int language sql stable as $$ select pg_catalog.pg_sleep(60); select 1 $$;
create function spin() returns int language plpgsql stable as $$ begin loop end loop; end $$;
create function ping() returns int language sql stable as $$ select 1 $$;
create function stubborn() returns int language plpgsql stable as $$${STUBBORN_BODY}$$;
`

describe(`a slow statement of one app holds no one past the statement timeout (${backend})`, () => {
  let t: TestDb
  let h: Harness
  let owner: { token: string }
  /** The app function whose statement to watch for on its way to PGlite, and who waits for it. */
  let watched: { fn: string; seen: () => void } | null = null

  before(async () => {
    t = await createTestDb({ statementTimeoutMs: 500 })
    // Sees the app's statements on their way to PGlite, which takes them in order: a request
    // made after this point waits behind the statement.
    const spied: Db = {
      ...t.db,
      query: (text, params, options) => {
        if (options?.appSql && watched && String(params?.[1]).includes(watched.fn)) watched.seen()
        return t.db.query(text, params, options)
      },
    }
    h = await startHarness({ db: spied, cleanup: () => t.cleanup() })
    owner = await h.createOwner('ana@acme.test')
    await deployDataApp(h, owner.token, { slug: 'sleepy', sql: SLEEPY_SQL })
    await deployDataApp(h, owner.token, { slug: 'bystander', sql: 'create table notes (id int primary key);' })
  })

  after(async () => {
    await h.close()
  })

  /** Resolves once the app's statement named `fn` is running (PostgreSQL) or queued first (PGlite). */
  function statementStarted(fn: string): Promise<void> {
    if (backend === 'pglite') return new Promise((resolve) => void (watched = { fn, seen: resolve }))
    return eventually(async () => {
      const rows = await t.db.query(
        `select 1 from pg_catalog.pg_stat_activity where state = 'active' and query like $1 and pid <> pg_catalog.pg_backend_pid()`,
        [`%${fn}%`])
      return rows.length > 0
    }, `the app's ${fn}() is running`)
  }

  for (const fn of ['nap', 'spin']) {
    test(`an anonymous RPC to ${fn}() is cancelled with 57014, and the owner API and another app's edge, asked meanwhile, answer`, async () => {
      const started = statementStarted(fn)
      const slow = rest(h, 'sleepy', `/rpc/${fn}`, { json: {} })
      await started
      const [apps, page, cancelled] = await Promise.all([
        ownerApi(h, owner.token, 'GET', '/v1/apps/bystander'),
        h.request('/', { host: 'bystander' }),
        slow,
      ])
      const body = await expectJson(cancelled, 500)
      assert.deepEqual(body, { code: '57014', message: 'canceling statement due to statement timeout', details: null, hint: null })
      assert.equal(apps.status, 200, apps.text)
      assert.equal(apps.body.app.slug, 'bystander')
      assert.equal(page.status, 200)
      assert.equal(await page.text(), '<h1>bystander</h1>')
    })
  }

  test('an RPC that catches its cancel is ended too, and the platform serves everyone after', {
    skip: backend === 'pglite' ? false : 'on PostgreSQL the login pools\' watchdog ends such a session (namespace-sql.test.ts)',
  }, async () => {
    const res = await rest(h, 'sleepy', '/rpc/stubborn', { json: {} })
    assert.equal((await expectJson(res, 500)).code, '57014')
    assert.equal((t.db as PgliteDb).reopens(), 1, 'the embedded database was opened again')
    assert.equal((await ownerApi(h, owner.token, 'GET', '/v1/apps/bystander')).status, 200)
    assert.equal(await (await h.request('/', { host: 'bystander' })).text(), '<h1>bystander</h1>')
    assert.equal(await expectJson(await rest(h, 'sleepy', '/rpc/ping', { json: {} }), 200), 1)
  })

  test('the app whose statement was cancelled is served again at once', async () => {
    assert.equal((await expectJson(await rest(h, 'sleepy', '/rpc/nap', { json: {} }), 500)).code, '57014')
    assert.equal(await expectJson(await rest(h, 'sleepy', '/rpc/ping', { json: {} }), 200), 1)
  })
})
