-- Development mode for integrations (issue 13, spec 4.5, 7.2, 9): per development namespace
-- and integration name, how a consumer's calls are answered (`fake`: the operation's declared
-- fake; `live`: the app's real bindings, as in production) and, for a provider app's own
-- development namespace, the test connection its operation, sync and webhook Functions run
-- with when invoked there. Rows go with their namespace (a deleted development namespace
-- takes its settings) and a removed connection clears the choice.
create table platform.dev_integration_settings (
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  integration_name text not null check (integration_name ~ '^[a-z][a-z0-9]*(-[a-z0-9]+)*$' and length(integration_name) <= 64),
  mode text check (mode in ('live', 'fake')),
  test_connection_id uuid references platform.connections (id) on delete set null,
  updated_by uuid references platform.users (id) on delete set null,
  updated_at timestamptz not null,
  primary key (namespace_id, integration_name)
);
create index dev_integration_settings_connection on platform.dev_integration_settings (test_connection_id) where test_connection_id is not null;
