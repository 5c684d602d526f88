import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createTestDb, type TestDb, backend } from '../../test/test-db.ts'
import { createNamespace, refreshNamespaceWrappers, runAsRole, type Namespace } from './namespaces.ts'
import { lockPlatform } from '../db/platform-lock.ts'
import { sequenceChanges } from '../realtime/change-log.ts'

describe(`app namespaces isolate apps from each other and the platform (${backend})`, () => {
  let t: TestDb
  let a: Namespace
  let b: Namespace

  before(async () => {
    t = await createTestDb()
    const [org] = await t.db.query<{ id: string }>(
      `insert into platform.organisations (name) values ('Acme') returning id`,
    )
    const [user] = await t.db.query<{ id: string }>(
      `insert into platform.users (organisation_id, email) values ($1, 'o@acme.test') returning id`,
      [org!.id],
    )
    const apps: Namespace[] = []
    for (const slug of ['app-a', 'app-b']) {
      const [app] = await t.db.query<{ id: string }>(
        `insert into platform.apps (organisation_id, owner_id, slug, name, visibility)
         values ($1, $2, $3, $3, 'private') returning id`,
        [org!.id, user!.id, slug],
      )
      apps.push(await t.db.transaction((tx) => createNamespace(tx, { appId: app!.id, slug })))
    }
    ;[a, b] = apps as [Namespace, Namespace]
    for (const ns of [a, b]) {
      await runAsRole(t.db, { namespace: ns, role: 'owner' }, `
        create table notes (id serial primary key, owner_id uuid, body text);
        alter table notes enable row level security;
        create policy own on notes using (owner_id = auth.uid() or auth.is_system())
          with check (owner_id = auth.uid() or auth.is_system());
        insert into notes (owner_id, body) values ('00000000-0000-0000-0000-000000000001', 'secret of ${ns.schemaName}');`)
    }
  })
  after(() => t.cleanup())

  const attempt = (ns: Namespace, role: 'owner' | 'user' | 'system', sql: string) =>
    runAsRole(t.db, { namespace: ns, role }, sql, { params: [] }).then(
      (value) => ({ ok: true as const, value }),
      (error: Error) => ({ ok: false as const, message: error.message }),
    )

  test('app SQL holding the advisory keys the platform once used blocks no platform work (namespace creation, wrappers, deploys, secrets)', { skip: backend !== 'postgres' && 'PostgreSQL only: PGlite runs one statement at a time' }, async () => {
    const keys = ['namespace-create', 'namespace-wrappers', `deploy:${a.appId}`, `secrets:${a.appId}:`, 'platform-realtime-sequence']
    // An app's RPC function would do this: take every key, then sleep for as long as a statement may.
    const holding = attempt(a, 'user', `select to_jsonb(pg_sleep(60)::text) from (select count(pg_advisory_xact_lock(hashtext(k))) from unnest(array[${keys.map((k) => `'${k}'`).join(', ')}]) k) l`)
    const [{ pid }] = (await eventuallyHolding(keys.length, holding)) as [{ pid: number }]
    try {
      const [app] = await t.db.query<{ id: string }>(
        `insert into platform.apps (organisation_id, owner_id, slug, name, visibility)
         select organisation_id, owner_id, 'app-c', 'app-c', 'private' from platform.apps where id = $1 returning id`, [a.appId])
      await t.db.transaction((tx) => createNamespace(tx, { appId: app!.id, slug: 'app-c' }))
      await refreshNamespaceWrappers(t.db)
      await t.db.transaction(async (tx) => {
        for (const name of [`deploy:${a.appId}`, `secrets:${a.appId}:`]) await lockPlatform(tx, name)
      })
      await sequenceChanges(t.db)
      const [still] = await t.db.query<{ n: number }>(`select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and pid = $1`, [pid])
      assert.equal(still!.n, keys.length, 'all of it finished while the app statement still held the keys')
    } finally {
      await t.db.query('select pg_cancel_backend($1)', [pid])
      await holding
    }
  })

  /** The backend holding `count` advisory locks, once it holds them (`statement` is the one meant to). */
  async function eventuallyHolding(count: number, statement: Promise<unknown>): Promise<{ pid: number }[]> {
    for (let i = 0; i < 200; i++) {
      const rows = await t.db.query<{ pid: number }>(
        `select pid from pg_locks where locktype = 'advisory' and granted group by pid having count(*) >= $1`, [count])
      if (rows.length > 0) return rows
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`the app statement never took the keys: ${JSON.stringify(await Promise.race([statement, 'still running']))}`)
  }

  test("an app's owner role cannot read another app's tables", async () => {
    const result = await attempt(a, 'owner', `select to_jsonb(body) from ${b.schemaName}.notes`)
    assert.equal(result.ok, false)
    assert.match(result.ok ? '' : result.message, /permission denied for schema/)
  })

  for (const role of ['owner', 'user', 'system'] as const) {
    test(`the ${role} role cannot read the platform schema`, async () => {
      const result = await attempt(a, role, 'select to_jsonb(count(*)) from platform.users')
      assert.equal(result.ok, false)
      assert.match(result.ok ? '' : result.message, /permission denied for schema platform/)
    })
  }

  for (const escape of [
    'reset role',
    'set role postgres',
    'set session authorization default',
    "select pg_catalog.set_config('role', 'none', false)",
    "select pg_catalog.set_config('session_authorization', 'postgres', false)",
  ]) {
    test(`app SQL cannot climb back to the platform's session user with "${escape}"`, async () => {
      const result = await attempt(a, 'owner', escape)
      assert.equal(result.ok, false)
      assert.match(result.ok ? '' : result.message, /cannot set parameter .* within security-definer function/)
    })
  }

  test('app SQL cannot leave a poisoned search_path behind for the platform', async () => {
    const [before] = await t.db.query<{ search_path: string }>('show search_path')
    await runAsRole(t.db, { namespace: a, role: 'owner' }, `set search_path = ${a.schemaName}, pg_catalog`)
    const [after] = await t.db.query<{ search_path: string }>('show search_path')
    assert.equal(after!.search_path, before!.search_path)
    assert.doesNotMatch(after!.search_path, /app_/)
  })

  test('row-level security applies to the user role by auth.uid()', async () => {
    const mine = await runAsRole(t.db, { namespace: a, role: 'user' },
      'select coalesce(jsonb_agg(body), $$[]$$) from notes', {
        params: [],
        claims: { sub: '00000000-0000-0000-0000-000000000001', role: 'authenticated' },
      })
    assert.deepEqual(mine, [`secret of ${a.schemaName}`])
    const other = await runAsRole(t.db, { namespace: a, role: 'user' },
      'select coalesce(jsonb_agg(body), $$[]$$) from notes', {
        params: [],
        claims: { sub: '00000000-0000-0000-0000-000000000002', role: 'authenticated' },
      })
    assert.deepEqual(other, [])
  })

  test('auth.is_system() is true for the system role only, whatever the claims say', async () => {
    const forged = { sub: null, role: 'system', is_system: true }
    assert.equal(await runAsRole(t.db, { namespace: a, role: 'user' }, 'select to_jsonb(auth.is_system())', { params: [], claims: forged }), false)
    assert.equal(await runAsRole(t.db, { namespace: a, role: 'system' }, 'select to_jsonb(auth.is_system())', { params: [] }), true)
    const sees = await runAsRole(t.db, { namespace: a, role: 'system' }, 'select to_jsonb(count(*)) from notes', { params: [] })
    assert.equal(sees, 1)
    assert.equal(await runAsRole(t.db, { namespace: a, role: 'system' }, 'select to_jsonb(auth.uid())', { params: [] }), null)
  })

  test('the user role cannot forge the system role through set_config', async () => {
    const result = await runAsRole(t.db, { namespace: a, role: 'user' },
      "select to_jsonb(pg_catalog.set_config('request.jwt.claims', '{\"role\":\"system\"}', true) is not null and auth.is_system())",
      { params: [] })
    assert.equal(result, false)
  })

  test('a deferred trigger fires as the app role, not as the platform at commit', async () => {
    await runAsRole(t.db, { namespace: a, role: 'owner' }, `
      create table seen (who text);
      create function record_user() returns trigger language plpgsql as $f$
        begin insert into seen values (current_user::text); return null; end $f$;
      create constraint trigger late after insert on seen deferrable initially deferred
        for each row when (new.who = 'go') execute function record_user();`)
    await t.db.transaction((tx) =>
      runAsRole(tx, { namespace: a, role: 'owner' }, "insert into seen values ('go')"))
    const who = await runAsRole(t.db, { namespace: a, role: 'owner' },
      "select jsonb_agg(who) from seen where who <> 'go'", { params: [] })
    assert.deepEqual(who, [`${a.rolePrefix}_owner`])
  })

  test('a holdable cursor declared by app SQL never runs at commit as the platform', async () => {
    await runAsRole(t.db, { namespace: a, role: 'owner' }, `
      create table cursor_runs (who text);
      create function mark() returns text language plpgsql as $f$
        begin insert into ${a.schemaName}.cursor_runs values (current_user::text); return 'x'; end $f$;`)
    assert.equal(await refreshNamespaceWrappers(t.db), 0, 'namespaces made by this version are current')
    // The owner wrapper as an older platform wrote it: no check of session state at its end.
    await t.db.exec(`create or replace function platform_exec.${a.rolePrefix}_owner(claims text, statement text, params jsonb) returns json
      language plpgsql security definer set search_path = ${a.schemaName}, extensions as $w$
      begin execute statement; set constraints all immediate; reset all; return null; end $w$`)
    for (const refreshed of [false, true]) {
      if (refreshed) {
        assert.equal(await refreshNamespaceWrappers(t.db), 1, 'the namespace with an old wrapper got the current ones')
      } else {
        await t.db.transaction((tx) => runAsRole(tx, { namespace: a, role: 'owner' }, 'declare spy cursor with hold for select mark()'))
        const who = await t.db.query<{ who: string }>(`select who from ${a.schemaName}.cursor_runs`)
        assert.ok(who.length > 0, 'the old wrapper let the cursor run at commit (the attack this guards against)')
        await t.db.exec(`close all; delete from ${a.schemaName}.cursor_runs`)
        continue
      }
      await assert.rejects(
        t.db.transaction((tx) => runAsRole(tx, { namespace: a, role: 'owner' }, 'declare spy cursor with hold for select mark()')),
        /holdable cursor/)
      const who = await runAsRole(t.db, { namespace: a, role: 'owner' }, 'select coalesce(jsonb_agg(who), $$[]$$::jsonb) from cursor_runs', { params: [] })
      assert.deepEqual(who, [], `the cursor never ran (refreshed: ${refreshed})`)
    }
  })

  test('app SQL cannot put its own statement in place of one the platform prepared', async () => {
    await runAsRole(t.db, { namespace: a, role: 'owner' }, `
      create table evidence (who text);
      create function evil() returns text language plpgsql as $f$
        begin insert into evidence values (session_user::text || ' as ' || current_user::text); return current_user::text; end $f$;
      grant usage on schema ${a.schemaName} to public;
      grant execute on function evil() to public;
      grant insert on evidence to public;`)
    const probe = 'select current_user::text as who, $1::text as probe'
    const platformUser = (await t.db.query<{ who: string }>(probe, ['x']))[0]!.who
    await t.db.transaction(async (tx) => {
      // One connection: the platform's parameterised query, the app's swap, the platform's query again.
      await tx.query(probe, ['x'])
      await runAsRole(tx, { namespace: a, role: 'owner' }, `do $x$ declare s record; begin
        for s in select name from pg_prepared_statements where name <> '' loop
          execute format('deallocate %I', s.name);
          execute format('prepare %I as select ${a.schemaName}.evil() as who, $1::text as probe', s.name);
        end loop;
        prepare planted as select ${a.schemaName}.evil() as who;
      end $x$`)
      const planted = await tx.query<{ name: string }>('select name from pg_prepared_statements where from_sql')
      assert.deepEqual(planted.map((row) => row.name), [], 'no statement the app prepared outlives its call')
      assert.equal((await tx.query<{ who: string }>(probe, ['x']))[0]!.who, platformUser)
    })
    for (let round = 0; round < 5; round += 1) {
      assert.equal((await t.db.query<{ who: string }>(probe, ['x']))[0]!.who, platformUser)
    }
    const evidence = await runAsRole(t.db, { namespace: a, role: 'owner' }, 'select coalesce(jsonb_agg(who), $$[]$$::jsonb) from evidence', { params: [] })
    assert.deepEqual(evidence, [], 'the planted function never ran')
  })

  test('app SQL cannot keep a session advisory lock on the platform\'s connection', async () => {
    // Refused outright (migration 0012); were it granted again, the wrapper releases it.
    const refused = await attempt(a, 'user', 'select pg_advisory_lock(424242)')
    assert.equal(refused.ok, false)
    assert.match(refused.ok ? '' : refused.message, /permission denied for function pg_advisory_lock/)
    await t.db.exec('grant execute on function pg_advisory_lock(bigint) to public')
    try {
      await t.db.transaction(async (tx) => {
        await runAsRole(tx, { namespace: a, role: 'user' }, 'select pg_advisory_lock(424242)')
        const held = await tx.query<{ n: number }>("select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = 424242")
        assert.equal(held[0]!.n, 0)
      })
    } finally {
      await t.db.exec('revoke execute on function pg_advisory_lock(bigint) from public')
    }
  })

  test('one app cannot alter the wrapper that runs its SQL', async () => {
    const result = await attempt(a, 'owner',
      `alter function platform_exec.${a.rolePrefix}_owner(text, text, jsonb) security invoker`)
    assert.equal(result.ok, false)
    assert.match(result.ok ? '' : result.message, /permission denied for schema platform_exec/)
  })
})
