-- Identity: password verifiers, unconfirmed accounts, email sign-in requests, central and
-- app (brokered) browser sessions with rotating refresh tokens, authorization codes that
-- carry a central session to an app origin, and grants to private apps.

-- An account may exist before it belongs to a company (company setup comes after sign-in).
alter table platform.users alter column organisation_id drop not null;
alter table platform.users add column password_hash text;
alter table platform.users add column confirmation_deadline timestamptz;
alter table platform.users add column paused_at timestamptz;

-- One email sign-in or confirmation: a link secret (emailed), a claim secret (the
-- initiating browser's cookie) and a preview secret (the cookie the review page sets).
create table platform.sign_in_requests (
  id uuid primary key default gen_random_uuid(),
  purpose text not null check (purpose in ('sign_in', 'confirm_email')),
  email text not null,
  user_id uuid references platform.users (id) on delete cascade,
  link_hash bytea not null unique,
  claim_hash bytea,
  preview_hash bytea,
  continue_to text,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  approved_at timestamptz,
  claimed_at timestamptz
);
create index sign_in_requests_expiry on platform.sign_in_requests (expires_at);

create table platform.sessions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references platform.users (id) on delete cascade,
  secret_hash bytea not null unique,
  provisional boolean not null default false,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  revoked_reason text,
  user_agent text
);
create index sessions_user on platform.sessions (user_id) where revoked_at is null;

-- A brokered session of one app origin, hanging off the central session that created it.
create table platform.app_sessions (
  id uuid primary key default gen_random_uuid(),
  session_id uuid not null references platform.sessions (id) on delete cascade,
  app_id uuid not null references platform.apps (id) on delete cascade,
  user_id uuid not null references platform.users (id) on delete cascade,
  secret_hash bytea not null unique,
  -- The current refresh token, encrypted with the master key (the broker presents it).
  refresh_token_enc text not null,
  access_expires_at timestamptz not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index app_sessions_session on platform.app_sessions (session_id);

-- Refresh tokens of the central auth: each refresh rotates; presenting a rotated one
-- revokes the whole session.
create table platform.refresh_tokens (
  id uuid primary key default gen_random_uuid(),
  session_id uuid not null references platform.sessions (id) on delete cascade,
  token_hash bytea not null unique,
  created_at timestamptz not null,
  rotated_at timestamptz
);
create index refresh_tokens_session on platform.refresh_tokens (session_id);

create table platform.authorization_codes (
  code_hash bytea primary key,
  session_id uuid not null references platform.sessions (id) on delete cascade,
  app_id uuid not null references platform.apps (id) on delete cascade,
  return_to text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz
);

create table platform.app_grants (
  app_id uuid not null references platform.apps (id) on delete cascade,
  user_id uuid not null references platform.users (id) on delete cascade,
  granted_by uuid references platform.users (id),
  created_at timestamptz not null default now(),
  primary key (app_id, user_id)
);
