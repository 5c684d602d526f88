-- A slot's live binding is found through one index whatever the slot's account (issue 12):
-- the app's binding has no person (user_id null), a `calling_user` binding has one. The two
-- partial unique indexes of 0018 could not serve `user_id is not distinct from $3` (a
-- parameter proves neither `user_id is null` nor `is not null`), so every lookup scanned the
-- table. One unique index on the person with null folded to the nil UUID serves both kinds
-- with an equality, also in PL/pgSQL's generic plans, and keeps "one live binding per slot
-- and person" as before (no person has the nil UUID as id).
create unique index integration_bindings_live_slot on platform.integration_bindings
  (consumer_app_id, slot, coalesce(user_id, '00000000-0000-0000-0000-000000000000'::uuid))
  where status = 'active';
drop index platform.integration_bindings_app_slot;
drop index platform.integration_bindings_person_slot;

create or replace function platform.integration_call_facts(p_app uuid, p_integration text, p_slot text, p_user uuid)
returns json
language plpgsql stable
as $$
begin
  return (
    select json_build_object(
      'consumer', to_json(a),
      'provider', case when pa.id is null then null else to_json(pa) end,
      'contract', pc.contract,
      'binding', case when b.id is null then null else to_json(b) end,
      'connection', case when c.id is null then null else json_build_object(
        'id', c.id, 'organisation_id', c.organisation_id, 'provider_app_id', c.provider_app_id, 'provider_app_slug', cpa.slug,
        'integration_name', c.integration_name, 'kind', c.kind, 'owner_id', c.owner_id, 'created_by', c.created_by,
        'label', c.label, 'status', c.status, 'status_reason', c.status_reason, 'status_changed_at', c.status_changed_at,
        'created_at', c.created_at, 'updated_at', c.updated_at) end,
      'credentials', (select coalesce(json_agg(x order by x.name), '[]'::json)
                        from (select cc.name, cc.secret, cc.value_encrypted, cc.key_id from platform.connection_credentials cc
                               where cc.connection_id = c.id order by cc.name limit 100) x),
      'owner', case when ou.id is null then null
                    else json_build_object('id', ou.id, 'organisation_id', ou.organisation_id, 'email_confirmed_at', ou.email_confirmed_at) end,
      'owner_grant', og.role,
      'creator', case when f.owner_id is null then null else to_json(f) end)
      from platform.apps a
      left join (platform.integration_contracts pc join platform.apps pa on pa.id = pc.app_id and pa.status = 'active')
        on pc.organisation_id = a.organisation_id and pc.name = p_integration
      left join platform.integration_bindings b
        on b.consumer_app_id = a.id and b.slot = p_slot and b.status = 'active'
       and coalesce(b.user_id, '00000000-0000-0000-0000-000000000000'::uuid) = coalesce(p_user, '00000000-0000-0000-0000-000000000000'::uuid)
      left join platform.connections c on c.id = b.connection_id
      left join platform.apps cpa on cpa.id = c.provider_app_id
      left join platform.users ou on ou.id = c.owner_id
      left join platform.app_grants og on og.app_id = a.id and og.user_id = ou.id
      left join platform.users cu on cu.id = b.created_by
      left join lateral platform.integration_audience_facts(pa.id, cu.id) f on true
     where a.id = p_app);
end
$$;

revoke execute on function platform.integration_call_facts(uuid, text, text, uuid) from public;
