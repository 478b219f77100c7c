-- Stored prompts (docs/prompts.md): served by prompts/list and prompts/get, written with plain SQL.
-- A row is visible to the request roles that are members of a role in `readers` ('public': every
-- role), by the same policy as pgmcp.resources (migration 0002), and every committed change is
-- logged to pgmcp.changes with its readers, so only roles that can read the row hear of it.

-- arguments: an array of PromptArgument objects, each with a unique non-empty string "name",
-- optional string "title" and "description", boolean "required", and "complete" ('tags' or
-- 'tables': what completion/complete suggests for it).
create function pgmcp.prompt_arguments_valid(arguments jsonb) returns boolean
language sql immutable strict parallel safe
return jsonb_typeof(arguments) = 'array'
  and not jsonb_path_exists(arguments, '$[*] ? (
        @.type() != "object" || !exists(@.name) || @.name.type() != "string" || @.name == ""
        || (exists(@.title) && @.title.type() != "string")
        || (exists(@.description) && @.description.type() != "string")
        || (exists(@.required) && @.required.type() != "boolean")
        || (exists(@.complete) && !(@.complete == "tags" || @.complete == "tables")))')
  and (select count(distinct a ->> 'name') = count(*) from jsonb_array_elements(arguments) a);

create table pgmcp.prompts (
  id bigint generated always as identity primary key,
  name text collate "C" not null,
  title text,
  description text,
  arguments jsonb not null default '[]',
  -- PromptMessage templates, {"role", "content"}: {{argument}} in any string of a content is
  -- replaced by the argument's value; pgmcp:links and pgmcp:embed contents are rendered as the
  -- caller's role (docs/prompts.md "Templates").
  messages jsonb not null,
  readers text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint prompts_name_key unique (name),
  -- The tool-name rule of the spec, so a host can turn a prompt into a slash command.
  constraint prompts_name_valid check (name ~ '^[A-Za-z0-9_.-]{1,128}$'),
  constraint prompts_arguments_valid check (pgmcp.prompt_arguments_valid(arguments)),
  constraint prompts_messages_valid check (
    jsonb_typeof(messages) = 'array' and jsonb_array_length(messages) > 0
    and not jsonb_path_exists(messages, '$[*] ? (
          @.type() != "object" || !(@.role == "user" || @.role == "assistant")
          || !exists(@.content.type) || @.content.type() != "object"
          || @.content.type.type() != "string")')
  )
);

comment on table pgmcp.prompts is 'Stored MCP prompts served by prompts/list and prompts/get. Public interface: write with plain SQL (docs/prompts.md).';
comment on column pgmcp.prompts.arguments is 'PromptArgument objects: name, title, description, required, complete (tags or tables).';
comment on column pgmcp.prompts.messages is 'PromptMessage templates: {{argument}} placeholders; pgmcp:links and pgmcp:embed contents render as the caller.';
comment on column pgmcp.prompts.readers is 'Postgres roles allowed to see the prompt (enforced by row-level security).';

create trigger prompts_touch_updated_at
  before update on pgmcp.prompts
  for each row execute function pgmcp.touch_updated_at();

-- The resources policy (migration 0002), for prompts.
alter table pgmcp.prompts enable row level security;
alter table pgmcp.prompts force row level security;
create policy prompts_readable_by_readers on pgmcp.prompts
  for select using (readers && (select pgmcp.member_roles()));
grant select on pgmcp.prompts to public;

-- Change capture (migration 0004's design): one log row per changed prompt, with its readers
-- before and after, so the change path asks each listening role whether it may hear of it; no
-- URI (prompts have none), the name in `detail`. An update that changes nothing is not logged.
create function pgmcp.capture_prompt_changes() returns trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp
as $$
declare
  last_seq bigint;
  logged bigint;
begin
  if TG_OP = 'INSERT' then
    with inserted as (
      insert into pgmcp.changes (relation, kind, readers_after, detail)
      select 'pgmcp.prompts', 'created', n.readers, jsonb_build_object('prompt', n.name) from new_rows n
      returning seq)
    select max(seq), count(*) into last_seq, logged from inserted;
  elsif TG_OP = 'DELETE' then
    with inserted as (
      insert into pgmcp.changes (relation, kind, readers_before, detail)
      select 'pgmcp.prompts', 'deleted', o.readers, jsonb_build_object('prompt', o.name) from old_rows o
      returning seq)
    select max(seq), count(*) into last_seq, logged from inserted;
  else
    with inserted as (
      insert into pgmcp.changes (relation, kind, readers_before, readers_after, detail)
      select 'pgmcp.prompts', 'updated', o.readers, n.readers, jsonb_build_object('prompt', n.name)
        from old_rows o join new_rows n on o.id = n.id
       where to_jsonb(o) - 'updated_at' is distinct from to_jsonb(n) - 'updated_at'
      returning seq)
    select max(seq), count(*) into last_seq, logged from inserted;
  end if;
  if logged > 0 then
    perform pg_notify('pgmcp_changes', json_build_object('seq', last_seq, 'rows', logged)::text);
  end if;
  return null;
end;
$$;
revoke all on function pgmcp.capture_prompt_changes() from public;

create trigger prompts_capture_inserts
  after insert on pgmcp.prompts referencing new table as new_rows
  for each statement execute function pgmcp.capture_prompt_changes();
create trigger prompts_capture_updates
  after update on pgmcp.prompts referencing old table as old_rows new table as new_rows
  for each statement execute function pgmcp.capture_prompt_changes();
create trigger prompts_capture_deletes
  after delete on pgmcp.prompts referencing old table as old_rows
  for each statement execute function pgmcp.capture_prompt_changes();
