/**
 * Who the data API runs as: row-level security between two signed-in people, system-only
 * tables, anonymous callers of a public app (reads of deliberately public rows only, writes
 * refused before any SQL runs), admission of a private app before `/rest/v1`, and the
 * `svc_app_` token acting as the owner.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { PostgrestClient } from '@supabase/postgrest-js'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import {
  appUrl, bearer, deployDataApp, expectJson, rest, restClient, revealAppToken, signIn, signInBrowser, type SignedIn,
} from '../../test/data-fixture.ts'

type Row = Record<string, any>

/**
 * Todos private to their owner unless marked public; a system-only audit table; a guestbook
 * anyone could write if SQL ran (so an anonymous write that ran would leave a trace and
 * advance its sequence); functions that report and try to forge the caller's identity.
 */
const RLS_SQL = `
create table todos (
  id serial primary key,
  owner_id uuid not null default auth.uid(),
  title text not null,
  public boolean not null default false
);
alter table todos enable row level security;
create policy todos_read on todos for select using (owner_id = auth.uid() or public);
create policy todos_insert on todos for insert with check (owner_id = auth.uid());
create policy todos_update on todos for update using (owner_id = auth.uid()) with check (owner_id = auth.uid());
create policy todos_delete on todos for delete using (owner_id = auth.uid());

create table audit (id serial primary key, note text not null);
alter table audit enable row level security;
create policy audit_system on audit for all using (auth.is_system()) with check (auth.is_system());
insert into audit (note) values ('system only');

create table guestbook (id serial primary key, message text not null);
alter table guestbook enable row level security;
create policy guestbook_anyone on guestbook for all using (true) with check (true);

create function whoami() returns json language sql stable
  as $$ select json_build_object('uid', auth.uid(), 'role', auth.role(), 'system', auth.is_system()) $$;
create function sign_guestbook(message text) returns int language sql volatile
  as $$ insert into guestbook (message) values (message) returning id $$;
create function forge_system() returns json language plpgsql stable as $$
begin
  perform set_config('request.jwt.claims', '{"role": "system", "sub": null}', true);
  return json_build_object('role', auth.role(), 'system', auth.is_system(), 'audit', (select count(*) from audit));
end $$;
`

