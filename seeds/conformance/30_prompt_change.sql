-- What the suite's test_trigger_prompt_change fixture calls (server-stateless, prompts list
-- changes): it changes the stored prompts the way an operator does, with plain SQL, so listen
-- streams hear notifications/prompts/list_changed through the change log like any prompt change.
-- Each call adds test_changing_prompt, or removes it when it is there.
create or replace function pgmcp.conformance_change_prompts() returns void
language plpgsql volatile security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
begin
  delete from pgmcp.prompts where name = 'test_changing_prompt';
  if not found then
    insert into pgmcp.prompts (name, title, description, arguments, messages, readers)
    values ('test_changing_prompt', 'Changing prompt', 'Added and removed by the suite.', '[]',
            '[{"role": "user", "content": {"type": "text", "text": "This prompt comes and goes."}}]',
            array['public']);
  end if;
end;
$$;
revoke all on function pgmcp.conformance_change_prompts() from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function pgmcp.conformance_change_prompts() to pgmcp_authenticator;
  end if;
end $$;
