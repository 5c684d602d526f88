/**
 * What one app's SQL can read of another's through the catalog (issue 11, finding 7): no
 * function bodies (pg_proc.prosrc, prosqlbody, pg_get_functiondef), no settings attached to
 * functions, no policy expressions (pg_policies, pg_policy), for any of a namespace's roles.
 * Names stay readable, as docs/decisions.md says; the platform reads everything as before.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { loadSchema } from '../data-api/schema.ts'
import { createTestDb, type TestDb, backend } from '../../test/test-db.ts'
import { createNamespace, runAsRole, type Namespace, type NamespaceRole } from '../namespaces/namespaces.ts'

const KEY = 'sk_live_not_for_other_apps'

/** The victim's SQL, holding the key everywhere the finding names (and a body of each kind). */
const VICTIM_SQL = `
create function leaky() returns text language plpgsql as $$ begin return '${KEY}'; end $$;
create function atomic_leaky() returns text language sql begin atomic select '${KEY}'; end;
create function configured() returns int language sql as $$ select 1 $$;
alter function configured() set application_name = '${KEY}';
create table vault (id int primary key, k text);
alter table vault enable row level security;
create policy keyed on vault using (k = '${KEY}') with check (k = '${KEY}');
`

describe(`app SQL cannot read another app's function bodies or policies (${backend})`, () => {
  let t: TestDb
  let victim: Namespace
  let snoop: Namespace

  before(async () => {
    t = await createTestDb()
    const [org] = await t.db.query<{ id: string }>(`insert into platform.organisations (name) values ('Acme') returning id`)
    const [user] = await t.db.query<{ id: string }>(
      `insert into platform.users (organisation_id, email) values ($1, 'o@acme.test') returning id`, [org!.id])
    const namespaces: Namespace[] = []
    for (const slug of ['victim', 'snoop']) {
      const [app] = await t.db.query<{ id: string }>(
        `insert into platform.apps (organisation_id, owner_id, slug, name, visibility) values ($1, $2, $3, $3, 'private') returning id`,
        [org!.id, user!.id, slug])
      namespaces.push(await t.db.transaction((tx) => createNamespace(tx, { appId: app!.id, slug })))
    }
    ;[victim, snoop] = namespaces as [Namespace, Namespace]
    await runAsRole(t.db, { namespace: victim, role: 'owner' }, VICTIM_SQL)
  })
  after(() => t.cleanup())

  const read = (role: NamespaceRole, sql: string) =>
    runAsRole(t.db, { namespace: snoop, role }, `select to_jsonb(array(${sql}))`, { params: [] })

  const refusals: [string, string][] = [
    ['pg_proc.prosrc', `select prosrc from pg_catalog.pg_proc where proname = 'leaky'`],
    ['pg_proc.prosqlbody', `select prosqlbody::text from pg_catalog.pg_proc where proname = 'atomic_leaky'`],
    ['pg_proc.proconfig', `select proconfig from pg_catalog.pg_proc where proname = 'configured'`],
    ['every column of pg_proc', `select p::text from pg_catalog.pg_proc p where proname = 'leaky'`],
    ['pg_get_functiondef', `select pg_catalog.pg_get_functiondef(oid) from pg_catalog.pg_proc where proname = 'leaky'`],
    ['pg_get_function_sqlbody', `select pg_catalog.pg_get_function_sqlbody(oid) from pg_catalog.pg_proc where proname = 'atomic_leaky'`],
    ['pg_policies', `select qual from pg_catalog.pg_policies where policyname = 'keyed'`],
    ['pg_policy.polqual', `select pg_catalog.pg_get_expr(polqual, polrelid) from pg_catalog.pg_policy where polname = 'keyed'`],
    ['pg_policy.polwithcheck', `select polwithcheck::text from pg_catalog.pg_policy where polname = 'keyed'`],
  ]

  for (const role of ['owner', 'user', 'system'] as const) {
    for (const [what, sql] of refusals) {
      test(`the ${role} role of another app is refused ${what}`, async () => {
        await assert.rejects(read(role, sql), { code: '42501' })
      })
    }

    test(`the ${role} role still sees names: functions, their signatures, policies and tables`, async () => {
      assert.deepEqual(await read(role, `select proname || '(' || pronargs || ')' from pg_catalog.pg_proc where proname = 'leaky'`), ['leaky(0)'])
      assert.deepEqual(await read(role, `select polname::text from pg_catalog.pg_policy where polname = 'keyed'`), ['keyed'])
      assert.deepEqual(await read(role, `select relname::text from pg_catalog.pg_class where relname = 'vault'`), ['vault'])
      // The standard view shows definitions to their owners only, as before.
      assert.deepEqual(await read(role,
        `select coalesce(routine_definition, '(hidden)') from information_schema.routines where routine_schema = '${victim.schemaName}' and routine_name = 'leaky'`),
      ['(hidden)'])
    })
  }

  test('the victim app itself is unaffected: its function runs, its policy applies, its owner sees its definitions', async () => {
    assert.equal(await runAsRole(t.db, { namespace: victim, role: 'user' }, 'select to_jsonb(leaky())', { params: [] }), KEY)
    assert.equal(await runAsRole(t.db, { namespace: victim, role: 'user' }, 'select to_jsonb(atomic_leaky())', { params: [] }), KEY)
    await runAsRole(t.db, { namespace: victim, role: 'user' }, `insert into vault values (1, '${KEY}')`)
    await assert.rejects(runAsRole(t.db, { namespace: victim, role: 'user' }, `insert into vault values (2, 'other')`), /row-level security/)
    const definitions = await runAsRole(t.db, { namespace: victim, role: 'owner' },
      `select to_jsonb(array(select routine_definition from information_schema.routines where routine_schema = '${victim.schemaName}' and routine_name = 'leaky'))`,
      { params: [] }) as string[]
    assert.match(definitions[0] ?? '', new RegExp(KEY))
  })

  test("the platform still reads bodies and policies, and the data API's introspection works", async () => {
    const [body] = await t.db.query<{ prosrc: string }>(`select prosrc from pg_catalog.pg_proc where proname = 'leaky'`)
    assert.match(body!.prosrc, new RegExp(KEY))
    const [policy] = await t.db.query<{ qual: string }>(`select qual from pg_catalog.pg_policies where policyname = 'keyed'`)
    assert.match(policy!.qual, new RegExp(KEY))
    const schema = await loadSchema(t.db, victim.schemaName)
    assert.ok(schema.functions.has('leaky'), 'the schema cache lists the function')
    assert.ok(schema.relations.has('vault'), 'the schema cache lists the table')
  })
})
