-- The development mailbox: outbound email the platform keeps instead of sending when no
-- SMTP server is configured, readable at {base_url}/_dev/mail outside production mode.
-- `seq` orders messages stored within the same clock instant (tests often freeze time),
-- so "the newest message" is always well defined.

create table platform.dev_mail (
  id uuid primary key default gen_random_uuid(),
  seq bigint generated always as identity,
  to_address text not null,
  from_address text not null,
  subject text not null,
  text_body text not null,
  html_body text,
  created_at timestamptz not null default now()
);
create index dev_mail_created_at on platform.dev_mail (created_at desc, seq desc);
