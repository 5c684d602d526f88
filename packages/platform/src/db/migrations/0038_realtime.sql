-- Realtime (issue 20): the change log that app tables' triggers write to, the positions the
-- platform gives its changes, presence, and the tables that have triggers (realtime/).

-- One row per changed row of an app table that a realtime subscription enabled, written by
-- `platform_realtime.capture` in the writer's transaction, so a change exists exactly when
-- its transaction commits. Inserts and updates keep only the primary key (the platform reads
-- the row back under each subscriber's identity); deletes keep the old row, never sent to
-- anyone: the platform evaluates the table's read policies on it for each subscriber and
-- sends the key alone. `position` is given after commit, in commit order, by one sequencer at
-- a time (realtime/change-log.ts): a reader that has seen position n has seen every change
-- before it. Kept REALTIME_RESUME_SECONDS for resuming subscriptions, then purged.
create table platform.realtime_changes (
  id bigint generated always as identity primary key,
  position bigint unique,
  schema_name text not null,
  table_name text not null,
  op text not null check (op in ('insert', 'update', 'delete')),
  key jsonb not null,
  old_row jsonb,
  changed_at timestamptz not null default pg_catalog.now()
);
create index realtime_changes_unsequenced on platform.realtime_changes (id) where position is null;
create index realtime_changes_changed_at on platform.realtime_changes (changed_at);

-- The last position given, and the last one purged (a resume from before it is a gap).
create table platform.realtime_state (
  singleton boolean primary key default true check (singleton),
  last_position bigint not null default 0,
  purged_through bigint not null default 0
);
insert into platform.realtime_state default values;

-- The triggers' function. Security definer (owned by the platform): the app's roles may fire
-- it but cannot call it (a trigger function cannot be called) nor read what it writes. The
-- trigger names the primary key's columns as its arguments; the table is the trigger's own,
-- so an app can only ever log changes of its own schema. One statement-level trigger per
-- operation (a transition table serves one event), so a statement that changes many rows
-- writes them in one insert and sends one notice.
create schema platform_realtime;
grant usage on schema platform_realtime to public;
create function platform_realtime.capture() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $capture$
declare
  written bigint;
begin
  insert into platform.realtime_changes (schema_name, table_name, op, key, old_row)
  select tg_table_schema, tg_table_name, pg_catalog.lower(tg_op),
         (select pg_catalog.jsonb_object_agg(k, r.row -> k) from pg_catalog.unnest(tg_argv) as k),
         case when tg_op = 'DELETE' then r.row end
    from (select pg_catalog.to_jsonb(x) as row from platform_realtime_rows as x) as r;
  get diagnostics written = row_count;
  -- No payload: the notice only wakes the sequencer (a NOTIFY payload is at most 8,000 bytes).
  if written > 0 then
    perform pg_catalog.pg_notify('platform_realtime_raw', '');
  end if;
  return null;
end
$capture$;

-- Presence: who is in a channel, kept by the process holding their socket (refreshed every
-- few seconds) so every process can answer a join with the channel's state; rows of a
-- process that died stop being refreshed and are swept, with a leave for each.
create table platform.realtime_presence (
  ref text primary key,
  app_id uuid not null references platform.apps (id) on delete cascade,
  topic text not null,
  key text not null,
  state jsonb not null,
  process_id text not null,
  refreshed_at timestamptz not null default pg_catalog.now()
);
create index realtime_presence_topic on platform.realtime_presence (app_id, topic);
create index realtime_presence_process on platform.realtime_presence (process_id);

-- Tables whose triggers a subscription installed, and when one was last subscribed to; the
-- sweep drops the triggers of tables nobody subscribed to for a day.
create table platform.realtime_tables (
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  table_name text not null,
  subscribed_at timestamptz not null default pg_catalog.now(),
  primary key (namespace_id, table_name)
);
