-- The data statement's caller checks, cheaper and for one more caller (issue 14):
--
-- 1. The app token check in one index probe. `platform.app_token_callers` holds one row per
--    unrevoked app access token with the facts its validity depends on (its creator, the
--    app's current owner, whether that owner's email is confirmed) and the claims it acts
--    with, all kept by triggers in the very transactions that create or revoke a token,
--    move an app to another owner, or change the owner's email or its confirmation. The
--    check reads that one row by the token's hash (it read three: the token, its app, the
--    owner). It is not a cache: a change is in the table when it commits, so a token is
--    still revalidated on every request (spec 2.3), exactly as before.
-- 2. The app session cookie's check, so a browser's `/rest/v1` request is one statement
--    too: `platform_gate.app_cookie_caller`.
--
-- How the triggers stay exact under concurrent writers (READ COMMITTED): every writer of a
-- fact holds that fact's row lock until it commits, and whoever copies a fact from another
-- table reads it `for share`, which waits for an uncommitted change and then reads the
-- committed row, or makes the change wait until the copy has committed (and then the
-- changer's trigger, a later statement, sees the copied row and updates it). So:
-- - a new token copies its app's owner (`apps` row for share) and that owner's email and
--   confirmation (`users` row for share);
-- - an app moved to another owner copies the new owner's facts (`users` row for share) into
--   its tokens' rows; its own row is locked by the update;
-- - a user's email or confirmation change is copied into the rows of the apps they own;
-- - a revocation deletes the token's row.
-- Two writers of the same row are serialised by its row lock, and an update that finds the
-- row changed under it re-checks its condition on the new version.

create table platform.app_token_callers (
  token_hash bytea primary key,
  token_id uuid not null unique references platform.app_access_tokens (id) on delete cascade,
  app_id uuid not null,
  -- Valid while created_by = owner_id and owner_confirmed (identity/app-tokens/app-tokens.ts).
  created_by uuid not null,
  owner_id uuid not null,
  owner_confirmed boolean not null,
  -- What the check answers: the JSON text set as `request.jwt.claims`.
  claims text not null
);
create index app_token_callers_app on platform.app_token_callers (app_id);
create index app_token_callers_owner on platform.app_token_callers (owner_id);

create function platform.app_token_claims(p_owner uuid, p_email text, p_app uuid) returns text
language sql stable
set search_path = pg_catalog, pg_temp
as $$ select pg_catalog.json_build_object('sub', p_owner, 'role', 'authenticated', 'email', p_email, 'aud', p_app)::text $$;

-- A token created, changed or revoked: its row replaced by its current state.
create function platform.app_token_callers_of_token() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $trigger$
declare
  v_owner uuid;
  o record;
begin
  if tg_op = 'UPDATE' then
    delete from platform.app_token_callers where token_id = old.id;
  end if;
  if new.revoked_at is null then
    -- Two statements: the owner is read once the app's row is locked (a join locking both
    -- rows could re-check a moved owner against the old user row and find nothing).
    select a.owner_id into strict v_owner from platform.apps a where a.id = new.app_id for share;
    select u.email, u.email_confirmed_at is not null as confirmed into strict o
      from platform.users u where u.id = v_owner for share;
    insert into platform.app_token_callers (token_hash, token_id, app_id, created_by, owner_id, owner_confirmed, claims)
    values (new.token_hash, new.id, new.app_id, new.created_by, v_owner, o.confirmed,
            platform.app_token_claims(v_owner, o.email, new.app_id));
  end if;
  return null;
end
$trigger$;

create trigger app_token_callers_insert after insert on platform.app_access_tokens
  for each row execute function platform.app_token_callers_of_token();
-- Not on `last_used_at`, written up to once a minute per token in use.
create trigger app_token_callers_update after update of app_id, token_hash, created_by, revoked_at on platform.app_access_tokens
  for each row execute function platform.app_token_callers_of_token();

-- An app moved to another owner: its tokens' rows take the new owner's facts.
create function platform.app_token_callers_of_app() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $trigger$
declare
  o record;
begin
  select u.email, u.email_confirmed_at is not null as confirmed into strict o
    from platform.users u where u.id = new.owner_id for share;
  update platform.app_token_callers
     set owner_id = new.owner_id, owner_confirmed = o.confirmed,
         claims = platform.app_token_claims(new.owner_id, o.email, new.id)
   where app_id = new.id;
  return null;
