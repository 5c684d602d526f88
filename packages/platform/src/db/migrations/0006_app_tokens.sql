-- App access tokens (`svc_app_…`): per-app credentials that act as the app's owner on
-- runtime APIs only. Only the SHA-256 of a token is stored. Its value is shown once: via a
-- one-time reveal link (owner API), or on the owner's approval page (agent requests).
-- Also the CLI's browser login, which hands the CLI an owner API token and never a session.

create table platform.app_access_tokens (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references platform.apps (id) on delete cascade,
  name text not null check (length(name) between 1 and 80),
  token_hash bytea not null unique,
  -- A token works only while its creator still owns the app (see app-tokens.ts).
  created_by uuid not null references platform.users (id) on delete cascade,
  created_at timestamptz not null,
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index app_access_tokens_active on platform.app_access_tokens (app_id, created_at) where revoked_at is null;

-- One-time reveal of a new token's value: encrypted with a key derived from the master key,
-- opened by a link secret (`k`, stored hashed) for 15 minutes. `secret_enc` is cleared when
-- the value is shown, when the token is revoked and when the link has expired.
create table platform.app_token_reveals (
  id uuid primary key,
  token_id uuid not null references platform.app_access_tokens (id) on delete cascade,
  secret_enc text,
  key_hash bytea not null unique,
  expires_at timestamptz not null,
  viewed_at timestamptz
);
create index app_token_reveals_token on platform.app_token_reveals (token_id);
create index app_token_reveals_expiry on platform.app_token_reveals (expires_at) where secret_enc is not null;

-- An agent without owner credentials asks for an app token; the owner approves in the
-- browser and sees the value there. The agent polls with a secret (stored hashed) and
-- learns only the token's id.
create table platform.app_token_requests (
  id uuid primary key default gen_random_uuid(),
  app_id uuid not null references platform.apps (id) on delete cascade,
  name text not null check (length(name) between 1 and 80),
  poll_hash bytea not null,
  requested_at timestamptz not null,
  expires_at timestamptz not null,
  approved_at timestamptz,
  approved_by uuid references platform.users (id) on delete set null,
  token_id uuid references platform.app_access_tokens (id) on delete set null
);
create index app_token_requests_expiry on platform.app_token_requests (expires_at);

-- `service login`: the CLI starts a login and polls; a confirmed person approves it in the
-- browser after checking the user code. The owner API token is minted when the CLI
-- collects it, so no token value is ever stored, not even encrypted.
create table platform.cli_logins (
  id uuid primary key default gen_random_uuid(),
  poll_hash bytea not null,
  user_code text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  approved_by uuid references platform.users (id) on delete cascade,
  approved_at timestamptz,
  collected_at timestamptz,
  token_id uuid references platform.owner_tokens (id) on delete set null
);
create index cli_logins_expiry on platform.cli_logins (expires_at);
