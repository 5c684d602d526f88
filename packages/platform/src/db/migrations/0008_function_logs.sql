-- Log lines Functions write through `ctx.log` (spec 2.10), per app and release. Bounded at
-- write time: the message to 4 KiB and the fields to 16 KiB of JSON.
create table platform.function_logs (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references platform.apps (id) on delete cascade,
  release_id uuid not null references platform.releases (id) on delete cascade,
  function_name text not null,
  request_id text not null,
  level text not null check (level in ('debug', 'info', 'warn', 'error')),
  message text not null,
  fields jsonb,
  created_at timestamptz not null
);
create index function_logs_app_created on platform.function_logs (app_id, created_at desc);
