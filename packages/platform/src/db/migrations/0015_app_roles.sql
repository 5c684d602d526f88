-- Organisation access model (issue 12; spec 3.5, 5.6). An app's people hold one role level
-- each: `use` (open the app, what a grant was), `edit` (change code, deploy, bind
-- integrations; includes use) or `administer` (manage access; includes edit). The owner
-- holds all three implicitly and has no row. Every existing grant becomes `use` (the
-- column's default fills the rows already there), so admission reads stay as they were:
-- any row admits.
alter table platform.app_grants add column role text not null default 'use'
  constraint app_grants_role_check check (role in ('use', 'edit', 'administer'));
alter table platform.app_grants add column updated_at timestamptz not null default now();
update platform.app_grants set role = 'use', updated_at = created_at;

-- A provider app's integration audiences (spec 2.6, 5.6). Use audience: the whole
-- organisation (the default, also when the app has no row here) or named people; the
-- Administer audience is named people (the owner always belongs to both). Named people are
-- members of the provider app's organisation: sharing never leaves it.
create table platform.integration_audiences (
  app_id uuid primary key references platform.apps (id) on delete cascade,
  use_scope text not null default 'organisation' check (use_scope in ('organisation', 'people')),
  updated_by uuid references platform.users (id) on delete set null,
  updated_at timestamptz not null default now()
);
create table platform.integration_audience_people (
  app_id uuid not null references platform.apps (id) on delete cascade,
  audience text not null check (audience in ('use', 'administer')),
  user_id uuid not null references platform.users (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (app_id, audience, user_id)
);
create index integration_audience_people_user on platform.integration_audience_people (user_id);
