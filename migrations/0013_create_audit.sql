-- The audit trail (issues 15 and 17): one row per `query` or `explain` tool call, and per consent
-- asked for, given or declined before sensitive data is read. Only the operator reads it: request
-- roles have no grant, RLS is on with no policy, and the server's login writes rows only through
-- pgmcp.write_audit, outside the request's own transaction, so a call that failed is recorded too.
create table pgmcp.audit (
  id bigint generated always as identity primary key,
  at timestamptz not null default now(),
  -- the request's role (null: the login itself) and the token's subject when there was one
  role text,
  subject text,
  -- what was done: 'query', 'explain', 'consent-asked', 'consent-given', 'consent-declined', …
  action text not null,
  -- the statement text or the URI read
  target text not null,
  parameter_count integer,
  row_count bigint,
  duration_ms double precision,
  -- the PostgreSQL error's SQLSTATE when the call failed
  sqlstate text,
  -- the reason a person gave (consent), free text
  reason text,
  detail jsonb
);
create index audit_at on pgmcp.audit (at);
alter table pgmcp.audit enable row level security;
revoke all on pgmcp.audit from public;
comment on table pgmcp.audit is 'Tool calls and consents (pgmcp); pruned after PGMCP_AUDIT_RETENTION_SECONDS.';

create function pgmcp.write_audit(
  p_role text, p_subject text, p_action text, p_target text, p_parameter_count integer,
  p_row_count bigint, p_duration_ms double precision, p_sqlstate text, p_reason text, p_detail jsonb
) returns void
language sql volatile security definer set search_path = pg_catalog, pgmcp as $$
  insert into pgmcp.audit (role, subject, action, target, parameter_count, row_count, duration_ms,
                           sqlstate, reason, detail)
  values (p_role, p_subject, p_action, p_target, p_parameter_count, p_row_count, p_duration_ms,
          p_sqlstate, p_reason, p_detail)
$$;

-- Delete rows older than the retention period; returns how many.
create function pgmcp.prune_audit(retention interval) returns bigint
language sql volatile security definer set search_path = pg_catalog, pgmcp as $$
  with pruned as (delete from pgmcp.audit where at < now() - retention returning 1)
  select count(*) from pruned
$$;

revoke all on function pgmcp.write_audit(text, text, text, text, integer, bigint, double precision,
  text, text, jsonb) from public;
revoke all on function pgmcp.prune_audit(interval) from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function pgmcp.write_audit(text, text, text, text, integer, bigint,
      double precision, text, text, jsonb) to pgmcp_authenticator;
    grant execute on function pgmcp.prune_audit(interval) to pgmcp_authenticator;
  end if;
end $$;
