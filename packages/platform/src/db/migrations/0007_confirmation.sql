-- Unconfirmed accounts and agent onboarding: why an app is paused (so confirming resumes
-- exactly the apps the deadline paused), onboarding as a purpose of email requests, and
-- retained project requests.
alter table platform.apps add column paused_reason text;

alter table platform.sign_in_requests drop constraint sign_in_requests_purpose_check;
alter table platform.sign_in_requests add constraint sign_in_requests_purpose_check
  check (purpose in ('sign_in', 'confirm_email', 'onboarding'));

create table platform.onboarding_requests (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references platform.users (id) on delete cascade,
  project_name text not null,
  status text not null check (status in ('awaiting_confirmation', 'organisation_setup_required', 'ready')),
  poll_hash bytea not null unique,
  credential_collected_at timestamptz,
  created_at timestamptz not null,
  confirmed_at timestamptz
);

create table platform.invitations (
  id uuid primary key default gen_random_uuid(),
  organisation_id uuid not null references platform.organisations (id) on delete cascade,
  email text not null,
  invited_by uuid not null references platform.users (id),
  key_hash bytea not null unique,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  accepted_at timestamptz
);

-- A person without a company yet (just registered) can still create personal apps.
alter table platform.apps alter column organisation_id drop not null;
