-- Web push notifications (issue 17, spec 2.10 notifications): the platform's VAPID key pair,
-- the browsers' push subscriptions and the durable deliveries of `ctx.notifications.send`.

-- One key pair for the whole platform, made on first start (push/vapid-keys.ts). The private
-- key is sealed with the master key (lib/encryption.ts, purpose `push-vapid-private-key`);
-- the public key is what every app origin hands browsers as applicationServerKey. Two
-- processes starting together insert at most one row (the single-row key).
create table platform.push_vapid_keys (
  singleton boolean primary key default true check (singleton),
  -- The uncompressed P-256 point (65 bytes), base64url.
  public_key text not null check (length(public_key) = 87),
  private_key_sealed text not null,
  created_at timestamptz not null
);

-- A browser's subscription (PushSubscription.toJSON()) for one person in one app namespace.
-- An endpoint belongs to one person per namespace: the same browser subscribing again as
-- someone else moves it. At most PUSH_MAX_SUBSCRIPTIONS_PER_USER per person and namespace
-- (the oldest goes first).
create table platform.push_subscriptions (
  id uuid primary key,
  app_id uuid not null references platform.apps (id) on delete cascade,
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  user_id uuid not null references platform.users (id) on delete cascade,
  endpoint text not null check (length(endpoint) between 9 and 2048),
  -- The browser's P-256 public key (65 bytes) and auth secret (16 bytes), base64url.
  p256dh text not null check (length(p256dh) = 87),
  auth text not null check (length(auth) = 22),
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (namespace_id, endpoint)
);
create index push_subscriptions_user on platform.push_subscriptions (namespace_id, user_id, created_at);

-- One delivery per (notification, subscription), claimed by any platform process with
-- FOR UPDATE SKIP LOCKED (push/delivery-worker.ts), like integration event deliveries.
-- subscription_id is a plain id: a delivery record outlives a subscription removed after a
-- 404 or 410, and is kept 14 days after it ends.
create table platform.push_deliveries (
  id uuid primary key,
  notification_id uuid not null,
  app_id uuid not null references platform.apps (id) on delete cascade,
  namespace_id uuid not null references platform.namespaces (id) on delete cascade,
  subscription_id uuid not null,
  -- The JSON the service worker receives (id, title, body, url?, tag?); null once the delivery ends.
  payload jsonb,
  state text not null check (state in ('waiting', 'running', 'delivered', 'failed')),
  attempts integer not null default 0,
  -- The latest failure: { code, message, status? }, bounded; never the payload.
  last_error jsonb,
  run_at timestamptz not null,
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  finished_at timestamptz
);
-- Due work, in order.
create index push_deliveries_due on platform.push_deliveries (run_at, id) where state = 'waiting';
-- Expired leases.
create index push_deliveries_leases on platform.push_deliveries (lease_expires_at) where state = 'running';
-- The namespace's pending deliveries (the bound on them).
create index push_deliveries_pending on platform.push_deliveries (namespace_id) where state in ('waiting', 'running');
-- Retention by end time.
create index push_deliveries_finished on platform.push_deliveries (finished_at) where state in ('delivered', 'failed');
-- A notification's deliveries (tests, inspection).
create index push_deliveries_notification on platform.push_deliveries (notification_id);
