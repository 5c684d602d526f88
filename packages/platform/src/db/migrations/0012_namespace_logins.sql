-- On PostgreSQL the data API connects as each namespace's user role (deploy/namespace-sql.ts),
-- so an app's SQL runs in sessions that outlive one request. Two things follow.

-- Every namespace login is a member of this group (which holds no privileges), so an operator
-- can allow them with one pg_hba.conf line: `host <database> +service_app_login <platform host> scram-sha-256`.
-- Roles belong to the whole server: another platform database may have made it already.
do $$ begin
  if not exists (select from pg_catalog.pg_roles where rolname = 'service_app_login') then
    create role service_app_login nologin noinherit;
  end if;
exception when duplicate_object or unique_violation then null;
end $$;

-- A session-level advisory lock taken by app SQL would be held by a pooled connection after
-- the request, and could block the platform's own locks (deploys, migrations). Transaction-
-- level locks (pg_advisory_xact_lock and its kin) stay available; they end with the request.
revoke execute on function
  pg_catalog.pg_advisory_lock(bigint), pg_catalog.pg_advisory_lock(integer, integer),
  pg_catalog.pg_advisory_lock_shared(bigint), pg_catalog.pg_advisory_lock_shared(integer, integer),
  pg_catalog.pg_try_advisory_lock(bigint), pg_catalog.pg_try_advisory_lock(integer, integer),
  pg_catalog.pg_try_advisory_lock_shared(bigint), pg_catalog.pg_try_advisory_lock_shared(integer, integer)
  from public;

-- The SCRAM verifier the platform set on each namespace login (the password itself is derived
-- from the master key and stored nowhere). A role may change its own password; the sweep
-- compares pg_authid with this and puts it back.
create table platform.namespace_logins (
  role_name text primary key,
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  verifier text not null,
  updated_at timestamptz not null default now()
);
