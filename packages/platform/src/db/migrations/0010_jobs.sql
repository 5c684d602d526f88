-- Durable background jobs (spec 2.12, 3.1): queue jobs and cron runs, one row per job,
-- claimed by any platform process with FOR UPDATE SKIP LOCKED.
--
-- A job's retry and concurrency policy is copied in at enqueue (pinned); its consumer is
-- resolved from the app's active release at dispatch. `attempts` counts attempts started:
-- it is raised in the transaction that claims the job, so a process that dies mid-attempt
-- has already counted that attempt once, and the lease makes sure it is counted only once.
create table platform.jobs (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references platform.apps (id) on delete cascade,
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  kind text not null check (kind in ('queue', 'cron')),
  -- The queue name, or `cron:<cron name>` for a cron run.
  queue text not null,
  state text not null check (state in ('queued', 'running', 'retry_wait', 'succeeded', 'dead_lettered')),
  -- Cleared when the job ends: the payload is not needed after the last attempt.
  payload jsonb,
  payload_sha256 text not null,
  idempotency_key text not null,
  enqueued_by uuid,
  concurrency integer not null check (concurrency between 1 and 100),
  max_attempts integer not null check (max_attempts between 1 and 25),
  retry_delay_seconds integer not null check (retry_delay_seconds >= 0),
  retry_backoff boolean not null,
  -- Null: the consumer Function's own timeout (cron runs).
  timeout_seconds integer check (timeout_seconds between 1 and 900),
  attempts integer not null default 0,
  run_at timestamptz not null,
  lease_owner text,
  lease_expires_at timestamptz,
  last_error jsonb,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  started_at timestamptz,
  finished_at timestamptz,
  unique (namespace_id, queue, idempotency_key)
);
-- Due work per queue, in order.
create index jobs_pending on platform.jobs (namespace_id, queue, run_at, id) where state in ('queued', 'retry_wait');
-- Due work across all queues (which queues have something to do), and paused apps' due work.
create index jobs_due on platform.jobs (run_at) where state in ('queued', 'retry_wait');
-- Running attempts per queue (concurrency) and expired leases.
create index jobs_running on platform.jobs (namespace_id, queue) where state = 'running';
create index jobs_leases on platform.jobs (lease_expires_at) where state = 'running';
-- History and totals by creation time; retention by end time.
create index jobs_app_created on platform.jobs (app_id, created_at desc, id desc);
create index jobs_finished on platform.jobs (finished_at) where state in ('succeeded', 'dead_lettered');

-- One row per (namespace, queue) that ever had a job: the claim locks it (SKIP LOCKED), so
-- processes that claim from the same queue at the same moment take turns and the count of
-- running jobs they compare with the queue's concurrency is exact.
create table platform.job_queues (
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  queue text not null,
  primary key (namespace_id, queue)
);

-- Active (not terminal) jobs per namespace, for the 10,000 limit without counting rows.
create table platform.job_namespaces (
  namespace_id uuid primary key references platform.namespaces (id) on delete cascade,
  active integer not null default 0 check (active >= 0)
);