describe(`data API identity and row-level security (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  let ann: SignedIn
  let bob: SignedIn
  let ownerSession: SignedIn
  let appToken: string
  let asAnn: PostgrestClient
  let asBob: PostgrestClient
  let asAnon: PostgrestClient
  let asOwner: PostgrestClient

  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
    await deployDataApp(h, owner.token, { slug: 'board', sql: RLS_SQL })
    await deployDataApp(h, owner.token, { slug: 'vault', sql: RLS_SQL, visibility: 'private' })
    ann = await signIn(h, 'board', 'ann@example.test')
    bob = await signIn(h, 'board', 'bob@example.test')
    ownerSession = await signIn(h, 'board', 'owner@acme.test')
    appToken = await revealAppToken(h, { ownerToken: owner.token, ownerBrowser: ownerSession.browser, slug: 'board' })
    asAnn = restClient(h, 'board', bearer(ann.accessToken))
    asBob = restClient(h, 'board', bearer(bob.accessToken))
    asAnon = restClient(h, 'board')
    asOwner = restClient(h, 'board', bearer(appToken))
  })
  after(() => h.close())

  async function rows(query: PromiseLike<{ data: any; error: any; status: number }>, status = 200): Promise<Row[]> {
    const { data, error, status: got } = await query
    assert.equal(error, null, JSON.stringify(error))
    assert.equal(got, status)
    return data as Row[]
  }

  async function refused(query: PromiseLike<{ error: any; status: number }>, status: number, code: string): Promise<Row> {
    const { error, status: got } = await query
    assert.equal(got, status, JSON.stringify(error))
    assert.equal(error?.code, code, JSON.stringify(error))
    return error as Row
  }

  /** The table's rows as the platform sees them, bypassing the data API. */
  async function stored(slug: string, table: string): Promise<Row[]> {
    return [...await h.t.db.query(`select * from "app_${slug}"."${table}" order by id`)]
  }

  describe('two signed-in people', () => {
    let annTodo: number
    let bobTodo: number
    let bobPublic: number

    before(async () => {
      annTodo = (await rows(asAnn.from('todos').insert({ title: 'ann private' }).select('id'), 201))[0]!.id
      bobTodo = (await rows(asBob.from('todos').insert({ title: 'bob private' }).select('id'), 201))[0]!.id
      bobPublic = (await rows(asBob.from('todos').insert({ title: 'bob public', public: true }).select('id'), 201))[0]!.id
    })

    test('inserted rows belong to the caller through auth.uid()', async () => {
      const all = await stored('board', 'todos')
      assert.deepEqual(all.map((r) => [r.title, r.owner_id]), [
        ['ann private', ann.userId], ['bob private', bob.userId], ['bob public', bob.userId],
      ])
    })

    test("each sees their own rows and public ones, never the other's private rows", async () => {
      assert.deepEqual((await rows(asAnn.from('todos').select('title').order('id'))).map((r) => r.title), ['ann private', 'bob public'])
      assert.deepEqual((await rows(asBob.from('todos').select('title').order('id'))).map((r) => r.title), ['bob private', 'bob public'])
      assert.deepEqual(await rows(asAnn.from('todos').select('title').eq('id', bobTodo)), [])
      const counted = await asAnn.from('todos').select('id', { count: 'exact', head: true })
      assert.equal(counted.count, 2, 'counts see only visible rows too')
    })

    test("inserting a row owned by someone else is 42501 with 403, and nothing is written", async () => {
      const error = await refused(asAnn.from('todos').insert({ title: 'forged', owner_id: bob.userId }), 403, '42501')
      assert.match(error.message, /row-level security/)
      assert.equal((await stored('board', 'todos')).some((r) => r.title === 'forged'), false)
    })

    test("updating someone else's rows changes nothing (they are invisible) and handing over a row is 42501", async () => {
      const res = await rest(h, 'board', `/todos?id=eq.${bobTodo}`, { method: 'PATCH', token: ann.accessToken, json: { title: 'hijacked' } })
      assert.equal(res.status, 204)
      assert.equal(res.headers.get('content-range'), '*/*')
      assert.deepEqual(await rows(asAnn.from('todos').update({ title: 'hijacked' }).eq('id', bobPublic).select()), [],
        'a public row is readable, not writable')
      await refused(asAnn.from('todos').update({ owner_id: bob.userId }).eq('id', annTodo), 403, '42501')
      const all = await stored('board', 'todos')
      assert.deepEqual(all.map((r) => [r.title, r.owner_id]), [
        ['ann private', ann.userId], ['bob private', bob.userId], ['bob public', bob.userId],
      ])
    })

    test("deleting someone else's rows deletes nothing", async () => {
      assert.deepEqual(await rows(asAnn.from('todos').delete().in('id', [bobTodo, bobPublic]).select()), [])
      assert.equal((await stored('board', 'todos')).length, 3)
      assert.deepEqual((await rows(asAnn.from('todos').update({ title: 'ann edited' }).eq('id', annTodo).select('title'))), [{ title: 'ann edited' }])
    })

    test("auth.uid(), auth.role() and auth.is_system() describe the signed-in caller", async () => {
      const { data } = await asBob.rpc('whoami')
      assert.deepEqual(data, { uid: bob.userId, role: 'authenticated', system: false })
    })

    test('a browser session cookie reads as its user, and writes only with a JSON content type', async () => {
      const read = await ann.browser.fetch(`${appUrl('board')}/rest/v1/todos?select=title&order=id`, { headers: { accept: 'application/json' } })
      assert.deepEqual((await expectJson(read, 200)).map((r: Row) => r.title), ['ann edited', 'bob public'])
      const json = await ann.browser.fetch(`${appUrl('board')}/rest/v1/todos`, {
        method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/json' }, body: JSON.stringify({ title: 'by cookie' }),
      })
      assert.equal(json.status, 201)
      // A form or text/plain POST needs no CORS preflight, so another site could send it.
      const plain = await ann.browser.fetch(`${appUrl('board')}/rest/v1/todos`, {
        method: 'POST', headers: { accept: 'application/json', 'content-type': 'text/plain' }, body: JSON.stringify({ title: 'csrf' }),
      })
      assert.equal((await expectJson(plain, 415)).code, 'PGRST107')
      const bare = await ann.browser.fetch(`${appUrl('board')}/rest/v1/rpc/sign_guestbook?message=csrf`, { method: 'POST', headers: { accept: 'application/json' } })
      assert.equal(bare.status, 415)
      assert.equal((await stored('board', 'todos')).some((r) => r.title === 'csrf'), false)
    })
  })

  describe('system-only tables', () => {
    test('are invisible and unwritable for users and for the owner token', async () => {
      for (const client of [asAnn, asOwner]) {
        assert.deepEqual(await rows(client.from('audit').select('*')), [])
        await refused(client.from('audit').insert({ note: 'forged' }), 403, '42501')
        assert.deepEqual(await rows(client.from('audit').update({ note: 'x' }).gt('id', 0).select()), [])
        assert.deepEqual(await rows(client.from('audit').delete().gt('id', 0).select()), [])
      }
      assert.deepEqual((await stored('board', 'audit')).map((r) => r.note), ['system only'])
    })

    test('forged claims do not make a caller the system: auth.is_system() follows the role only', async () => {
      const { data } = await asAnn.rpc('forge_system')
      assert.deepEqual(data, { role: 'system', system: false, audit: 0 })
    })
  })

  describe('anonymous callers of a public app', () => {
    test('read only the deliberately public rows', async () => {
      assert.deepEqual((await rows(asAnon.from('todos').select('title'))).map((r) => r.title), ['bob public'])
      const res = await rest(h, 'board', '/todos?select=title', { headers: { prefer: 'count=exact' } })
      assert.equal(res.headers.get('content-range'), '0-0/1')
    })

    test("auth.role() is 'anon', auth.uid() null and auth.is_system() false", async () => {
      const { data } = await asAnon.rpc('whoami')
      assert.deepEqual(data, { uid: null, role: 'anon', system: false })
    })

    test('cannot write: 401 before any SQL runs (the table stays empty, its sequence does not move)', async () => {
      const attempts = [
        rest(h, 'board', '/guestbook', { json: { message: 'anon insert' } }),
        rest(h, 'board', '/guestbook?on_conflict=id', { json: { id: 1, message: 'anon upsert' }, headers: { prefer: 'resolution=merge-duplicates' } }),
        rest(h, 'board', '/rpc/sign_guestbook', { json: { message: 'anon rpc' } }),
        rest(h, 'board', '/rpc/sign_guestbook?message=anon%20get'),
      ]
      for (const res of await Promise.all(attempts)) {
        const body = await expectJson(res, 401)
        assert.equal(body.code, '42501')
        assert.equal(res.headers.get('www-authenticate'), 'Bearer')
      }
      await refused(asAnon.from('guestbook').insert({ message: 'via client' }), 401, '42501')
      assert.deepEqual(await stored('board', 'guestbook'), [])
      const first = await rows(asAnn.from('guestbook').insert({ message: 'signed in' }).select('id'), 201)
      assert.deepEqual(first, [{ id: 1 }], 'no anonymous attempt took a value from the sequence')
    })

    test('cannot update or delete either, even rows a policy would let anyone change', async () => {
      const patch = await rest(h, 'board', '/guestbook?id=eq.1', { method: 'PATCH', json: { message: 'defaced' } })
      assert.equal((await expectJson(patch, 401)).code, '42501')
      const del = await rest(h, 'board', '/guestbook?id=eq.1', { method: 'DELETE' })
      assert.equal((await expectJson(del, 401)).code, '42501')
      assert.deepEqual((await stored('board', 'guestbook')).map((r) => r.message), ['signed in'])
    })

    test('an invalid bearer token is refused by the edge, not treated as anonymous', async () => {
      const res = await rest(h, 'board', '/todos', { token: 'not-a-token' })
      assert.equal(res.status, 401)
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'AUTH_REQUIRED')
    })
  })

  describe('the svc_app_ token', () => {
    test("acts as the app's owner", async () => {
      const { data } = await asOwner.rpc('whoami')
      assert.deepEqual(data, { uid: owner.userId, role: 'authenticated', system: false })
      const inserted = await rows(asOwner.from('todos').insert({ title: 'owner todo' }).select('title,owner_id'), 201)
      assert.deepEqual(inserted, [{ title: 'owner todo', owner_id: owner.userId }])
      assert.deepEqual((await rows(asOwner.from('todos').select('title').order('id'))).map((r) => r.title), ['bob public', 'owner todo'],
        'the owner is bound by the same policies as anyone else')
    })

    test("is refused on another app's data API", async () => {
      const res = await rest(h, 'vault', '/todos', { token: appToken })
      assert.equal(res.status, 401)
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'AUTH_REQUIRED')
    })
  })

  describe('a private app', () => {
    test('refuses anonymous callers at admission: 401 AUTH_REQUIRED in the platform shape, for reads, writes and calls', async () => {
      for (const res of [
        await rest(h, 'vault', '/todos'),
        await rest(h, 'vault', '/guestbook', { json: { message: 'x' } }),
        await rest(h, 'vault', '/rpc/whoami'),
      ]) {
        const body = await expectJson(res, 401)
        assert.equal(body.error.code, 'AUTH_REQUIRED')
      }
      assert.deepEqual(await stored('vault', 'guestbook'), [])
    })

    test('refuses a signed-in person without a grant with 403 ACCESS_DENIED, and issues them no session token', async () => {
      const eve = await signInBrowser(h, 'vault', 'eve@example.test')
      const token = await eve.fetch(`${appUrl('vault')}/_service/api/session`, { method: 'POST', headers: { accept: 'application/json' } })
      assert.equal((await expectJson(token, 403)).error.code, 'ACCESS_DENIED')
      const byCookie = await eve.fetch(`${appUrl('vault')}/rest/v1/todos`, { headers: { accept: 'application/json' } })
      assert.equal((await expectJson(byCookie, 403)).error.code, 'ACCESS_DENIED')
    })

    test('serves a granted person and the owner', async () => {
      const guestBrowser = await signInBrowser(h, 'vault', 'guest@example.test')
      const grant = await h.request('/v1/apps/vault/grants', { token: owner.token, json: { email: 'guest@example.test' } })
      assert.equal(grant.status, 201)
      const guest = await signIn(h, 'vault', 'guest@example.test')
      assert.equal((await guestBrowser.fetch(`${appUrl('vault')}/rest/v1/todos`, { headers: { accept: 'application/json' } })).status, 200)
      const inserted = await rest(h, 'vault', '/todos?select=title,owner_id', {
        token: guest.accessToken, json: { title: 'granted' }, headers: { prefer: 'return=representation' },
      })
      assert.deepEqual(await expectJson(inserted, 201), [{ title: 'granted', owner_id: guest.userId }])
      const vaultToken = await revealAppToken(h, { ownerToken: owner.token, ownerBrowser: ownerSession.browser, slug: 'vault' })
      const asVaultOwner = await rest(h, 'vault', '/rpc/whoami', { token: vaultToken })
      assert.deepEqual(await expectJson(asVaultOwner, 200), { uid: owner.userId, role: 'authenticated', system: false })
    })

    test('refuses a granted person on the next request once the grant is revoked, by bearer token and by cookie', async () => {
      await signInBrowser(h, 'vault', 'ada@example.test')
      assert.equal((await h.request('/v1/apps/vault/grants', { token: owner.token, json: { email: 'ada@example.test' } })).status, 201)
      const ada = await signIn(h, 'vault', 'ada@example.test')
      assert.equal((await rest(h, 'vault', '/todos', { token: ada.accessToken })).status, 200)
      assert.equal((await h.request(`/v1/apps/vault/grants/${ada.userId}`, { token: owner.token, method: 'DELETE' })).status, 204)
      assert.equal((await expectJson(await rest(h, 'vault', '/todos', { token: ada.accessToken }), 403)).error.code, 'ACCESS_DENIED')
      const byCookie = await ada.browser.fetch(`${appUrl('vault')}/rest/v1/todos`, { headers: { accept: 'application/json' } })
      assert.equal((await expectJson(byCookie, 403)).error.code, 'ACCESS_DENIED')
    })
  })

  test('a partitioned table: each caller gets their own rows (partitions are pruned with their claims)', async () => {
    await deployDataApp(h, owner.token, { slug: 'parts', sql: `
create table notes (owner_id uuid not null default auth.uid(), body text not null) partition by hash (owner_id);
create table notes_0 partition of notes for values with (modulus 2, remainder 0);
create table notes_1 partition of notes for values with (modulus 2, remainder 1);
alter table notes enable row level security;
create policy own on notes using (owner_id = auth.uid()) with check (owner_id = auth.uid());` })
    const people = [await signIn(h, 'parts', 'ann@example.test'), await signIn(h, 'parts', 'bob@example.test')]
    for (const person of people) {
      const written = await rest(h, 'parts', '/notes', { token: person.accessToken, json: { body: `by ${person.userId}` } })
      assert.equal(written.status, 201, await written.text())
    }
    for (let round = 0; round < 3; round++) {
      for (const person of people) {
        const res = await rest(h, 'parts', '/notes?select=body', { token: person.accessToken })
        assert.deepEqual(await expectJson(res, 200), [{ body: `by ${person.userId}` }])
      }
    }
  })

  test(`every statement runs ${backend === 'postgres' ? 'in the namespace\'s login pool' : 'through the namespace wrapper'}`, async () => {
    const before = h.platform.appSql.stats()
    await rows(asAnn.from('todos').select('title'))
    await rows(asAnon.from('todos').select('title'))
    const after = h.platform.appSql.stats()
    if (backend === 'postgres') {
      assert.equal(after.login, before.login + 2)
      assert.equal(after.wrapper, before.wrapper)
    } else {
      assert.equal(after.login, 0)
      assert.equal(after.wrapper, before.wrapper + 2)
    }
  })
})
