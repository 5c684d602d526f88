-- Platform locks that app SQL cannot take (review, 2026-11-28).
--
-- The platform serialised its own work (namespace creation, wrapper refresh, one deploy per
-- app, one writer of a namespace's secrets, the realtime sequencer) with transaction
-- advisory locks on keys anyone could compute (hashtext('namespace-create')). Advisory locks
-- share one key space per database and app roles may take transaction-level ones (apps use
-- them), so an app's SQL could hold the platform's key and stall every other tenant's work
-- for as long as a statement may run. A row of this table is locked instead
-- (db/platform-lock.ts); app roles have no usage on the platform schema.
create table platform.locks (
  name text primary key
);
