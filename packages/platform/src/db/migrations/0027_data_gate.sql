-- The data API's caller check inside its data statement (issue 14): a bearer caller of
-- `/rest/v1` (an app access token, or a signed-in person's access token) is checked by the
-- first CTE of the very statement that reads or writes the data, so the request is ONE
-- statement on the namespace's login pool. The check raises before any app SQL runs
-- (policies, views, triggers), so a revoked token or session is refused on its next
-- request in every process, as before (spec 2.3).
--
-- `platform.data_caller(proof)` answers `{claims, tokenId?}` or raises:
--   SVA01 (the credential is not valid for this app: 401), SVA03 (valid, but a private app
--   has not been shared with the person: 403).
-- proof: {kind: 'app_token', app, hash (hex SHA-256 of the token)}
--     or {kind: 'session', app, sid, sub, at (the platform clock's now), private, owner}.
--
-- The platform calls it on its own connections (the wrapper path: PGlite, fallbacks). The
-- login pools log in as the namespace's user role, which has no privilege on `platform`:
-- they call `platform_gate.data_caller(proof)`, which answers only when the session's login
-- role is the user role of the proof's app's production namespace. App SQL can call that
-- one too; it gives away nothing its caller does not hold already: a token proof is the
-- SHA-256 of a 256-bit secret only the platform stores, a session proof names an app session
-- id that only that session's access tokens carry, and the answer says what those tokens
-- already say (who, and that the session is still on), for the asking app's callers only.
-- App SQL run through the wrapper has the platform as its session user, so the gate never
-- answers it.

create function platform.data_caller(proof jsonb) returns jsonb
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $check$
declare
  v_app uuid;
  v_at timestamptz;
  r record;
begin
  v_app := (proof ->> 'app')::uuid;
  if proof ->> 'kind' = 'app_token' then
    -- The owner's token, unrevoked, its creator still the owner, the owner confirmed
    -- (identity/app-tokens/app-tokens.ts, findByHash).
    select t.id as token_id, u.id as user_id, u.email into r
      from platform.app_access_tokens t
      join platform.apps a on a.id = t.app_id and a.owner_id = t.created_by
      join platform.users u on u.id = a.owner_id
     where t.token_hash = pg_catalog.decode(proof ->> 'hash', 'hex') and t.app_id = v_app
       and t.revoked_at is null and u.email_confirmed_at is not null;
    if r.user_id is null then
      raise exception 'the app access token is not valid for this app' using errcode = 'SVA01';
    end if;
    return pg_catalog.jsonb_build_object(
      'claims', pg_catalog.jsonb_build_object('sub', r.user_id, 'role', 'authenticated', 'email', r.email, 'aud', v_app),
      'tokenId', r.token_id);
  elsif proof ->> 'kind' = 'session' then
    -- An app session of this app, unrevoked and unexpired, with its central session
    -- (identity/sessions/app-sessions.ts, appSessionById), of the token's subject.
    v_at := (proof ->> 'at')::timestamptz;
    select u.id as user_id, u.email, u.email_confirmed_at, u.is_platform_admin,
           exists (select 1 from platform.app_grants g where g.app_id = a.app_id and g.user_id = a.user_id) as granted
      into r
      from platform.app_sessions a
      join platform.sessions s on s.id = a.session_id
      join platform.users u on u.id = a.user_id
     where a.id = (proof ->> 'sid')::uuid and a.app_id = v_app and a.user_id = (proof ->> 'sub')::uuid
       and a.revoked_at is null and a.expires_at > v_at and s.revoked_at is null and s.expires_at > v_at;
    if r.user_id is null then
      raise exception 'the access token is not valid for this app' using errcode = 'SVA01';
    end if;
    -- A private app admits its owner, a confirmed person it was shared with, and confirmed
    -- platform administrators (identity/access/grants.ts, accessReason).
    if (proof ->> 'private')::boolean
       and r.user_id is distinct from (proof ->> 'owner')::uuid
       and not (r.email_confirmed_at is not null and (r.granted or r.is_platform_admin)) then
      raise exception 'your account has no access to this app' using errcode = 'SVA03';
    end if;
    return pg_catalog.jsonb_build_object(
      'claims', pg_catalog.jsonb_build_object('sub', r.user_id, 'role', 'authenticated', 'email', r.email, 'aud', v_app));
  end if;
  raise exception 'unknown caller proof' using errcode = 'SVA01';
end
$check$;
revoke all on function platform.data_caller(jsonb) from public;

create schema platform_gate;
grant usage on schema platform_gate to public;

create function platform_gate.data_caller(proof jsonb) returns jsonb
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $gate$
begin
  if not exists (
    select from platform.namespaces n
     where n.app_id = (proof ->> 'app')::uuid and n.environment = 'production' and n.dev_name = ''
       and n.role_prefix || '_user' = session_user) then
    raise exception 'the access token is not valid for this app' using errcode = 'SVA01';
  end if;
  return platform.data_caller(proof);
end
$gate$;
revoke all on function platform_gate.data_caller(jsonb) from public;
grant execute on function platform_gate.data_caller(jsonb) to public;
