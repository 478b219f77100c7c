-- Stored resources: pgmcp's public table contract (README "The pgmcp.resources table").
-- Companies write rows with plain SQL; constraints reject rows pgmcp could not serve.

-- RFC 3986 URI (IRI characters allowed, as MCP carries them), at most 2048 characters, no control
-- characters; file: URIs must be absolute, normalized paths (no ., .., empty segments, backslash, NUL,
-- encoded "/", lower-case or needless percent-escapes).
-- src/resources/uri.ts applies the same rules to every URI a client sends.
create function pgmcp.uri_is_valid(uri text) returns boolean
language sql immutable strict parallel safe
return length(uri) <= 2048
  and uri ~ '^[A-Za-z][A-Za-z0-9+.-]*:([A-Za-z0-9._~!$&''()*+,;=:@/?#\[\]-]|%[0-9A-Fa-f]{2}|[^\u0001-\u009f])*$'
  and uri !~ '#.*#'
  and (
    uri !~* '^file:'
    or (
      uri ~* '^file://[^/?#]*/'
      and uri !~* '^file://[^/?#]*/([^?#]*/)?(\.|%2e){1,2}(/|[?#]|$)'
      and uri !~* '^file://[^/?#]*/([^?#]*)?//'
      and uri !~* '%2f|%5c|%00'
      -- normalized: upper-case hex, unreserved characters not escaped (RFC 3986 §6.2.2)
      and uri !~ '%([a-f][0-9A-Fa-f]|[0-9A-F][a-f])'
      and uri !~ '%(2[DEde]|3[0-9]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff]|7[Ee])'
    )
  );

create table pgmcp.resources (
  id bigint generated always as identity primary key,
  uri text collate "C" not null,
  name text not null,
  title text,
  description text,
  mime_type text,
  text text,
  blob bytea,
  size bigint generated always as (coalesce(octet_length(text), octet_length(blob))) stored,
  tags text[] not null default '{}',
  audience text[],
  priority double precision,
  readers text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint resources_uri_key unique (uri),
  constraint resources_uri_valid check (pgmcp.uri_is_valid(uri)),
  constraint resources_name_not_empty check (name <> ''),
  constraint resources_exactly_one_of_text_or_blob check ((text is null) <> (blob is null)),
  constraint resources_audience_valid check (audience <@ array['user', 'assistant']::text[]),
  constraint resources_priority_range check (priority >= 0 and priority <= 1),
  constraint resources_mime_type_valid check (mime_type ~ '^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*( *;.*)?$')
);

comment on table pgmcp.resources is 'Stored MCP resources served by pgmcp. Public interface: write with plain SQL.';
comment on column pgmcp.resources.uri is 'RFC 3986 URI, any scheme; unique. file: URIs are normalized absolute paths; a trailing / is a directory.';
comment on column pgmcp.resources.text is 'Text content. Exactly one of text or blob is set.';
comment on column pgmcp.resources.blob is 'Binary content, served as base64. Exactly one of text or blob is set.';
comment on column pgmcp.resources.size is 'Byte size of the content (generated).';
comment on column pgmcp.resources.audience is 'MCP annotation: subset of {user, assistant}.';
comment on column pgmcp.resources.priority is 'MCP annotation: 0 (optional) .. 1 (required).';
comment on column pgmcp.resources.readers is 'Postgres roles allowed to read the row (enforced by row-level security).';
comment on column pgmcp.resources.updated_at is 'Kept by a trigger; served as annotations.lastModified.';

create index resources_tags_idx on pgmcp.resources using gin (tags);

create function pgmcp.touch_updated_at() returns trigger
language plpgsql as $$
begin
  if new is distinct from old then
    new.updated_at := now();
  end if;
  return new;
end;
$$;

create trigger resources_touch_updated_at
  before update on pgmcp.resources
  for each row execute function pgmcp.touch_updated_at();

-- Secrets shared by every replica on this database (cursor signing), created on first start.
create table pgmcp.server_secrets (
  name text primary key,
  secret text not null,
  created_at timestamptz not null default now()
);
revoke all on pgmcp.server_secrets from public;

-- Resource templates (RFC 6570) describing families of stored resources, e.g. notes:///{tag}/{slug}.
create table pgmcp.resource_templates (
  id bigint generated always as identity primary key,
  uri_template text collate "C" not null,
  name text not null,
  title text,
  description text,
  mime_type text,
  readers text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint resource_templates_uri_template_key unique (uri_template),
  constraint resource_templates_uri_template_valid check (
    length(uri_template) <= 2048 and uri_template ~ '^[A-Za-z][A-Za-z0-9+.-]*:[^[:space:][:cntrl:]]*$'
  ),
  constraint resource_templates_name_not_empty check (name <> '')
);

comment on table pgmcp.resource_templates is 'RFC 6570 templates served by resources/templates/list.';

create trigger resource_templates_touch_updated_at
  before update on pgmcp.resource_templates
  for each row execute function pgmcp.touch_updated_at();

-- Datasets loaded by `pgmcp seed` (the embedded default loads demo once, on first start).
create table pgmcp.seed_runs (
  dataset text primary key,
  loaded_at timestamptz not null default now()
);
