-- The search index of the demo's searchable collection (seeds/demo/pgmcp.config.json: tickets,
-- "searchable": ["subject"]), as pgmcp.row_search_index('support.tickets', array['subject'])
-- prints it (docs/tools.md "Searching rows"), without CONCURRENTLY: the seed runs in a transaction.
create index if not exists tickets_pgmcp_search on support.tickets
  using gin (pgmcp.search_document(subject::text, null::text, null::text));
