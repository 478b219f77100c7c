-- A table whose row-level security reads the caller's claims the PostgREST way (issue 32 point 1):
-- each document is its owner's, the owner being the token's `sub`. support may read it; a query
-- can never make the policy read other claims than the token's.
create schema secclaims;
create table secclaims.docs (owner text not null, body text not null);
insert into secclaims.docs values
  ('alice', 'alice''s draft'),
  ('bob', 'bob''s salary review');
alter table secclaims.docs enable row level security;
create policy docs_owner on secclaims.docs for select
  using (owner = current_setting('request.jwt.claims', true)::json->>'sub');
grant usage on schema secclaims to support;
grant select on secclaims.docs to support;
