/**
 * Shared setup for the data API tests: deploy an app whose only content is a database
 * migration, sign people into it (cookie and bearer JWT), reveal an `svc_app_` app token,
 * and talk to `{app_url}/rest/v1` either through @supabase/postgrest-js or raw `fetch`
 * (for the headers postgrest-js hides).
 */
import assert from 'node:assert/strict'
import { PostgrestClient } from '@supabase/postgrest-js'
import { bundle, manifest, type Harness } from './harness.ts'
import { CookieClient, field } from './cookie-client.ts'
import { AUTH, appUrl, signInTo } from './sign-in-flow.ts'

export { appUrl }

/** Creates the app and deploys `sql` as its first migration (plus a page). */
export async function deployDataApp(
  h: Harness,
  token: string,
  options: { slug: string; sql: string; visibility?: 'public' | 'private' },
): Promise<void> {
  const visibility = options.visibility ?? 'public'
  const created = await h.request('/v1/apps', { token, json: { slug: options.slug, visibility } })
  assert.equal(created.status, 201, await created.clone().text())
  const res = await h.request(`/v1/apps/${options.slug}/deployments`, {
    token,
    json: bundle({
      'service.yaml': manifest(options.slug, '', visibility),
      'public/index.html': `<h1>${options.slug}</h1>`,
      'database/migrations/0001_data.sql': options.sql,
    }),
  })
  assert.equal(res.status, 201, await res.text())
}

export interface SignedIn {
  browser: CookieClient
  /** A bearer JWT from `POST {app_url}/_service/api/session`. */
  accessToken: string
  userId: string
}

/** Signs `email` into the app in a fresh browser (an app session cookie, no token). */
export async function signInBrowser(h: Harness, slug: string, email: string): Promise<CookieClient> {
  const browser = new CookieClient(h)
  await signInTo(browser, slug, email)
  return browser
}

/**
 * Signs `email` into the app in a fresh browser and trades the cookie for a bearer JWT (a
 * private app issues one only to a caller it admits).
 */
export async function signIn(h: Harness, slug: string, email: string): Promise<SignedIn> {
  const browser = await signInBrowser(h, slug, email)
  const res = await browser.fetch(`${appUrl(slug)}/_service/api/session`, { method: 'POST', headers: { accept: 'application/json' } })
  assert.equal(res.status, 200, await res.clone().text())
  const body = (await res.json()) as { accessToken: string; user: { id: string } }
  return { browser, accessToken: body.accessToken, userId: body.user.id }
}

/** Creates an `svc_app_` token for the app and reveals it in the owner's signed-in browser. */
export async function revealAppToken(h: Harness, options: { ownerToken: string; ownerBrowser: CookieClient; slug: string }): Promise<string> {
  const created = await h.request(`/v1/apps/${options.slug}/access-tokens`, { token: options.ownerToken, json: { name: 'tests' } })
  assert.equal(created.status, 201)
  const { revealUrl } = (await created.json()) as { revealUrl: string }
  const review = await options.ownerBrowser.fetch(revealUrl)
  const page = await review.text()
  assert.equal(review.status, 200, page)
  const res = await options.ownerBrowser.post(`${AUTH}/app-tokens/reveal`, { csrf: field(page, 'csrf'), id: field(page, 'id'), k: field(page, 'k') })
  const html = await res.text()
  const secret = /svc_app_[A-Za-z0-9_-]{43}/.exec(html)?.[0]
  assert.ok(secret, 'the reveal page shows the token')
  return secret
}

/** A postgrest-js client for the app's data API, sending `headers` (e.g. Authorization). */
export function restClient(h: Harness, slug: string, headers: Record<string, string> = {}): PostgrestClient {
  return new PostgrestClient(`${appUrl(slug)}/rest/v1`, {
    headers,
    retry: false,
    fetch: (input, init) => h.platform.fetch(new Request(input, init)),
  })
}

/** Bearer headers for a token (JWT or `svc_app_`), or none for anonymous. */
export function bearer(token: string | null): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {}
}

/** A raw request to `{app_url}/rest/v1{path}`; `json` becomes the body (POST by default). */
export function rest(
  h: Harness,
  slug: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; json?: unknown; body?: string; token?: string | null } = {},
): Promise<Response> {
  const headers = new Headers({ accept: 'application/json', ...bearer(init.token ?? null), ...init.headers })
  let body: string | undefined = init.body
  if (init.json !== undefined) {
    body = JSON.stringify(init.json)
    headers.set('content-type', 'application/json')
  }
  const method = init.method ?? (body === undefined ? 'GET' : 'POST')
  return h.platform.fetch(new Request(`${appUrl(slug)}/rest/v1${path}`, { method, headers, ...(body === undefined ? {} : { body }) }))
}

