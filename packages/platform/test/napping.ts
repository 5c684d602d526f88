/**
 * A migration fragment for tests of slow statements: `naps` holds seconds and `napping()`
 * sleeps their sum (the owner's function, so a caller's row-level security policy
 * `using (napping())` can call it). 30 s to start, far past a test's statement timeout;
 * delete from `naps` and the same statement is fast again.
 *
 * @example
 * const MIGRATION = `${NAPPING}
 * create table notes (id integer primary key);
 * alter table notes enable row level security;
 * create policy notes_read on notes for select using (napping());`
 */
export const NAPPING = `create table naps (seconds integer not null);
insert into naps values (30);
create function napping() returns boolean language sql volatile security definer as $$
  select pg_catalog.pg_sleep(coalesce((select sum(seconds) from naps), 0)); select true
$$;`
