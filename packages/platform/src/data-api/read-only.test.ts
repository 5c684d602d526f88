import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'

describe(`reads cannot write (${backend})`, () => {
  let h: Harness
  let token: string
  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@acme.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'views', visibility: 'public' } })).status, 201)
    const res = await h.request('/v1/apps/views/deployments', {
      token,
      json: bundle({
        'service.yaml': manifest('views'),
        'database/migrations/0001_v.sql': `
          create table hits (id serial primary key, at timestamptz default now());
          alter table hits enable row level security;
          create policy anyone on hits using (true) with check (true);
          create function record_hit() returns int language sql volatile as $$ insert into hits default values returning id $$;
          create view sneaky as select record_hit() as hit;
          create table plain (id int primary key);
          insert into plain values (1);`,
      }),
    })
    assert.equal(res.status, 201, await res.text())
  })
  after(() => h.close())

  test('a GET through a view that calls a writing function fails with 25006 and writes nothing', async () => {
    const res = await h.request('/rest/v1/sneaky', { host: 'views', headers: { accept: 'application/json' } })
    assert.equal(res.status, 405)
    const body = (await res.json()) as { code: string; message: string }
    assert.equal(body.code, '25006')
    assert.match(body.message, /read-only transaction/)
    const [row] = await h.t.db.query<{ n: number }>('select count(*)::int as n from app_views.hits')
    assert.equal(row!.n, 0)
  })

  test('ordinary reads still answer in one statement', async () => {
    const res = await h.request('/rest/v1/plain?select=id', { host: 'views', headers: { accept: 'application/json' } })
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), [{ id: 1 }])
  })
})
