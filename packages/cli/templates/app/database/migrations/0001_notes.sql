-- Notes belong to the person who wrote them: row-level security on auth.uid(). Migrations
-- run once each, in order, inside the deploy's transaction; add 0002_….sql to change the
-- schema later (never edit one that was deployed).
create table notes (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid(),
  text text not null check (length(text) between 1 and 500),
  created_at timestamptz not null default now()
);

create index notes_owner_created on notes (owner_id, created_at desc);

alter table notes enable row level security;

create policy notes_read on notes for select using (owner_id = auth.uid());
create policy notes_create on notes for insert with check (owner_id = auth.uid());
