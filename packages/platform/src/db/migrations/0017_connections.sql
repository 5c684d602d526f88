-- Connections (spec 2.8, 3.2): a person's or an organisation's account at the external
-- system behind one published integration (provider app + integration name). Credential
-- values live in connection_credentials, AES-256-GCM under a key derived from the master
-- key, with the id of that key beside each ciphertext (so the key can be rotated) and the
-- connection id and field name bound as associated data. Nothing here is ever returned.
create table platform.connections (
  id uuid primary key,
  -- The provider app's organisation when the connection was made; sharing never leaves it.
  organisation_id uuid not null references platform.organisations (id) on delete cascade,
  provider_app_id uuid not null references platform.apps (id) on delete cascade,
  integration_name text not null check (integration_name ~ '^[a-z][a-z0-9]*(-[a-z0-9]+)*$'),
  kind text not null check (kind in ('personal', 'organisation')),
  -- The person who owns a personal connection; null for an organisation connection.
  owner_id uuid references platform.users (id) on delete cascade,
  created_by uuid references platform.users (id) on delete set null,
  label text not null check (length(label) between 1 and 100),
  status text not null default 'active' check (status in ('active', 'reconnect_required')),
  status_reason text,
  status_changed_at timestamptz not null,
  -- The secret webhook URL's token: its SHA-256 (hex) to find the connection by, and the
  -- token itself encrypted (like a credential) so its managers can see the URL again.
  webhook_token_hash text not null unique,
  webhook_token_encrypted text not null,
  webhook_key_id text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  check ((kind = 'personal') = (owner_id is not null))
);
create index connections_owner on platform.connections (owner_id, created_at desc, id) where owner_id is not null;
create index connections_organisation on platform.connections (organisation_id, created_at desc, id) where kind = 'organisation';
create index connections_provider on platform.connections (provider_app_id, integration_name);

create table platform.connection_credentials (
  connection_id uuid not null references platform.connections (id) on delete cascade,
  name text not null check (name ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  -- The contract's `secret` flag when the value was entered (false: may be shown back).
  secret boolean not null,
  value_encrypted text not null,
  key_id text not null,
  primary key (connection_id, name)
);