end
$trigger$;

create trigger app_token_callers_owner after update of owner_id on platform.apps
  for each row when (old.owner_id is distinct from new.owner_id)
  execute function platform.app_token_callers_of_app();

-- An owner's email or confirmation changed: the rows of the tokens of the apps they own.
create function platform.app_token_callers_of_user() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $trigger$
begin
  update platform.app_token_callers
     set owner_confirmed = new.email_confirmed_at is not null,
         claims = platform.app_token_claims(new.id, new.email, app_id)
   where owner_id = new.id;
  return null;
end
$trigger$;

create trigger app_token_callers_user after update of email, email_confirmed_at on platform.users
  for each row when (old.email is distinct from new.email
                     or (old.email_confirmed_at is null) is distinct from (new.email_confirmed_at is null))
  execute function platform.app_token_callers_of_user();

insert into platform.app_token_callers (token_hash, token_id, app_id, created_by, owner_id, owner_confirmed, claims)
select t.token_hash, t.id, t.app_id, t.created_by, a.owner_id, u.email_confirmed_at is not null,
       platform.app_token_claims(a.owner_id, u.email, t.app_id)
  from platform.app_access_tokens t
  join platform.apps a on a.id = t.app_id
  join platform.users u on u.id = a.owner_id
 where t.revoked_at is null;

-- The check of migration 0027, same contract, one index probe.
create or replace function platform_gate.app_token_caller(p_app uuid, p_hash text) returns platform_gate.caller
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $check$
declare
  r platform_gate.caller;
begin
  select c.claims, c.token_id into r
    from platform.app_token_callers c
   where c.token_hash = pg_catalog.decode(p_hash, 'hex') and c.app_id = p_app
     and c.created_by = c.owner_id and c.owner_confirmed;
  if r.claims is null then
    raise exception 'the app access token is not valid for this app' using errcode = 'SVA01';
  end if;
  return r;
end
$check$;

-- The app session cookie's check (identity/sessions/app-sessions.ts, resolveAppSession, and
-- a private app's admission, accessReason): `p_hash` the hex SHA-256 of the cookie's secret,
-- `p_at` the platform clock's now, `p_refresh_by` now plus the refresh window. Raises SVA01
-- (no such live session of this app), SVA02 (its access is in its final minute or past: the
-- platform refreshes it through the central auth, outside any statement, and then runs the
-- request) or SVA03 (a private app not shared with the person). Unbound like the token
-- check: its argument is the hash of a 256-bit secret only the browser holds and only the
-- platform stores, and it answers who the session is, which the holder knows.
create function platform_gate.app_cookie_caller(p_app uuid, p_hash text, p_at timestamptz, p_refresh_by timestamptz, p_private boolean, p_owner uuid)
returns platform_gate.caller
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $check$
declare
  r record;
begin
  select u.id as user_id, u.email, u.email_confirmed_at, u.is_platform_admin, a.access_expires_at
    into r
    from platform.app_sessions a
    join platform.users u on u.id = a.user_id
   where a.secret_hash = pg_catalog.decode(p_hash, 'hex') and a.app_id = p_app
     and a.revoked_at is null and a.expires_at > p_at;
  if r.user_id is null then
    raise exception 'the session cookie is not valid for this app' using errcode = 'SVA01';
  end if;
  if r.access_expires_at <= p_refresh_by then
    raise exception 'the session must be refreshed first' using errcode = 'SVA02';
  end if;
  if p_private and r.user_id is distinct from p_owner
     and not (r.email_confirmed_at is not null and (r.is_platform_admin or exists (
       select from platform.app_grants g where g.app_id = p_app and g.user_id = r.user_id))) then
    raise exception 'your account has no access to this app' using errcode = 'SVA03';
  end if;
  return row(pg_catalog.json_build_object('sub', r.user_id, 'role', 'authenticated', 'email', r.email, 'aud', p_app)::text, null)::platform_gate.caller;
end
$check$;
revoke all on function platform_gate.app_cookie_caller(uuid, text, timestamptz, timestamptz, boolean, uuid) from public;
grant execute on function platform_gate.app_cookie_caller(uuid, text, timestamptz, timestamptz, boolean, uuid) to public;
