-- OAuth 2.0 connections (spec 2.6 `authorization`, 4.4, 5.6).
--
-- oauth_flows: one row per authorization request in progress, from the connect form to the
-- callback. Found by the SHA-256 of its `state` (the state itself is never stored), bound to
-- the browser that started it (the SHA-256 of a secret in an HttpOnly cookie on {auth_url}),
-- to the person, and to the connection it creates or reconnects. The PKCE verifier and the
-- credential values entered before signing in are sealed like connection credentials. A row
-- is deleted when its callback arrives (one-time) or when it has expired.
create table platform.oauth_flows (
  state_hash text primary key,
  browser_hash text not null,
  user_id uuid not null references platform.users (id) on delete cascade,
  provider_app_id uuid not null references platform.apps (id) on delete cascade,
  integration_name text not null,
  -- The connection made at the callback (a new id), or the one reconnected.
  connection_id uuid not null,
  reconnect boolean not null,
  kind text not null check (kind in ('personal', 'organisation')),
  label text not null,
  -- Sealed JSON { codeVerifier: string | null, values: { NAME: value } }.
  sealed text not null,
  key_id text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null
);
create index oauth_flows_expiry on platform.oauth_flows (expires_at);

-- The tokens of an OAuth connection, write-only: sealed under the connection keyring (key id
-- beside them; connection id and token kind bound as associated data). `refresh_claim` is
-- the lease one platform process takes to refresh the token: at most one refresh per
-- connection at a time across every process (integrations/oauth/access-tokens.ts).
create table platform.connection_oauth_tokens (
  connection_id uuid primary key references platform.connections (id) on delete cascade,
  access_token_encrypted text not null,
  refresh_token_encrypted text,
  key_id text not null,
  -- When the access token expires; null when the provider did not say (never refreshed early).
  expires_at timestamptz,
  refresh_claim uuid,
  refresh_claimed_until timestamptz,
  updated_at timestamptz not null
);
