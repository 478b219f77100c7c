-- The demo's stored prompts (docs/prompts.md "Built-in prompts"): rendered as the caller's role,
-- so each team gets links and descriptions only of what it can read. Skipped on a database from
-- before migration 0015 (test/db/upgrade.test.ts seeds one at 0007, then migrates it).
do $$
begin
  if to_regclass('pgmcp.prompts') is null then
    return;
  end if;
insert into pgmcp.prompts (name, title, description, arguments, messages, readers)
values
  ('digest', 'Digest of a tag',
   'Summarize the notes with a tag: an instruction and a link to each note you can read.',
   '[{"name": "tag", "title": "Tag", "description": "The notes tag to digest, e.g. oncall.", "required": true, "complete": "tags"}]',
   '[{"role": "user", "content": {"type": "text", "text": "Write a digest of the notes tagged {{tag}}: read each note linked below, then summarize what they say in a few bullet points, grouped by theme, citing the notes you draw on."}},
     {"role": "user", "content": {"type": "pgmcp:links", "tag": "{{tag}}"}}]',
   array['engineering', 'support', 'finance']),
  ('explain-table', 'Explain a table',
   'Explain what a table or view of the company database holds, from its description.',
   '[{"name": "table", "title": "Table", "description": "schema.table, e.g. shop.orders (a bare name when only one schema has it).", "required": true, "complete": "tables"}]',
   '[{"role": "user", "content": {"type": "text", "text": "Explain the table {{table}} to someone new to this database: what one row stands for, what each column means, and how it relates to other tables. Its description follows."}},
     {"role": "user", "content": {"type": "pgmcp:embed", "table": "{{table}}"}}]',
   array['engineering', 'support', 'finance']),
  ('write-query', 'Write a query',
   'Answer a question with a read-only SQL query: links the relevant tables and points at the query tool.',
   '[{"name": "question", "title": "Question", "description": "What you want to know, in words.", "required": true},
     {"name": "tables", "title": "Tables", "description": "Tables to use, comma-separated schema.table (default: those the question names).", "complete": "tables"}]',
   '[{"role": "user", "content": {"type": "text", "text": "Answer this question with one read-only SQL query: {{question}}\n\nRead the descriptions of the tables linked below first (columns, keys, comments), write the query, run it with the query tool (it runs as your role, read-only), and answer from its result, showing the query you ran."}},
     {"role": "user", "content": {"type": "pgmcp:links", "tables": "{{tables}}", "match": "{{question}}"}}]',
   array['engineering', 'support', 'finance'])
on conflict (name) do nothing;
end $$;
