-- Cron scheduler state (spec 2.5, 8). Occurrences become jobs (platform.jobs, kind 'cron')
-- whose idempotency key is the occurrence, so each fires once however many processes try;
-- this table says how far each declaration has been handled, and the lease lets one
-- process at a time do the evaluating.

-- One row per enabled cron declaration of an active production release. Occurrences at or
-- before `handled_through` are handled: enqueued, coalesced into a later one after
-- downtime, or skipped while the app was not active. A changed schedule or zone, a new
-- declaration, or one enabled again starts afresh from its release's activation.
create table platform.cron_schedules (
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  name text not null,
  schedule text not null,
  timezone text not null,
  handled_through timestamptz not null,
  -- The latest occurrence enqueued on schedule, and its job.
  last_scheduled_at timestamptz,
  last_job_id uuid,
  updated_at timestamptz not null,
  primary key (namespace_id, name)
);

-- The scheduler lease: a single row naming the process that evaluates schedules until
-- `expires_at`. Another process takes over once it has expired.
create table platform.cron_lease (
  id boolean primary key default true check (id),
  owner text not null,
  expires_at timestamptz not null
);
