-- The query/explain statement guard asks whether any stored resource is sensitive (issue 32 point 2:
-- then a statement that can read pgmcp.resources needs consent). A partial index answers that
-- without scanning the table; it holds only the sensitive rows, so other writes never touch it.
create index resources_sensitive_idx on pgmcp.resources (id) where sensitive;
