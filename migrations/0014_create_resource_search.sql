-- Full-text search over stored resources (issue 15 point 1): an expression GIN index over title,
-- description and text, so the write path keeps it (every insert and update maintains the index)
-- and nothing is stored beside pgmcp.resources but the index itself (issue 13 bounds what is).
-- Titles weigh most, then descriptions, then the body; only the body's first 100,000 characters
-- are indexed (a tsvector is at most 1 MB).
create function pgmcp.search_document(title text, description text, body text) returns tsvector
language sql immutable parallel safe
set search_path = pg_catalog as $$
  select setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A')
      || setweight(to_tsvector('english'::regconfig, coalesce(description, '')), 'B')
      || setweight(to_tsvector('english'::regconfig, left(coalesce(body, ''), 100000)), 'D')
$$;

create index resources_search on pgmcp.resources
  using gin (pgmcp.search_document(title, description, text));
