-- 20 stored prompts for `npm run bench` (prompts_list_vs_echo): one prompts/list page, readable by
-- both bench roles.
insert into pgmcp.prompts (name, title, description, arguments, messages, readers)
select
  format('bench-prompt-%s', n),
  format('Bench prompt %s', n),
  format('Synthetic prompt number %s for benchmarks.', n),
  '[{"name": "tag", "description": "A tag.", "required": true, "complete": "tags"}]',
  '[{"role": "user", "content": {"type": "text", "text": "Summarize the resources tagged {{tag}}."}},
    {"role": "user", "content": {"type": "pgmcp:links", "tag": "{{tag}}"}}]',
  array['bench_reader', 'bench_all']
from generate_series(1, 20) as n
on conflict (name) do nothing;
