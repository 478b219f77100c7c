-- pgmcp:batches 100
-- 1,000,000 stored resources for `npm run bench`: 100 batches of 10,000 ($1 = batch index).
-- One in ten rows is readable by bench_reader (authorization benchmarks); every row by bench_all.
insert into pgmcp.resources (uri, name, title, description, mime_type, text, tags, audience, priority, readers)
select
  format('bench:///r/%s', n),
  format('resource-%s', n),
  format('Bench resource %s', n),
  format('Synthetic resource number %s for benchmarks.', n),
  'text/markdown',
  format(E'# Resource %s\n\n%s\n', n, repeat(md5(n::text) || ' ', 8)),
  array[format('t%s', n % 30)],
  array['assistant'],
  (n % 100) / 100.0,
  case when n % 10 = 0 then array['bench_reader', 'bench_all'] else array['bench_all'] end
from generate_series($1::bigint * 10000 + 1, ($1::bigint + 1) * 10000) as n
on conflict (uri) do nothing
