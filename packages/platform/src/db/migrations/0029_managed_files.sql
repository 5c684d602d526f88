-- Managed files (issue 15, spec 2.10 files, 4.3, 5.5, 8 delegated file read).
--
-- A file belongs to one app namespace (production or one development namespace) and to its
-- owner: the person who uploaded it, or the app itself (owner_user_id null: uploaded by a
-- `system` invocation). Its bytes live in the storage adapter under `storage_key`, one
-- object per content generation; `generation` counts replacements from 1.
create table platform.files (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references platform.apps (id) on delete cascade,
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  owner_user_id uuid,
  generation integer not null check (generation >= 1),
  name text not null check (length(name) between 1 and 255),
  content_type text not null check (length(content_type) between 1 and 255),
  size bigint not null check (size >= 0),
  sha256 text not null,
  storage_key text not null unique,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index files_namespace_owner on platform.files (namespace_id, owner_user_id);

-- File references: opaque random tokens (`file_` and 43 base64url characters), one per
-- content generation; a reference of an older generation stays known (so a delegated read
-- can tell FILE_INPUT_CHANGED from a guess) but no longer reads. Always looked up with the
-- namespace, so a reference is nothing in another app or namespace. Kept as text so that
-- `info(id)` can answer with the current reference.
create table platform.file_refs (
  ref text primary key,
  file_id uuid not null references platform.files (id) on delete cascade,
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  generation integer not null
);
create index file_refs_file on platform.file_refs (file_id);

-- Storage objects being written or waiting to be deleted: inserted (and committed) before
-- the bytes are written, deleted in the transaction that commits the file's metadata. A row
-- older than the sweep age names an object nobody owns: the sweep deletes it.
create table platform.file_objects_pending (
  storage_key text primary key,
  reason text not null check (reason in ('upload', 'delete')),
  created_at timestamptz not null
);

-- Delegated read grants (SDK 2.4.0): `jobs.enqueue(..., { files: { read } })` pins each
-- file's content generation for the job's consumer, for 14 days.
create table platform.file_grants (
  job_id uuid not null references platform.jobs (id) on delete cascade,
  file_id uuid not null references platform.files (id) on delete cascade,
  generation integer not null,
  expires_at timestamptz not null,
  primary key (job_id, file_id)
);
create index file_grants_file on platform.file_grants (file_id);

-- A file row deleted by a cascade (its app or development namespace removed) leaves its
-- object to the sweep: the deletion records it as pending. `remove` records it itself first.
create function platform.file_object_orphaned() returns trigger language plpgsql as $$
begin
  insert into platform.file_objects_pending (storage_key, reason, created_at)
  values (old.storage_key, 'delete', now())
  on conflict (storage_key) do nothing;
  return old;
end
$$;
create trigger files_object_orphaned after delete on platform.files
  for each row execute function platform.file_object_orphaned();
