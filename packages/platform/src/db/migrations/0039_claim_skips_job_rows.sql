-- Jobs: a claim never waits for a job's row (a deadlock two claimers and a completion could
-- make on PostgreSQL).
--
-- A claim reads the queue's waiting jobs in its statement's snapshot, after locking the
-- queue's row. A claim by another process that committed after that snapshot but before the
-- lock may have taken some of those jobs, and its process may be recording their results
-- right now. The UPDATE of migration 0032 then waited for that uncommitted result on one
-- row, while holding another such row it had locked to re-check (PostgreSQL keeps that lock
-- even when the re-check drops the row); the result write, updating its rows in another
-- order, waited for it: "deadlock detected" (seen in CI: two claimers and producers over
-- five queues). Now the chosen rows are locked first with SKIP LOCKED, which re-checks each
-- against its newest version and passes over the rows another transaction holds: a claim
-- waits for no job row, no queue row and no mark, so it is never part of a lock cycle.
create or replace function platform.claim_jobs(p_now timestamptz, p_limit integer, p_owner text, p_lease_grace_seconds integer)
returns table (id uuid, app_id uuid, namespace_id uuid, kind text, queue text, payload jsonb, attempts integer,
               timeout_seconds integer, app_slug text, app_status text, app_release_id uuid)
language plpgsql volatile
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
declare
  r record;
  v_namespaces uuid[] := '{}';
  v_queues text[] := '{}';
begin
  for r in
    with due as materialized (
      -- As migration 0032: the due marks, oldest first, each queue's row locked (SKIP LOCKED).
      select m.namespace_id, m.queue, q.claimed - e.ended as running
        from platform.job_queue_marks m
       cross join lateral (
         select true as ok from platform.namespaces n join platform.apps a on a.id = n.app_id
          where n.id = m.namespace_id and a.status = 'active'
          limit 1) active
       cross join lateral (
         select j.concurrency from platform.jobs j
          where j.namespace_id = m.namespace_id and j.queue = m.queue
            and j.state in ('queued', 'retry_wait') and j.run_at <= p_now and active.ok
          order by j.run_at, j.id
          limit 1) next
       cross join lateral (
         select e.ended from platform.job_queue_ends e
          where e.namespace_id = m.namespace_id and e.queue = m.queue and next.concurrency is not null
          limit 1) e
       cross join lateral (
         select q.claimed from platform.job_queues q
          where q.namespace_id = m.namespace_id and q.queue = m.queue and e.ended is not null
          limit 1
          for update skip locked) q
       where m.next_run_at <= p_now
         and q.claimed - e.ended < next.concurrency
       order by m.next_run_at
       limit p_limit
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
    ), locked as materialized (
      -- The chosen rows that still wait in their newest version, locked; a row another
      -- transaction holds (its result being written) is passed over, never awaited.
      select j.id from platform.jobs j
       where j.id = any (array(select c.id from chosen c)) and j.state in ('queued', 'retry_wait') and j.run_at <= p_now
       for update of j skip locked
    ), claimed as (
      update platform.jobs j
         set state = 'running', attempts = j.attempts + 1, started_at = p_now, updated_at = p_now, lease_owner = p_owner,
             lease_expires_at = p_now + make_interval(secs => coalesce(j.timeout_seconds, 900) + p_lease_grace_seconds)
        from platform.apps a
       where j.id = any (array(select l.id from locked l)) and j.state in ('queued', 'retry_wait') and j.run_at <= p_now
         and a.id = j.app_id
       returning j.id, j.app_id, j.namespace_id, j.kind, j.queue, j.payload, j.attempts, j.timeout_seconds,
                 a.slug, a.status, a.active_release_id
    ), counted as (
      update platform.job_queues q set claimed = q.claimed + c.n
        from (select k.namespace_id, k.queue, count(*) as n from claimed k group by k.namespace_id, k.queue) c
       where q.namespace_id = c.namespace_id and q.queue = c.queue
    )
    select * from claimed
  loop
    id := r.id; app_id := r.app_id; namespace_id := r.namespace_id; kind := r.kind; queue := r.queue;
    payload := r.payload; attempts := r.attempts; timeout_seconds := r.timeout_seconds;
    app_slug := r.slug; app_status := r.status; app_release_id := r.active_release_id;
    return next;
    v_namespaces := v_namespaces || r.namespace_id;
    v_queues := v_queues || r.queue;
  end loop;
  if cardinality(v_namespaces) = 0 then
    return;
  end if;
  -- As migration 0032: the marks of the queues it took from, set to their next waiting job.
  with locked as (
    select m.namespace_id, m.queue, m.version
      from platform.job_queue_marks m
     where (m.namespace_id, m.queue) in (select k.namespace_id, k.queue from unnest(v_namespaces, v_queues) as k (namespace_id, queue))
     for update skip locked
  ), seen as (
    select l.namespace_id, l.queue, l.version,
           (select v.version from platform.job_queue_marks v where v.namespace_id = l.namespace_id and v.queue = l.queue) as seen_version,
           (select j.run_at from platform.jobs j
             where j.namespace_id = l.namespace_id and j.queue = l.queue and j.state in ('queued', 'retry_wait')
             order by j.run_at, j.id limit 1) as next
      from locked l
  )
  update platform.job_queue_marks m set next_run_at = s.next
    from seen s
   where m.namespace_id = s.namespace_id and m.queue = s.queue and s.version = s.seen_version
     and m.next_run_at is distinct from s.next;
end
$$;

revoke execute on function platform.claim_jobs(timestamptz, integer, text, integer) from public;
