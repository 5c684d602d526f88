-- The broker's one read per operation call (issue 12, the 2 ms target): everything a call
-- checks, live, in one round trip whose plan PL/pgSQL caches per session (PGlite, which
-- prepares nothing, would otherwise plan a ten-table join at every call). Only facts: the
-- rules applied to them are identity's (usesIntegration, roleFrom) and the broker's
-- (bindings standingFrom), in TypeScript, once. Neither function is for app roles.

-- The facts both integration-audience checks read about one person and one provider app
-- (identity/access/integration-audience.ts reads them through this function too): no row
-- when the app or the person is gone.
create function platform.integration_audience_facts(p_app uuid, p_user uuid)
returns table (owner_id uuid, app_organisation uuid, user_organisation uuid, confirmed boolean, use_scope text,
               named_use boolean, named_administer boolean)
language sql stable
as $$
  select a.owner_id, a.organisation_id, u.organisation_id, u.email_confirmed_at is not null,
         coalesce((select ia.use_scope from platform.integration_audiences ia where ia.app_id = a.id), 'organisation'),
         exists (select 1 from platform.integration_audience_people p
                  where p.app_id = a.id and p.user_id = u.id and p.audience = 'use'),
         exists (select 1 from platform.integration_audience_people p
                  where p.app_id = a.id and p.user_id = u.id and p.audience = 'administer')
    from platform.apps a cross join platform.users u
   where a.id = p_app and u.id = p_user
$$;

-- One broker call's facts for the consumer app `p_app`, the integration its slot `p_slot`
-- uses and the person `p_user` (null: the app's binding), as one JSON object; null when the
-- app is gone. `provider` and `contract`: the contract an ACTIVE app of the consumer's
-- organisation publishes under the name; `binding`: the slot's live binding; `connection`
-- and `credentials` (sealed, as stored): its connection; `owner` and `owner_grant`: a
-- personal connection's owner and their stored grant on the consumer app; `creator`: the
-- binding creator's integration_audience_facts on the provider app.
create function platform.integration_call_facts(p_app uuid, p_integration text, p_slot text, p_user uuid)
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
        on b.consumer_app_id = a.id and b.slot = p_slot and b.status = 'active' and b.user_id is not distinct from p_user
      left join platform.connections c on c.id = b.connection_id
      left join platform.apps cpa on cpa.id = c.provider_app_id
      left join platform.users ou on ou.id = c.owner_id
      left join platform.app_grants og on og.app_id = a.id and og.user_id = ou.id
      left join platform.users cu on cu.id = b.created_by
      left join lateral platform.integration_audience_facts(pa.id, cu.id) f on true
     where a.id = p_app);
end
$$;

revoke execute on function platform.integration_audience_facts(uuid, uuid) from public;
revoke execute on function platform.integration_call_facts(uuid, text, text, uuid) from public;
