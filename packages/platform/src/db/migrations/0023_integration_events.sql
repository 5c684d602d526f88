-- Integration event deliveries (spec 2.9, 6.1, 8): one row per (binding, event id), made by
-- `ctx.integration.emit` for each subscribed binding of the emitting connection. The unique
-- key is the deduplication: re-emitting the same change inserts nothing. Rows are claimed by
-- any platform process with FOR UPDATE SKIP LOCKED (integrations/events/delivery-worker.ts).
--
-- binding_id and connection_id are plain ids, not foreign keys: a record outlives an unbound
-- binding (unbinding deletes the binding row) and is kept 14 days for inspection. A delivery
-- whose consumer app is deleted goes with it.
create table platform.integration_event_deliveries (
  id uuid primary key,
  binding_id uuid not null,
  consumer_app_id uuid not null references platform.apps (id) on delete cascade,
  slot text not null,
  provider_app_id uuid not null,
  -- The slot's `provider` (`custom`) when the event was emitted: the handler's `provider`.
  provider text not null,
  integration_name text not null,
  connection_id uuid not null,
  event_id text not null check (length(event_id) between 1 and 255),
  type text not null,
  occurred_at timestamptz not null,
  -- Discarded (null) once the delivery is delivered or finally failed.
  data jsonb,
  state text not null check (state in ('waiting', 'running', 'delivered', 'failed')),
  -- Attempts started (raised in the claiming transaction, like jobs).
  attempts integer not null default 0,
  -- The latest failure: { code, message, status? }, bounded; never the payload.
  last_error jsonb,
  run_at timestamptz not null,
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  started_at timestamptz,
  delivered_at timestamptz,
  finished_at timestamptz,
  unique (binding_id, event_id)
);
-- Due work, in order.
create index integration_event_deliveries_due on platform.integration_event_deliveries (run_at, id) where state = 'waiting';
-- Expired leases.
create index integration_event_deliveries_leases on platform.integration_event_deliveries (lease_expires_at) where state = 'running';
-- The consumer app's listing, newest first.
create index integration_event_deliveries_app on platform.integration_event_deliveries (consumer_app_id, created_at desc, id desc);
-- Retention by end time.
create index integration_event_deliveries_finished on platform.integration_event_deliveries (finished_at) where state in ('delivered', 'failed');
