-- The platform's own schema: organisations, users, owner API tokens, apps, releases and
-- app namespaces. App roles never get any privilege on this schema.

create table platform.organisations (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 120),
  created_at timestamptz not null default now()
);

create table platform.users (
  id uuid primary key default gen_random_uuid(),
  organisation_id uuid not null references platform.organisations (id),
  email text not null check (email = lower(email) and length(email) between 3 and 254),
  display_name text,
  organisation_role text not null default 'member' check (organisation_role in ('member', 'admin')),
  is_platform_admin boolean not null default false,
  email_confirmed_at timestamptz,
  created_at timestamptz not null default now()
);
create unique index users_email_key on platform.users (email);

create table platform.owner_tokens (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references platform.users (id) on delete cascade,
  name text not null,
  token_hash bytea not null unique,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);

create table platform.apps (
  id uuid primary key default gen_random_uuid(),
  organisation_id uuid not null references platform.organisations (id),
  owner_id uuid not null references platform.users (id),
  slug text not null unique check (slug ~ '^[a-z][a-z0-9-]{1,38}[a-z0-9]$' and slug !~ '--'),
  name text not null,
  visibility text not null check (visibility in ('public', 'private')),
  status text not null default 'active' check (status in ('active', 'paused', 'suspended', 'archived')),
  active_release_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table platform.releases (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references platform.apps (id) on delete cascade,
  version integer not null,
  status text not null check (status in ('active', 'superseded')),
  manifest jsonb not null,
  manifest_text text not null,
  sdk_version text not null,
  bundle_sha256 text not null,
  bundle_size integer not null,
  created_by uuid references platform.users (id),
  created_at timestamptz not null default now(),
  activated_at timestamptz not null default now(),
  unique (app_id, version)
);
create unique index releases_one_active on platform.releases (app_id) where status = 'active';

alter table platform.apps
  add constraint apps_active_release_fk foreign key (active_release_id) references platform.releases (id);

create table platform.release_files (
  release_id uuid not null references platform.releases (id) on delete cascade,
  path text not null,
  content bytea not null,
  size integer not null,
  sha256 text not null,
  primary key (release_id, path)
);

-- One app namespace: app x environment x development namespace. Each has its own schema
-- and three roles named <role_prefix>_owner, _user, _system.
create table platform.namespaces (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references platform.apps (id) on delete cascade,
  environment text not null check (environment in ('production', 'development')),
  dev_name text not null default '',
  schema_name text not null unique,
  role_prefix text not null unique check (role_prefix ~ '^ns_[0-9a-f]{12}$'),
  created_at timestamptz not null default now(),
  unique (app_id, environment, dev_name)
);

create table platform.app_migrations (
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  name text not null,
  sha256 text not null,
  release_id uuid not null references platform.releases (id),
  applied_at timestamptz not null default now(),
  primary key (namespace_id, name)
);

-- Request identity helpers for app SQL and row-level security policies. They read the
-- transaction-local claims the platform sets; `is_system` follows the current role only,
-- never a claim or setting (app SQL can forge settings with set_config).
create schema if not exists auth;

create function auth.jwt() returns jsonb
language sql stable
as $$ select coalesce(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb) $$;

create function auth.uid() returns uuid
language sql stable
as $$ select nullif(auth.jwt() ->> 'sub', '')::uuid $$;

create function auth.is_system() returns boolean
language sql stable
as $$ select pg_catalog.textregexeq(current_user::text, '^ns_[0-9a-f]{12}_system$') $$;

create function auth.role() returns text
language sql stable
as $$ select case when auth.is_system() then 'system' else coalesce(auth.jwt() ->> 'role', 'anon') end $$;

-- Wrappers that run app SQL as one namespace role, one function per role, owned by that
-- role and SECURITY DEFINER. Inside a security-definer call PostgreSQL refuses SET ROLE,
-- RESET ROLE and SET SESSION AUTHORIZATION, so app SQL cannot climb back to the platform's
-- session user; no app role has USAGE on this schema, so none can alter its wrapper.
create schema if not exists platform_exec;
revoke all on schema platform_exec from public;

-- App roles get nothing on the database beyond what each namespace grants.
revoke create on schema public from public;
do $$ begin
  execute format('revoke temporary on database %I from public', current_database());
end $$;

-- Extensions (pgvector, where the server has it) live in their own schema on every app's
-- search path.
create schema if not exists extensions;
grant usage on schema extensions to public;
