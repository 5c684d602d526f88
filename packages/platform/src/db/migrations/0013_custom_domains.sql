-- Custom domains (spec 5.5): a host name outside the base domain that serves one app exactly
-- as its `<slug>.<base domain>` origin does. A platform administrator maps them (the operator
-- holds the DNS and the TLS certificate); the host names are lowercase, without a trailing
-- dot, and belong to at most one app on the platform.
create table platform.custom_domains (
  domain text primary key check (domain = lower(domain) and length(domain) between 4 and 253 and domain !~ '\.$'),
  app_id uuid not null references platform.apps (id) on delete cascade,
  created_at timestamptz not null,
  created_by uuid references platform.users (id) on delete set null
);
create index custom_domains_app on platform.custom_domains (app_id, domain);

-- The custom domain an app session was brokered on (null: the app's own origin). A Function
-- invoked with such a session keeps a data authorization of at most 60 seconds; unmapping
-- the domain ends its sessions.
alter table platform.app_sessions add column custom_domain text;
create index app_sessions_custom_domain on platform.app_sessions (custom_domain) where custom_domain is not null;
