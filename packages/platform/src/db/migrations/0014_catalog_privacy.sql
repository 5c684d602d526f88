-- App SQL runs as namespace roles, never superusers, and PUBLIC may read the whole catalog:
-- any app could read another app's function bodies and policies (a body held an API key).
-- Here PUBLIC loses what PostgreSQL lets us take away without breaking the catalog views
-- apps and tools use; the platform is a superuser and reads everything as before (its data
-- API introspection, the wrapper version check). Privileges on pg_catalog belong to this
-- database only. What stays readable is listed in docs/decisions.md ("What app SQL can read
-- of other apps"): never put secrets in SQL.

-- Function bodies (prosrc; prosqlbody for `begin atomic` bodies) and settings attached with
-- `alter function ... set` (proconfig): every other column stays readable, so names,
-- signatures and `'name(args)'::regprocedure` work. The column list is read from the
-- catalog, as it differs between PostgreSQL versions.
do $$
declare
  visible text;
begin
  select pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' order by a.attnum) into visible
    from pg_catalog.pg_attribute a
   where a.attrelid = 'pg_catalog.pg_proc'::pg_catalog.regclass and a.attnum > 0 and not a.attisdropped
     and a.attname not in ('prosrc', 'prosqlbody', 'proconfig');
  revoke select on pg_catalog.pg_proc from public;
  execute pg_catalog.format('grant select (%s) on pg_catalog.pg_proc to public', visible);
  -- These read the body from the system cache, past any column privilege.
  revoke execute on function pg_catalog.pg_get_functiondef(oid) from public;
  if pg_catalog.to_regprocedure('pg_catalog.pg_get_function_sqlbody(oid)') is not null then
    revoke execute on function pg_catalog.pg_get_function_sqlbody(oid) from public;
  end if;
end $$;

-- Policies: their expressions (polqual, polwithcheck) and the pg_policies view that prints
-- them. Names, tables, commands and roles stay readable in pg_policy.
revoke select on pg_catalog.pg_policy from public;
grant select (oid, polname, polrelid, polcmd, polpermissive, polroles) on pg_catalog.pg_policy to public;
revoke select on pg_catalog.pg_policies from public;
