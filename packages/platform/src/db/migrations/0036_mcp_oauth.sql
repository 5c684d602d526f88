-- MCP OAuth 2.1 (issue 18): the platform is the authorization server of its own MCP server.
-- Clients register themselves (RFC 7591, public clients: PKCE S256, no secret); a person
-- approves one on the central sign-in, which yields a one-time code; the code becomes a grant
-- (the person, the client, and the scope: the whole account, or one app) with an access token
-- and a rotating refresh token. Only SHA-256 hashes of codes and tokens are stored.

create table platform.mcp_oauth_clients (
  id uuid primary key default gen_random_uuid(),
  client_name text not null check (length(client_name) between 1 and 200),
  redirect_uris text[] not null check (cardinality(redirect_uris) between 1 and 10),
  created_at timestamptz not null
);

-- One approval: revoking it (reuse of a code or of a rotated refresh token, or revocation)
-- ends every token issued under it.
create table platform.mcp_oauth_grants (
  id uuid primary key default gen_random_uuid(),
  client_id uuid not null references platform.mcp_oauth_clients (id) on delete cascade,
  user_id uuid not null references platform.users (id) on delete cascade,
  -- Null: the person's whole account (full surface); otherwise one app (focused builder surface).
  app_id uuid references platform.apps (id) on delete cascade,
  scope text not null,
  created_at timestamptz not null,
  revoked_at timestamptz
);
create index mcp_oauth_grants_user on platform.mcp_oauth_grants (user_id);

create table platform.mcp_oauth_codes (
  code_hash bytea primary key,
  client_id uuid not null references platform.mcp_oauth_clients (id) on delete cascade,
  user_id uuid not null references platform.users (id) on delete cascade,
  app_id uuid references platform.apps (id) on delete cascade,
  scope text not null,
  redirect_uri text not null,
  code_challenge text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  -- The grant the code was exchanged for: a second use revokes it (RFC 6749, section 4.1.2).
  grant_id uuid references platform.mcp_oauth_grants (id) on delete cascade
);
create index mcp_oauth_codes_expiry on platform.mcp_oauth_codes (expires_at);

create table platform.mcp_oauth_tokens (
  token_hash bytea primary key,
  grant_id uuid not null references platform.mcp_oauth_grants (id) on delete cascade,
  kind text not null check (kind in ('access', 'refresh')),
  created_at timestamptz not null,
  expires_at timestamptz not null,
  -- A refresh token is used once; presenting it again revokes its grant.
  used_at timestamptz
);
create index mcp_oauth_tokens_grant on platform.mcp_oauth_tokens (grant_id);
create index mcp_oauth_tokens_expiry on platform.mcp_oauth_tokens (expires_at);
