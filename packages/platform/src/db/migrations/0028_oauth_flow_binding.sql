-- Connect and bind in one step with OAuth 2.0 (issue 12, spec 5.6, 7.2
-- INTEGRATION_CONNECTION_REQUIRED): a flow started from a `calling_user` slot's
-- connect-and-bind page remembers the consumer app and slot, so that the callback binds the
-- new connection for the person as soon as it is made.
alter table platform.oauth_flows
  add column bind_app_id uuid references platform.apps (id) on delete cascade,
  add column bind_slot text check (length(bind_slot) between 1 and 64),
  add constraint oauth_flows_bind_whole check ((bind_app_id is null) = (bind_slot is null));
