import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import postgres from 'postgres'
import { createTestDb, type TestDb, backend } from '../../test/test-db.ts'
import { openPostgres } from '../db/postgres.ts'
import { eventually } from '../../test/eventually.ts'
import { silentLogger, type Logger } from '../lib/logger.ts'
import { createNamespace, roleName, runAsRole, type Namespace } from './namespaces.ts'
import { createNamespaceSql, type NamespaceSql, type NamespaceSqlOptions, type StatementParts } from './namespace-sql.ts'
import { loginCredentials } from './namespace-logins.ts'

const ALICE = '00000000-0000-0000-0000-00000000000a'
const BOB = '00000000-0000-0000-0000-00000000000b'
const claimsOf = (sub: string) => ({ sub, role: 'authenticated' })
const onPostgres = { skip: backend === 'postgres' ? false : 'login pools exist only on PostgreSQL' }

/** `select <value>`, no CTEs, values in `$1`. */
const value = (sql: string, params: unknown[] = []): StatementParts => ({ ctes: [], value: sql, params })

describe(`namespace SQL: login pools and the wrapper give the same answers (${backend})`, () => {
  let t: TestDb
  let ns: Namespace
  let other: Namespace
  const loginKey = new Uint8Array(randomBytes(32))
  const opened: NamespaceSql[] = []
  const warnings: string[] = []
  const logger: Logger = { ...silentLogger, warn: (message) => void warnings.push(message) }
  const open = (overrides: Partial<NamespaceSqlOptions> = {}) => {
    const sql = createNamespaceSql({
      db: t.db, loginKey, logger, connections: 8, poolSize: 2, statementTimeoutMs: 10_000, sweepIntervalMs: 0, watchdogIntervalMs: 0, ...overrides,
    })
    opened.push(sql)
    return sql
  }
  const user = (namespace = ns) => ({ namespace, role: 'user' as const })
  /** A direct connection to the test database as `role`, as someone who knows its password would open. */
  const loginAs = (role: string, password: string) => {
    const url = new URL(t.url!)
    url.username = role
    url.password = password
    return postgres(url.toString(), { max: 1, onnotice: () => {} })
  }

  before(async () => {
    t = await createTestDb()
    const [org] = await t.db.query<{ id: string }>(`insert into platform.organisations (name) values ('Acme') returning id`)
    const [owner] = await t.db.query<{ id: string }>(
      `insert into platform.users (organisation_id, email) values ($1, 'o@acme.test') returning id`, [org!.id])
    const namespaces: Namespace[] = []
    for (const slug of ['pools-a', 'pools-b']) {
      const [app] = await t.db.query<{ id: string }>(
        `insert into platform.apps (organisation_id, owner_id, slug, name, visibility) values ($1, $2, $3, $3, 'public') returning id`,
        [org!.id, owner!.id, slug])
      namespaces.push(await t.db.transaction((tx) => createNamespace(tx, { appId: app!.id, slug })))
    }
    ;[ns, other] = namespaces as [Namespace, Namespace]
    for (const namespace of namespaces) {
      await runAsRole(t.db, { namespace, role: 'owner' }, `
        create table notes (id serial primary key, owner_id uuid not null, body text);
        create index on notes (owner_id);
        insert into notes (owner_id, body) select case when g % 2 = 0 then '${ALICE}'::uuid else '${BOB}'::uuid end, 'note ' || g
          from generate_series(1, 2000) g;
        analyze notes;
        alter table notes enable row level security;
        create policy own on notes using (owner_id = auth.uid());
        -- Written the way many Supabase policies are: the setting read and cast directly.
        create table direct (id int primary key, owner text);
        insert into direct values (1, '${ALICE}'), (2, '${BOB}');
        alter table direct enable row level security;
        create policy own on direct using (owner = current_setting('request.jwt.claims', true)::jsonb ->> 'sub');
        create table tenants (tenant text not null, body text) partition by list (tenant);
        create table tenants_a partition of tenants for values in ('${ALICE}');
        create table tenants_b partition of tenants for values in ('${BOB}');
        insert into tenants values ('${ALICE}', 'alice row'), ('${BOB}', 'bob row');
        alter table tenants enable row level security;
        create policy own on tenants using (tenant = auth.jwt() ->> 'sub');
        create function whoami() returns json language sql as $$
          select json_build_object('session', session_user, 'current', current_user, 'system', auth.is_system(), 'uid', auth.uid()) $$;
        create function forge(sub text) returns void language sql as $$
          select pg_catalog.set_config('request.jwt.claims', json_build_object('sub', sub)::text, false) $$;
        create function prepared_here() returns json language sql as $$ select json_agg(name) from pg_prepared_statements $$;
        create function set_password() returns void language plpgsql as $$
          begin execute 'alter role current_user password ''chosen-by-the-app'''; end $$;
        create sequence deny_calls;
        create function deny(code text) returns void language plpgsql as $$
          begin perform nextval('deny_calls'); raise exception 'not for you' using errcode = code; end $$;
        create function slow(seconds float8) returns json language sql as $$ select to_json(pg_sleep(seconds)::text) $$;
        create function stubborn() returns json language plpgsql as $$
          begin
            for i in 1..100 loop
              begin perform pg_sleep(0.1); exception when query_canceled then null; end;
            end loop;
            return to_json('finished');
          end $$;
        create table deferred_work (n int);
        create function sleep_at_commit() returns trigger language plpgsql as $$ begin perform pg_sleep(10); return null; end $$;
        create constraint trigger at_commit after insert on deferred_work deferrable initially deferred
          for each row execute function sleep_at_commit();`)
    }
  })
  after(async () => {
    await Promise.all(opened.map((sql) => sql.close()))
    await t.cleanup()
  })

  const mine = (sql: NamespaceSql, sub: string | null, namespace = ns) =>
    sql.statement(user(namespace), value(`(select coalesce(json_agg(distinct owner_id), '[]') from notes)`), { claims: sub ? claimsOf(sub) : null, readOnly: true })

  test('each caller sees their own rows, request after request, on whichever path serves them', async () => {
    const sql = open()
    // More than five runs of one text: PostgreSQL moves to a generic plan on the login path.
    for (let i = 0; i < 12; i++) {
      const sub = i % 2 === 0 ? ALICE : BOB
      assert.deepEqual(await mine(sql, sub), [sub])
    }
    assert.deepEqual(await mine(sql, null), [])
    const stats = sql.stats()
    if (backend === 'postgres') {
      assert.equal(stats.wrapper, 0, 'every statement went through the login pool')
      assert.equal(stats.login, 13)
    } else {
      assert.equal(stats.login, 0)
      assert.equal(stats.wrapper, 13)
    }
  })

  test('app SQL runs in a session of the namespace role: not the platform, not the system role', async () => {
    const sql = open()
    const who = await sql.statement(user(), value('whoami()'), { claims: claimsOf(ALICE), readOnly: false }) as Record<string, unknown>
    assert.equal(who.current, roleName(ns, 'user'))
    assert.equal(who.system, false)
    assert.equal(who.uid, ALICE)
    if (backend === 'postgres') {
      assert.equal(who.session, roleName(ns, 'user'), 'the login pool connects as the role itself')
      // A superuser-only limit on the role, which its own SQL cannot lift.
      assert.equal(await sql.statement(user(), value(`to_json(current_setting('temp_file_limit'))`), { claims: null, readOnly: true }), '1GB')
      await assert.rejects(sql.statement(user(), value(`to_json(set_config('temp_file_limit', '-1', false))`), { claims: null, readOnly: true }),
        /permission denied to set parameter/)
    }
    for (const target of [roleName(ns, 'system'), roleName(ns, 'owner'), roleName(other, 'user'), 'postgres']) {
      await assert.rejects(
        sql.transaction(user(), { claims: null, readOnly: false }, (tx) => tx.statement({
          ctes: [`x as (select pg_catalog.set_config('role', '${target}', true))`], value: '(select 1 from x)', params: [],
        })),
        /permission denied|must be member|cannot set parameter "role"/, `role ${target}`)
    }
  })

  test('claims an earlier request left in the session are never the next caller\'s', async () => {
    const sql = open({ poolSize: 1 })
    // Alice's request plants Bob's claims as a session setting on the pooled connection.
    await sql.statement(user(), value('forge($1::jsonb->>0)', [BOB]), { claims: claimsOf(ALICE), readOnly: false })
    for (let i = 0; i < 8; i++) {
      assert.deepEqual(await mine(sql, ALICE), [ALICE])
      assert.deepEqual(await mine(sql, null), [], 'anonymous sees nothing, not Bob\'s rows')
    }
  })

  test('a policy that casts the setting directly works on every request (planning sees valid JSON)', async () => {
    const sql = open({ poolSize: 1 })
    for (let i = 0; i < 8; i++) {
      const sub = i % 2 === 0 ? ALICE : BOB
      const rows = await sql.statement(user(), value(`(select json_agg(id) from direct)`), { claims: claimsOf(sub), readOnly: true })
      assert.deepEqual(rows, [sub === ALICE ? 1 : 2])
    }
  })

  test('partitioned tables: partitions are pruned with the caller\'s claims, not the last caller\'s', async () => {
    const sql = open({ poolSize: 1 })
    const read = (sub: string) => sql.statement(user(), value(`(select json_agg(body) from tenants)`),
      { claims: claimsOf(sub), readOnly: true, separateClaims: true })
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(await read(ALICE), ['alice row'])
      assert.deepEqual(await read(BOB), ['bob row'])
    }
  })

  test('session advisory locks are refused (they would outlive the request); transaction locks work', async () => {
    const sql = open()
    await assert.rejects(sql.statement(user(), value('pg_advisory_lock(42)'), { claims: null, readOnly: false }), /permission denied for function pg_advisory_lock/)
    await assert.rejects(sql.statement(user(), value('pg_try_advisory_lock(1, 2)'), { claims: null, readOnly: false }), /permission denied/)
    assert.equal(await sql.statement(user(), value('(select to_json(true) from (select pg_advisory_xact_lock(42)) l)'), { claims: null, readOnly: false }), true)
  })

  test('a statement that fails leaves the pool usable and nothing half written', async () => {
    const sql = open()
    await assert.rejects(sql.statement(user(), {
      ctes: [`w as (insert into notes (owner_id, body) values (auth.uid(), 'kept?') returning 1)`],
      value: `(select 1 / 0 from w)`, params: [],
    }, { claims: claimsOf(ALICE), readOnly: false }), /division by zero/)
    const [row] = await t.db.query<{ n: number }>(`select count(*)::int as n from ${ns.schemaName}.notes where body = 'kept?'`)
    assert.equal(row!.n, 0)
    assert.deepEqual(await mine(sql, ALICE), [ALICE])
  })

  test('reads are read-only before app code runs', async () => {
    const sql = open()
    await assert.rejects(sql.statement(user(), {
      ctes: [`w as (insert into notes (owner_id, body) values (auth.uid(), 'x') returning 1)`], value: '(select count(*) from w)', params: [],
    }, { claims: claimsOf(ALICE), readOnly: true }), /read-only transaction/)
  })

  test('prepared statements per connection stay bounded: a pool that reaches the bound is replaced', onPostgres, async () => {
    const sql = open({ poolSize: 1, maxPrepared: 3 })
    for (let shape = 0; shape < 10; shape++) {
      for (let i = 0; i < 2; i++) {
        const prepared = await sql.statement(user(), value(`(select prepared_here()::jsonb || '[${shape}]')`), { claims: null, readOnly: true }) as unknown[]
        // The driver prepares one statement of its own on each connection (its type lookup).
        assert.ok(prepared.length - 1 <= 3 + 1, `at most 3 statements prepared on the connection, saw ${JSON.stringify(prepared)}`)
      }
    }
  })

  test('over the connection budget, the wrapper serves the request; an idle pool gives way', onPostgres, async () => {
    const sql = open({ connections: 2, poolSize: 2, evictIdleMs: 0 })
    assert.deepEqual(await mine(sql, ALICE), [ALICE])
    assert.equal(sql.stats().pools, 1)
    // Hold the only pool's connections busy, then ask for another namespace.
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    const busy = sql.transaction(user(), { claims: null, readOnly: true }, async () => held)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const before = sql.stats()
    assert.deepEqual(await mine(sql, BOB, other), [BOB])
    assert.equal(sql.stats().wrapper, before.wrapper + 1, 'the other namespace went through the wrapper')
    release()
    await busy
    assert.deepEqual(await mine(sql, BOB, other), [BOB])
    assert.equal(sql.stats().login, before.login + 1, 'once idle, the first pool gave way to the second')
    assert.equal(sql.stats().pools, 1)
  })

  test('over the budget, a pool in recent use is not closed for another namespace: the wrapper serves it until the pool has been idle evictIdleMs', onPostgres, async () => {
    let clock = 1_000_000
    const sql = open({ connections: 2, poolSize: 2, evictIdleMs: 5000, now: () => clock })
    assert.deepEqual(await mine(sql, ALICE), [ALICE])
    const before = sql.stats()
    for (let i = 0; i < 3; i++) assert.deepEqual(await mine(sql, BOB, other), [BOB])
    assert.equal(sql.stats().wrapper, before.wrapper + 3, 'the other namespace went through the wrapper each time')
    assert.equal(sql.stats().login, before.login)
    clock += 5000
    assert.deepEqual(await mine(sql, BOB, other), [BOB])
    assert.equal(sql.stats().login, before.login + 1, 'idle long enough, the first pool gave way')
    assert.equal(sql.stats().pools, 1)
  })

  test('a login the server refuses falls back to the wrapper, and says so', onPostgres, async () => {
    const role = roleName(other, 'user')
    await t.db.exec(`alter role "${role}" connection limit 0`)
    try {
      const sql = open()
      warnings.length = 0
      assert.deepEqual(await mine(sql, BOB, other), [BOB])
      assert.equal(sql.stats().wrapper, 1)
      assert.ok(warnings.some((w) => /login pool unavailable/.test(w)), warnings.join('\n'))
      assert.deepEqual(await mine(sql, ALICE, other), [ALICE])
      assert.equal(sql.stats().wrapper, 2, 'it stays on the wrapper for a while instead of retrying every request')
    } finally {
      await t.db.exec(`alter role "${role}" connection limit -1`)
    }
  })

  test('a role that changes its own password is put back by the sweep, and sessions opened with it end', onPostgres, async () => {
    const sql = open()
    assert.deepEqual(await mine(sql, ALICE), [ALICE])
    const role = roleName(ns, 'user')
    // The app's own SQL, in a write, may do this: PostgreSQL lets every login role.
    await sql.statement(user(), value('set_password()'), { claims: null, readOnly: false })
    const intruder = loginAs(role, 'chosen-by-the-app')
    try {
      await intruder`select 1`
      warnings.length = 0
      await sql.sweep()
      assert.ok(warnings.some((w) => /changed outside the platform/.test(w)), warnings.join('\n'))
      await assert.rejects(intruder`select 1`, 'the intruder\'s session was ended')
      const again = loginAs(role, 'chosen-by-the-app')
      await assert.rejects(again`select 1`, /password authentication failed/)
      await again.end()
      assert.deepEqual(await mine(sql, BOB), [BOB], 'the platform\'s own pool logs in again')
    } finally {
      await intruder.end({ timeout: 1 })
    }
  })

  test('a password changed where no pool of this process is open is found too; a failed login repairs and ends sessions', onPostgres, async () => {
    const first = open()
    assert.deepEqual(await mine(first, ALICE, other), [ALICE])
    await first.close()
    const role = roleName(other, 'user')
    // Through the wrapper (the platform's own session), as the role: no pool involved.
    await runAsRole(t.db, { namespace: other, role: 'user' }, `alter role current_user password 'chosen-by-the-app'`)
    warnings.length = 0
    const sweeper = open()
    await sweeper.sweep()
    assert.ok(warnings.some((w) => /changed outside the platform/.test(w)), warnings.join('\n'))
    // Changed again; this time the pool's next login fails and puts it back on the spot.
    await runAsRole(t.db, { namespace: other, role: 'user' }, `alter role current_user password 'chosen-by-the-app'`)
    const intruder = loginAs(role, 'chosen-by-the-app')
    try {
      await intruder`select 1`
      warnings.length = 0
      const fresh = open()
      assert.deepEqual(await mine(fresh, BOB, other), [BOB])
      assert.equal(fresh.stats().wrapper, 0, 'served by its login pool after the repair')
      assert.ok(warnings.some((w) => /changed outside the platform/.test(w)), warnings.join('\n'))
      await assert.rejects(intruder`select 1`, 'the session opened with the app\'s password was ended')
    } finally {
      await intruder.end({ timeout: 1 })
    }
  })

  test('an error code an app raises is the app\'s error: the statement runs once and the pool stays', async () => {
    const sql = open()
    const codes = ['28000', '28P01', '53300', '57P03']
    for (const code of codes) {
      const before = sql.stats()
      await assert.rejects(sql.statement(user(), value('(select to_json(deny($1::jsonb->>0)::text))', [code]), { claims: null, readOnly: false }),
        (error: { code?: string }) => error.code === code)
      if (backend === 'postgres') assert.equal(sql.stats().wrapper, before.wrapper, `${code}: not retried through the wrapper`)
    }
    // A sequence is not rolled back with the call: it counts the times the function ran.
    const [row] = await t.db.query<{ n: number }>(`select last_value::int as n from ${ns.schemaName}.deny_calls`)
    assert.equal(row!.n, codes.length, 'each call ran exactly once')
    assert.ok(!warnings.some((w) => /unavailable/.test(w) && w.includes(roleName(ns, 'user'))))
    assert.deepEqual(await mine(sql, ALICE), [ALICE])
  })

  test('replacing a pool lets its statements in flight finish', onPostgres, async () => {
    const sql = open({ poolSize: 2, maxPrepared: 1 })
    const slow = sql.statement(user(), value('slow(1.5)'), { claims: null, readOnly: true })
    await new Promise((resolve) => setTimeout(resolve, 200))
    // Two shapes each used twice: the second to be prepared replaces the pool.
    for (const shape of [1, 2]) {
      for (let i = 0; i < 2; i++) await sql.statement(user(), value(`to_json(${shape})`), { claims: null, readOnly: true })
    }
    assert.equal(await slow, '')
  })

  test('the login password is derived, stable, and not the stored verifier', () => {
    const a = loginCredentials(loginKey, 'ns_0123456789ab_user')
    const b = loginCredentials(loginKey, 'ns_0123456789ab_user')
    assert.deepEqual(a, b)
    assert.notEqual(loginCredentials(loginKey, 'ns_0123456789ab_system').password, a.password)
    assert.match(a.verifier, /^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/)
    assert.ok(!a.verifier.includes(a.password))
  })

  test('app SQL cannot outlast the statement timeout by changing its own session\'s, nor at commit', onPostgres, async () => {
    // A Db like main.ts opens: its login pools carry statement_timeout as a startup parameter.
    const timed = openPostgres({ url: t.url!, maxConnections: 2, statementTimeoutMs: 300 })
    try {
      const sql = open({ db: timed, poolSize: 1, statementTimeoutMs: 300, watchdogIntervalMs: 100 })
      // The server's own timeout first...
      await assert.rejects(sql.statement(user(), value('slow(10)'), { claims: null, readOnly: true }), /statement timeout/)
      // ...which the app's SQL lifts for its session; the watchdog still stops the statement.
      await sql.statement(user(), value(`(select to_json(pg_catalog.set_config('statement_timeout', '0', false)))`), { claims: null, readOnly: false })
      await assert.rejects(sql.statement(user(), value('slow(10)'), { claims: null, readOnly: true }), /canceling statement due to user request/)
      // A deferred trigger runs at commit, outside any statement's own timeout.
      await assert.rejects(sql.transaction(user(), { claims: null, readOnly: false }, (tx) => tx.statement({
        ctes: ['w as (insert into deferred_work values (1) returning 1)'], value: '(select to_json(count(*)) from w)', params: [],
      })), /canceling statement/)
      assert.ok(warnings.some((w) => /past the statement timeout/.test(w)))
      await sql.close()
    } finally {
      await timed.close()
    }
  })

  test('a statement that catches its cancel has its session ended', onPostgres, async () => {
    const sql = open({ poolSize: 1, statementTimeoutMs: 300, watchdogIntervalMs: 100, watchdogGraceMs: 500 })
    warnings.length = 0
    // Uncancelled it would finish after 10 s and resolve.
    await assert.rejects(sql.statement(user(), value('stubborn()'), { claims: null, readOnly: true }))
    assert.ok(warnings.some((w) => /past the statement timeout/.test(w)), warnings.join('\n'))
    // A request queued on the ended session fails with it; the next ones get a new session.
    await eventually(async () => JSON.stringify(await mine(sql, ALICE).catch(() => null)) === JSON.stringify([ALICE]), 'the pool opens a new session')
  })

  test('many namespaces logging in for the first time at once are all served by their pools', onPostgres, async () => {
    const [app] = await t.db.query<{ organisation_id: string; owner_id: string }>('select organisation_id, owner_id from platform.apps limit 1')
    const fresh: Namespace[] = []
    for (let i = 0; i < 8; i++) {
      const [row] = await t.db.query<{ id: string }>(
        `insert into platform.apps (organisation_id, owner_id, slug, name, visibility) values ($1, $2, $3, $3, 'public') returning id`,
        [app!.organisation_id, app!.owner_id, `burst-${i}`])
      fresh.push(await t.db.transaction((tx) => createNamespace(tx, { appId: row!.id, slug: `burst-${i}` })))
    }
    const sql = open({ connections: 16, poolSize: 1 })
    const answers = await Promise.all(fresh.map((namespace) => sql.statement(user(namespace), value(`to_json(current_user)`), { claims: null, readOnly: true })))
    assert.deepEqual(answers, fresh.map((namespace) => roleName(namespace, 'user')))
    assert.equal(sql.stats().wrapper, 0, 'no login failed for "tuple concurrently updated"')
  })
})
