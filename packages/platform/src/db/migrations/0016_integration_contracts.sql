-- Published integration contracts (spec 2.6): the `provides.integration` block of a provider
-- app's active production release, one row per app, unique by name inside the organisation.
-- The unique index is what makes publishing race-safe: of two deploys that publish the same
-- name at once, the second waits for the first and then finds the name taken.
-- `contract` is the validated block as the manifest validator gives it (declarations only:
-- a manifest never holds a credential or secret value).
create table platform.integration_contracts (
  app_id uuid primary key references platform.apps (id) on delete cascade,
  organisation_id uuid not null references platform.organisations (id) on delete cascade,
  name text not null,
  release_id uuid not null references platform.releases (id) on delete cascade,
  contract jsonb not null,
  published_at timestamptz not null
);

create unique index integration_contracts_organisation_name
  on platform.integration_contracts (organisation_id, name);

-- Releases activated before this migration publish what they declare. Two apps of one
-- organisation could not both have deployed the same name (validation refused it), but
-- should they have, the first row wins and the other publishes again on its next deploy.
insert into platform.integration_contracts (app_id, organisation_id, name, release_id, contract, published_at)
select a.id, a.organisation_id, r.manifest -> 'provides' -> 'integration' ->> 'name', r.id,
       r.manifest -> 'provides' -> 'integration', r.activated_at
  from platform.apps a
  join platform.releases r on r.id = a.active_release_id
 where a.organisation_id is not null
   and r.manifest -> 'provides' -> 'integration' is not null
 order by r.activated_at
on conflict do nothing;
