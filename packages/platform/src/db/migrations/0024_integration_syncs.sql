-- Integration sync (spec 2.6 `sync`, 8): one row per connection whose provider contract
-- declares a sync, made by the sync scheduler (integrations/sync/) the first time it finds the
-- connection active and bound. Every platform process evaluates these rows; the row is also the
-- per-connection lease that keeps two runs from overlapping, across processes:
-- a claim moves handled_through to the occurrence it runs and sets running_until (the run's
-- timeout plus a grace) in one conditional update, and only a row whose running_until is null
-- or past may be claimed, so a run whose process died is taken over once its lease expires.
create table platform.integration_syncs (
  connection_id uuid primary key references platform.connections (id) on delete cascade,
  -- The contract's schedule and zone the row was started with; a change restarts it.
  schedule text not null,
  timezone text not null,
  -- Occurrences up to this instant are handled (run, or skipped while the connection could not sync).
  handled_through timestamptz not null,
  -- Nothing is due before this instant (the first occurrence after handled_through); null while
  -- stopped: no live binding, Reconnect required, or the provider publishes no sync now.
  next_run_at timestamptz,
  -- The lease of the run in progress (null: none).
  running_until timestamptz,
  lease_owner text,
  run_id uuid,
  last_started_at timestamptz,
  last_finished_at timestamptz,
  last_outcome text check (last_outcome in ('succeeded', 'failed', 'timed_out', 'unauthorized')),
  -- The latest failure, bounded, for managers and operators: { code, message }; never a credential.
  last_error jsonb,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index integration_syncs_due on platform.integration_syncs (next_run_at) where next_run_at is not null;
