-- Running attempts per queue as two counters (issue 14), so a claim is ONE statement instead
-- of a transaction of two (lock the queue rows, then count their running jobs in a later
-- snapshot).
--
-- `job_queues.claimed` counts attempts ever claimed from the queue; only a claim changes it,
-- while it holds the row FOR UPDATE, so the value a claim reads through its lock is the
-- latest committed one (READ COMMITTED re-reads a locked row that changed after the
-- statement's snapshot). `job_queue_ends.ended` counts attempts that stopped running
-- (succeeded, failed, released, expired): every statement that moves a job out of `running`
-- adds to it in the same statement. It lives in its own row so that ending an attempt never
-- takes the lock claimers skip. A claim reads `ended` from its snapshot, which can only be
-- behind: `claimed - ended` is then at least the true number running, never less, so
-- processes together never exceed a queue's concurrency.
alter table platform.job_queues add column claimed bigint not null default 0;

create table platform.job_queue_ends (
  namespace_id uuid not null,
  queue text not null,
  ended bigint not null default 0,
  primary key (namespace_id, queue),
  foreign key (namespace_id, queue) references platform.job_queues (namespace_id, queue) on delete cascade
);

update platform.job_queues q
   set claimed = (select count(*) from platform.jobs j
                   where j.namespace_id = q.namespace_id and j.queue = q.queue and j.state = 'running');

insert into platform.job_queue_ends (namespace_id, queue) select namespace_id, queue from platform.job_queues;

-- Counting running rows per queue is no longer needed for claims (expired leases keep
-- jobs_leases), and nothing reads due work across all queues any more (claims go queue by
-- queue through jobs_pending): two fewer indexes to write on every enqueue, claim and end.
drop index platform.jobs_running;
drop index platform.jobs_due;

-- The three statements every job goes through (enqueue, claim, success) as PL/pgSQL
-- functions: each is one statement, as before, but its plan is kept per connection. Sent
-- as text, each was planned on every call, and planning took most of the time (the claim:
-- about 0.9 ms to plan, 0.1 ms to run). Named prepared statements are not an option on the
-- pool where app SQL runs (docs/decisions.md). jobs/queries.ts documents each.

-- Enqueue: the job with this key, or one more active job counted (unless the namespace has
-- `p_limit`), the queue recorded, the job inserted, and the dispatchers woken at commit
-- when it is due now.
create function platform.enqueue_job(
  p_app_id uuid, p_namespace_id uuid, p_kind text, p_queue text, p_payload jsonb, p_payload_sha256 text,
  p_idempotency_key text, p_enqueued_by uuid, p_concurrency integer, p_max_attempts integer,
  p_retry_delay_seconds integer, p_retry_backoff boolean, p_timeout_seconds integer, p_run_at timestamptz,
  p_now timestamptz, p_limit integer)
returns table (existing jsonb, inserted jsonb, counted boolean)
language plpgsql volatile
as $$
#variable_conflict use_column
begin
  return query
  with existing as (
    select j.id, j.app_id, j.namespace_id, j.kind, j.queue, j.state, j.payload_sha256, j.attempts, j.max_attempts,
           j.concurrency, j.run_at, j.last_error, j.created_at, j.updated_at, j.started_at, j.finished_at
      from platform.jobs j
     where j.namespace_id = p_namespace_id and j.queue = p_queue and j.idempotency_key = p_idempotency_key
  ), counted as (
    insert into platform.job_namespaces as n (namespace_id, active)
    select p_namespace_id, 1 where not exists (select 1 from existing)
    on conflict (namespace_id) do update set active = n.active + 1 where p_limit is null or n.active < p_limit
    returning 1
  ), queue_row as (
    insert into platform.job_queues (namespace_id, queue) select p_namespace_id, p_queue where exists (select 1 from counted)
    on conflict do nothing
    returning 1
  ), queue_ends_row as (
    insert into platform.job_queue_ends (namespace_id, queue) select p_namespace_id, p_queue where exists (select 1 from queue_row)
  ), inserted as (
    insert into platform.jobs as j (app_id, namespace_id, kind, queue, state, payload, payload_sha256, idempotency_key,
      enqueued_by, concurrency, max_attempts, retry_delay_seconds, retry_backoff, timeout_seconds, run_at, created_at, updated_at)
    select p_app_id, p_namespace_id, p_kind, p_queue, 'queued', p_payload, p_payload_sha256, p_idempotency_key,
           p_enqueued_by, p_concurrency, p_max_attempts, p_retry_delay_seconds, p_retry_backoff, p_timeout_seconds, p_run_at, p_now, p_now
     where exists (select 1 from counted)
    on conflict (namespace_id, queue, idempotency_key) do nothing
    returning j.id, j.app_id, j.namespace_id, j.kind, j.queue, j.state, j.payload_sha256, j.attempts, j.max_attempts,
              j.concurrency, j.run_at, j.last_error, j.created_at, j.updated_at, j.started_at, j.finished_at
  ), notified as (
    select pg_notify('platform_jobs', '') from inserted i where i.run_at <= p_now
  )
  select (select to_jsonb(e) from existing e),
         (select to_jsonb(i) from inserted i),
         exists (select 1 from counted)
   where (select count(*) from notified) >= 0;  -- a plain CTE runs only when read
end
$$;

-- Claim: up to `p_limit` due jobs of queues with room, one statement (see the counters above).
create function platform.claim_jobs(p_now timestamptz, p_limit integer, p_owner text, p_lease_grace_seconds integer)
returns table (id uuid, app_id uuid, namespace_id uuid, kind text, queue text, payload jsonb, attempts integer,
               timeout_seconds integer, app_slug text, app_status text, app_release_id uuid)
language plpgsql volatile
as $$
#variable_conflict use_column
begin
  return query
  with due as materialized (
    -- The lateral probe (one index step per queue, never flattened into a join over every
    -- due job) finds the queue's next due job, whose pinned concurrency decides its room.
    select q.namespace_id, q.queue, q.claimed - e.ended as running
      from platform.job_queues q
      join platform.job_queue_ends e on e.namespace_id = q.namespace_id and e.queue = q.queue
     cross join lateral (
       select j.concurrency from platform.jobs j
        where j.namespace_id = q.namespace_id and j.queue = q.queue
          and j.state in ('queued', 'retry_wait') and j.run_at <= p_now
        order by j.run_at, j.id
        limit 1) next
     where exists (select 1 from platform.namespaces n join platform.apps a on a.id = n.app_id
                    where n.id = q.namespace_id and a.status = 'active')
       and q.claimed - e.ended < next.concurrency
     order by random()
     limit p_limit
     for update of q skip locked
  ), candidates as (
    select j.id, j.concurrency, d.running,
           row_number() over (partition by d.namespace_id, d.queue order by j.run_at, j.id) as n
      from due d
     cross join lateral (
       select j.id, j.concurrency, j.run_at from platform.jobs j
        where j.namespace_id = d.namespace_id and j.queue = d.queue
          and j.state in ('queued', 'retry_wait') and j.run_at <= p_now
        order by j.run_at, j.id
        limit least(p_limit, 100)) j
  ), chosen as (
    select c.id from candidates c where c.running + c.n <= c.concurrency order by c.n, c.id limit p_limit
  ), claimed as (
    -- Checked again here: the snapshot may predate a claim that committed before this
    -- statement took the queue's lock; a job another process took is skipped.
    update platform.jobs j
       set state = 'running', attempts = j.attempts + 1, started_at = p_now, updated_at = p_now, lease_owner = p_owner,
           lease_expires_at = p_now + make_interval(secs => coalesce(j.timeout_seconds, 900) + p_lease_grace_seconds)
      from platform.apps a
     where j.id = any (array(select c.id from chosen c)) and j.state in ('queued', 'retry_wait') and j.run_at <= p_now
       and a.id = j.app_id
     returning j.id, j.app_id, j.namespace_id, j.kind, j.queue, j.payload, j.attempts, j.timeout_seconds,
               a.slug, a.status, a.active_release_id
  ), counted as (
    update platform.job_queues q set claimed = q.claimed + c.n
      from (select k.namespace_id, k.queue, count(*) as n from claimed k group by k.namespace_id, k.queue) c
     where q.namespace_id = c.namespace_id and q.queue = c.queue
  )
  select * from claimed;
end
$$;

-- Success: these attempts (each still its job's current one) end `succeeded`, with the
-- namespaces' active counters and the queues' ended counters moved in the same statement.
create function platform.complete_jobs(p_ids uuid[], p_attempts integer[], p_now timestamptz)
returns setof uuid
language plpgsql volatile
as $$
begin
  return query
  with done as (
    update platform.jobs j set state = 'succeeded', payload = null, finished_at = p_now, updated_at = p_now,
           lease_owner = null, lease_expires_at = null
      from unnest(p_ids, p_attempts) as d (id, attempt)
     where j.id = any (p_ids) and j.id = d.id and j.state = 'running' and j.attempts = d.attempt
     returning j.id, j.namespace_id, j.queue
  ), ended as (
    update platform.job_queue_ends e set ended = e.ended + c.n
      from (select d.namespace_id, d.queue, count(*) as n from done d group by d.namespace_id, d.queue) c
     where e.namespace_id = c.namespace_id and e.queue = c.queue
  ), counted as (
    update platform.job_namespaces n set active = n.active - c.ended
      from (select d.namespace_id, count(*)::int as ended from done d group by d.namespace_id) c
     where n.namespace_id = c.namespace_id
  )
  select d.id from done d;
end
$$;

-- Success and the next claim in one round trip: the dispatcher records a batch of successes
-- and, in the same call, claims up to `p_limit` jobs for the slots they free (0: none). Two
-- statements, one transaction: the claim's snapshot sees the successes.
create function platform.complete_and_claim_jobs(p_ids uuid[], p_attempts integer[], p_now timestamptz,
  p_limit integer, p_owner text, p_lease_grace_seconds integer)
returns table (id uuid, app_id uuid, namespace_id uuid, kind text, queue text, payload jsonb, attempts integer,
               timeout_seconds integer, app_slug text, app_status text, app_release_id uuid)
language plpgsql volatile
as $$
begin
  perform from platform.complete_jobs(p_ids, p_attempts, p_now);
  if p_limit > 0 then
    return query select * from platform.claim_jobs(p_now, p_limit, p_owner, p_lease_grace_seconds);
  end if;
end
$$;

revoke execute on function platform.enqueue_job(uuid, uuid, text, text, jsonb, text, text, uuid, integer, integer, integer, boolean, integer, timestamptz, timestamptz, integer) from public;
revoke execute on function platform.claim_jobs(timestamptz, integer, text, integer) from public;
revoke execute on function platform.complete_jobs(uuid[], integer[], timestamptz) from public;
revoke execute on function platform.complete_and_claim_jobs(uuid[], integer[], timestamptz, integer, text, integer) from public;
