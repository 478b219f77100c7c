-- Audit rows keep a statement's text up to a cap (PGMCP_AUDIT_TEXT_BYTES, issue 32 point 3): a
-- 1 MB SQL comment or prompt argument cannot add megabytes per call. target_length records the
-- full text's length in bytes (UTF-8), so a cut text is known to be cut; null on rows written
-- before this migration.
alter table pgmcp.audit add column target_length integer;

create function pgmcp.write_audit(
  p_role text, p_subject text, p_action text, p_target text, p_parameter_count integer,
  p_row_count bigint, p_duration_ms double precision, p_sqlstate text, p_reason text, p_detail jsonb,
  p_target_length integer
) returns void
language sql volatile security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
  insert into pgmcp.audit (role, subject, action, target, parameter_count, row_count, duration_ms,
                           sqlstate, reason, detail, target_length)
  values (p_role, p_subject, p_action, p_target, p_parameter_count, p_row_count, p_duration_ms,
          p_sqlstate, p_reason, p_detail, p_target_length)
$$;

-- The ten-argument pgmcp.write_audit stays for a server of the previous version still running
-- during a rolling upgrade; its rows have a null target_length.
revoke all on function pgmcp.write_audit(text, text, text, text, integer, bigint, double precision,
  text, text, jsonb, integer) from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function pgmcp.write_audit(text, text, text, text, integer, bigint,
      double precision, text, text, jsonb, integer) to pgmcp_authenticator;
  end if;
end $$;
