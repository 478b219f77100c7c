-- A table whose row-level security reads the caller's claims the PostgREST way (issue 32 point 1):
-- each document is its owner's, the owner being the token's `sub`. Only claims_reader may read it
-- (the demo teams' catalogs stay as they are); a query can never make the policy read other claims
-- than the token's.
do $$
begin
  if not exists (select from pg_roles where rolname = 'claims_reader') then
    create role claims_reader nologin;
  end if;
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant claims_reader to pgmcp_authenticator;
  end if;
end $$;
create schema if not exists secclaims;
create table if not exists secclaims.docs (owner text primary key, body text not null);
insert into secclaims.docs values
  ('alice', 'alice''s draft'),
  ('bob', 'bob''s salary review')
on conflict (owner) do nothing;
alter table secclaims.docs enable row level security;
drop policy if exists docs_owner on secclaims.docs;
create policy docs_owner on secclaims.docs for select
  using (owner = current_setting('request.jwt.claims', true)::json->>'sub');
grant usage on schema secclaims to claims_reader;
grant select on secclaims.docs to claims_reader;
