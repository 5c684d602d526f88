-- The data API's caller check inside its data statement (issue 14): a bearer caller of
-- `/rest/v1` (an app access token, or a signed-in person's access token) is checked by the
-- first CTE of the very statement that reads or writes the data, so the request is ONE
-- statement on the namespace's login pool. The check raises before any app SQL runs
-- (policies, views, triggers), so a revoked token or session is refused on its next
-- request in every process, as before (spec 2.3).
--
-- Two checks, each answering `(claims text, token_id uuid)` (the claims as the JSON text to
-- set as `request.jwt.claims`) or raising SVA01 (the credential is not valid for this app:
-- 401) or SVA03 (valid, but a private app has not been shared with the person: 403):
--   platform_gate.app_token_caller(app, hash): hash = hex SHA-256 of the token;
--   platform.app_session_caller(app, sid, sub, at, private, owner, bound): an access token's
--   app session, `at` the platform clock's now, `private`/`owner` the app as the edge knows
--   it, `bound` the login role asking (null: the platform).
-- Typed arguments and a JSON text built with json_build_object: a jsonb proof and answer
-- cost about twice as much (measured with bench/data, issue 14).
--
-- The login pools log in as the namespace's user role, which has no privilege on
-- `platform`; whatever the data statement calls, app SQL on that login can call too. So:
-- the token check is executable by PUBLIC and unbound: its argument is the SHA-256 of a
-- 256-bit secret that only the platform stores, so only the token's holder can ask, and it
-- answers who the token acts for, which the holder knows. The session check's argument, an
-- app session id, is carried by that session's access tokens only, but it is not a secret
-- of the same kind, so its door `platform_gate.app_session_caller` answers only when the
-- session's login role (`session_user`) is the user role of that app's production
-- namespace; the platform calls `platform.app_session_caller` on its own connections (the
-- wrapper path: PGlite, fallbacks). App SQL run through the wrapper has the platform as its
-- session user, so the door answers it nothing, and `platform` refuses it (42501).

create schema platform_gate;
grant usage on schema platform_gate to public;

-- What a check answers: the claims' JSON text, and the app token's id (null for a session).
create type platform_gate.caller as (claims text, token_id uuid);

-- The app token check, for the login pools and the platform alike. It is not bound to the
-- asking role: its argument is the SHA-256 of a 256-bit secret that only the platform stores
-- (namespace roles cannot read it), so only the token's holder can ask, and the answer is
-- who the token acts for, which its holder knows. (Binding it cost one more index probe per
-- request.)
create function platform_gate.app_token_caller(p_app uuid, p_hash text) returns platform_gate.caller
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $check$
declare
  r platform_gate.caller;
begin
  -- The owner's token, unrevoked, its creator still the owner, the owner confirmed
  -- (identity/app-tokens/app-tokens.ts, findByHash).
  select pg_catalog.json_build_object('sub', u.id, 'role', 'authenticated', 'email', u.email, 'aud', p_app)::text, t.id
    into r
    from platform.app_access_tokens t
    join platform.apps a on a.id = t.app_id and a.owner_id = t.created_by
    join platform.users u on u.id = a.owner_id
   where t.token_hash = pg_catalog.decode(p_hash, 'hex') and t.app_id = p_app
     and t.revoked_at is null and u.email_confirmed_at is not null;
  if r.claims is null then
    raise exception 'the app access token is not valid for this app' using errcode = 'SVA01';
  end if;
  return r;
end
$check$;

-- `p_bound`: the login role that must be the app's production user role; null for the platform.
create function platform.app_session_caller(p_app uuid, p_sid uuid, p_sub uuid, p_at timestamptz, p_private boolean, p_owner uuid, p_bound name)
returns platform_gate.caller
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $check$
declare
  r record;
begin
  -- An app session of this app, unrevoked and unexpired, with its central session
  -- (identity/sessions/app-sessions.ts, appSessionById), of the token's subject.
  select u.id as user_id, u.email, u.email_confirmed_at, u.is_platform_admin,
         exists (select 1 from platform.app_grants g where g.app_id = a.app_id and g.user_id = a.user_id) as granted
    into r
    from platform.app_sessions a
    join platform.sessions s on s.id = a.session_id
    join platform.users u on u.id = a.user_id
   where a.id = p_sid and a.app_id = p_app and a.user_id = p_sub
     and a.revoked_at is null and a.expires_at > p_at and s.revoked_at is null and s.expires_at > p_at
     and (p_bound is null or exists (
       select from platform.namespaces n
        where n.app_id = p_app and n.environment = 'production' and n.dev_name = '' and n.role_prefix || '_user' = p_bound));
  if r.user_id is null then
    raise exception 'the access token is not valid for this app' using errcode = 'SVA01';
  end if;
  -- A private app admits its owner, a confirmed person it was shared with, and confirmed
  -- platform administrators (identity/access/grants.ts, accessReason).
  if p_private and r.user_id is distinct from p_owner
     and not (r.email_confirmed_at is not null and (r.granted or r.is_platform_admin)) then
    raise exception 'your account has no access to this app' using errcode = 'SVA03';
  end if;
  return row(pg_catalog.json_build_object('sub', r.user_id, 'role', 'authenticated', 'email', r.email, 'aud', p_app)::text, null)::platform_gate.caller;
end
$check$;
revoke all on function platform.app_session_caller(uuid, uuid, uuid, timestamptz, boolean, uuid, name) from public;

-- The session check's door for the login pools, bound to the asking role. PL/pgSQL, not
-- SQL: a SQL function that cannot be inlined (a security definer cannot) has
-- its body planned again on every statement that calls it.
create function platform_gate.app_session_caller(p_app uuid, p_sid uuid, p_sub uuid, p_at timestamptz, p_private boolean, p_owner uuid)
returns platform_gate.caller
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $gate$ begin return platform.app_session_caller(p_app, p_sid, p_sub, p_at, p_private, p_owner, session_user); end $gate$;

revoke all on function platform_gate.app_token_caller(uuid, text) from public;
revoke all on function platform_gate.app_session_caller(uuid, uuid, uuid, timestamptz, boolean, uuid) from public;
grant execute on function platform_gate.app_token_caller(uuid, text) to public;
grant execute on function platform_gate.app_session_caller(uuid, uuid, uuid, timestamptz, boolean, uuid) to public;
