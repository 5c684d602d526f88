-- Tasks belong to the person who created them. Policies use auth.uid() for people and
-- auth.is_system() for the app's system Functions (never "auth.uid() is null", which
-- would also admit anonymous callers).
create table tasks (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid(),
  title text not null check (length(title) between 1 and 200),
  done boolean not null default false,
  remind_at timestamptz,
  reminded_at timestamptz,
  created_at timestamptz not null default now()
);

create index tasks_owner_created on tasks (owner_id, created_at desc);

alter table tasks enable row level security;

create policy tasks_read on tasks for select
  using (owner_id = auth.uid() or auth.is_system());
create policy tasks_create on tasks for insert
  with check (owner_id = auth.uid());
create policy tasks_change on tasks for update
  using (owner_id = auth.uid() or auth.is_system())
  with check (owner_id = auth.uid() or auth.is_system());
create policy tasks_remove on tasks for delete
  using (owner_id = auth.uid());
