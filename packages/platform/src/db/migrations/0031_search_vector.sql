-- Search (issue 16): pgvector in the shared `extensions` schema where the server has it
-- (PGlite bundles it; a PostgreSQL without the package keeps the exact real[] path only).
do $$
begin
  if exists (select 1 from pg_available_extensions where name = 'vector') then
    begin
      create extension if not exists vector schema extensions;
    exception when insufficient_privilege or feature_not_supported then
      raise notice 'pgvector is available but could not be created: %', sqlerrm;
    end;
  end if;
end $$;