/** The JSON body of a response, asserting its status first (with the body in the message). */
export async function expectJson<T = any>(res: Response, status: number): Promise<T> {
  const text = await res.text()
  assert.equal(res.status, status, text)
  return (text === '' ? null : JSON.parse(text)) as T
}

/**
 * The library: related tables (two foreign keys from books to authors, so embeds need a
 * hint), a one-to-one table, a view, arrays, jsonb, a generated tsvector beside plain text,
 * a range, nullable columns, an analysed 2000-row table for planned counts, tables the write
 * tests may change, and functions of every shape the data API calls.
 */
export const LIBRARY_SQL = `
create table authors (
  id int primary key,
  name text not null,
  email text,
  tags text[] not null default '{}',
  profile jsonb,
  active boolean,
  born date
);
create table books (
  id int primary key,
  title text not null,
  author_id int references authors (id),
  editor_id int references authors (id),
  pages int,
  price numeric(8, 2),
  period daterange,
  summary text,
  search tsvector generated always as (to_tsvector('english', title || ' ' || coalesce(summary, ''))) stored
);
create table reviews (
  id int primary key,
  book_id int not null references books (id),
  stars int not null,
  body text
);
create table author_stats (
  author_id int primary key references authors (id),
  followers int not null
);
create view book_titles as
  select b.id, b.title, a.name as author from books b left join authors a on a.id = b.author_id;
create table numbers (n int primary key);
insert into numbers select generate_series(1, 2000);
analyze numbers;

insert into authors values
  (1, 'Ann', 'ann@example.test', '{fiction,poetry}', '{"city": "Oslo", "langs": ["no", "en"], "age": "40"}', true, '1980-01-01'),
  (2, 'Bob', null, '{fiction}', '{"city": "Rome", "langs": ["it"], "age": "35"}', false, null),
  (3, 'Cid', 'cid@example.test', '{}', null, null, '1990-05-05'),
  (4, 'Dee', null, '{poetry,essay}', '{"city": "Oslo", "langs": []}', true, null);
insert into books (id, title, author_id, editor_id, pages, price, period, summary) values
  (1, 'The Silent Sea', 1, 2, 320, 19.99, '[2020-01-01,2020-06-30)', 'A voyage across quiet waters'),
  (2, 'Winter Poems', 1, null, 80, 9.50, '[2021-01-01,2021-12-31)', 'Short poems about snow and light'),
  (3, 'Roman Nights', 2, 1, 410, null, null, 'A crime story set in Rome'),
  (4, 'Lost Pages', null, null, null, 5.00, null, null),
  (5, 'Sea of Stars', 3, 3, 200, 14.00, '[2019-03-01,2019-09-01)', 'Space opera with a sea of stars');
insert into reviews values (1, 1, 5, 'Loved it'), (2, 1, 4, 'Slow start'), (3, 3, 2, 'Not for me'), (4, 5, 5, null);
insert into author_stats values (1, 120), (2, 7);

create table notes (
  id serial primary key,
  title text not null,
  body text default 'empty',
  rank int default 5 check (rank between 0 and 100),
  tags text[] default '{}',
  author_id int references authors (id),
  created_by uuid default auth.uid()
);
create table settings (key text primary key, value text, version int not null default 1);
create table counters (id serial primary key, slug text unique not null, value int not null default 0);

create function add(a int, b int default 1) returns int language sql immutable as $$ select a + b $$;
create function books_by(author int) returns setof books language sql stable
  as $$ select * from books where author_id = author order by id $$;
create function author_names() returns setof text language sql stable as $$ select name from authors order by id $$;
create function long_books(min_pages int default 300) returns table (title text, pages int) language sql stable
  as $$ select title, pages from books where pages >= min_pages order by pages $$;
create function first_book() returns books language sql stable as $$ select * from books order by id limit 1 $$;
create function bump(counter text, step int default 1) returns int language sql volatile as $$
  insert into counters (slug, value) values (counter, step)
  on conflict (slug) do update set value = counters.value + excluded.value returning value $$;
create function touch() returns void language sql volatile as $$ update counters set value = value where false $$;
create function whoami() returns json language sql stable
  as $$ select json_build_object('uid', auth.uid(), 'role', auth.role(), 'system', auth.is_system()) $$;
create function fail_with(message text) returns int language plpgsql stable as $$
  begin raise exception '%', message using hint = 'raised on purpose'; end $$;
`
