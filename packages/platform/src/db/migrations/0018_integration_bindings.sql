-- Bindings (spec 2.7, 3.5, 5.6): one consumer app slot bound to one connection. An
-- `account: app` slot has at most one live binding (user_id null); a `calling_user` slot has
-- one per person (user_id = that person). `capabilities` are those granted when bound: the
-- slot's request intersected with the contract's declaration. A binding is `revoked`
-- permanently (kept for the record, never reactivated) when a personal connection's owner
-- loses Edit on the consumer app or leaves the organisation; suspension is not stored (the
-- broker computes it at every call from the provider's Use audience).
create table platform.integration_bindings (
  id uuid primary key,
  consumer_app_id uuid not null references platform.apps (id) on delete cascade,
  slot text not null check (length(slot) between 1 and 64),
  connection_id uuid not null references platform.connections (id) on delete cascade,
  -- The person a `calling_user` binding belongs to; null for an `account: app` slot.
  user_id uuid references platform.users (id) on delete cascade,
  created_by uuid not null references platform.users (id) on delete cascade,
  capabilities jsonb not null,
  status text not null default 'active' check (status in ('active', 'revoked')),
  revoked_reason text,
  revoked_at timestamptz,
  created_at timestamptz not null
);
create unique index integration_bindings_app_slot on platform.integration_bindings (consumer_app_id, slot)
  where status = 'active' and user_id is null;
create unique index integration_bindings_person_slot on platform.integration_bindings (consumer_app_id, slot, user_id)
  where status = 'active' and user_id is not null;
create index integration_bindings_connection on platform.integration_bindings (connection_id);
