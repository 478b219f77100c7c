-- The catalog's URI templates (README "URIs"), listed by resources/templates/list like any other
-- and completed from pg_catalog (schema and relation names the caller's role can see).
insert into pgmcp.resource_templates (uri_template, name, title, description, mime_type, readers)
values
  ('pg://{database}/{schema}', 'schema', 'Database schema',
   'A schema of the company database: its comment and the tables and views you can see, each described.',
   'inode/directory', array['public']),
  ('pg://{database}/{schema}/{table}', 'table', 'Table or view',
   'A table or view of the company database described for you: columns, keys, indexes, comments. Add ?format=json for JSON.',
   'text/markdown', array['public'])
on conflict (uri_template) do nothing;
