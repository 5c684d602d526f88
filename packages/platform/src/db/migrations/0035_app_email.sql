-- App email (issue 17; spec 2.10 `email`, 6.4). Two queues in PostgreSQL, each claimed by any
-- platform process with FOR UPDATE SKIP LOCKED under a lease, like integration event
-- deliveries (email/delivery-worker.ts, email/inbound-worker.ts; docs/decisions.md "Email").
--
-- email_outbox: one row per `ctx.email.send`, committed before `send` returns its id. The
-- worker delivers it over SMTP (or into the development mailbox) and keeps the outcome; the
-- bodies are discarded once it ends (sent or failed), the row is kept 14 days.
create table platform.email_outbox (
  id uuid primary key,
  app_id uuid not null references platform.apps (id) on delete cascade,
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  from_address text not null,
  recipients text[] not null check (cardinality(recipients) >= 1),
  reply_to text,
  subject text not null,
  -- Discarded (null) once the message is sent or failed.
  text_body text,
  html_body text,
  -- The Message-ID header, fixed at acceptance: a message sent again after a crash between the
  -- server's 250 and our commit carries the same one, so receivers can tell.
  message_id text not null,
  state text not null check (state in ('queued', 'sending', 'sent', 'failed')),
  -- Attempts started (raised in the claiming statement).
  attempts integer not null default 0,
  -- The latest failure: { code, message, smtpCode? }, bounded.
  last_error jsonb,
  -- Recipients the server refused while it took the message for the others.
  rejected text[],
  run_at timestamptz not null,
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  sent_at timestamptz,
  finished_at timestamptz
);
create index email_outbox_due on platform.email_outbox (run_at, id) where state = 'queued';
create index email_outbox_leases on platform.email_outbox (lease_expires_at) where state = 'sending';
create index email_outbox_app on platform.email_outbox (app_id, created_at desc, id desc);
create index email_outbox_finished on platform.email_outbox (finished_at) where state in ('sent', 'failed');

-- email_inbox: one row per (received message, app), committed before the SMTP listener answers
-- 250. The worker turns the raw message into the inbound event (attachments stored as the
-- app's managed files once; the event is kept so a retry sees the same files) and invokes the
-- app's email.inbound.function. The raw message and the event are discarded once it ends.
create table platform.email_inbox (
  id uuid primary key,
  app_id uuid not null references platform.apps (id) on delete cascade,
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  -- SMTP MAIL FROM ('' for a bounce) and the app's RCPT TO addresses.
  mail_from text not null,
  recipients text[] not null check (cardinality(recipients) >= 1),
  size integer not null,
  raw bytea,
  event jsonb,
  state text not null check (state in ('waiting', 'running', 'done', 'failed')),
  attempts integer not null default 0,
  last_error jsonb,
  run_at timestamptz not null,
  lease_owner text,
  lease_expires_at timestamptz,
  received_at timestamptz not null,
  updated_at timestamptz not null,
  finished_at timestamptz
);
create index email_inbox_due on platform.email_inbox (run_at, id) where state = 'waiting';
create index email_inbox_leases on platform.email_inbox (lease_expires_at) where state = 'running';
create index email_inbox_app on platform.email_inbox (app_id, received_at desc, id desc);
create index email_inbox_finished on platform.email_inbox (finished_at) where state in ('done', 'failed');

-- Recipients sent to per app and clock hour (EMAIL_RECIPIENTS_PER_HOUR), one row per window,
-- taken by one conditional upsert so concurrent sends never pass the limit together.
create table platform.email_send_windows (
  app_id uuid not null references platform.apps (id) on delete cascade,
  window_start timestamptz not null,
  recipients integer not null,
  primary key (app_id, window_start)
);
create index email_send_windows_start on platform.email_send_windows (window_start);
