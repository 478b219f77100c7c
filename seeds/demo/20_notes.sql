-- pgmcp:batches 30
-- The notes library: 30 tags x 110 deterministic Markdown notes (md5-driven, no randomness), one
-- tag per batch ($1 = tag index). Readers follow the team that owns each tag.
with tag as (
  select (array[
      'architecture', 'backend', 'frontend', 'databases', 'devops', 'oncall', 'security', 'testing', 'api-design', 'observability',
      'customer-faq', 'escalations', 'billing-help', 'troubleshooting', 'onboarding', 'product-updates',
      'budgets', 'invoicing', 'payroll', 'forecasting', 'procurement', 'audits',
      'handbook', 'meetings', 'roadmap', 'hiring', 'culture', 'travel', 'benefits', 'announcements'
    ])[$1::int + 1] as name,
    case
      when $1::int < 10 then array['engineering']
      when $1::int < 16 then array['support']
      when $1::int < 22 then array['finance']
      else array['engineering', 'support', 'finance']
    end as readers
),
vocab as (
  select array[
      'latency', 'rollout', 'schema', 'index', 'replica', 'cache', 'queue', 'budget', 'invoice', 'ticket',
      'customer', 'release', 'migration', 'incident', 'review', 'pipeline', 'quota', 'contract', 'vendor', 'policy',
      'dashboard', 'alert', 'backup', 'partition', 'vacuum', 'forecast', 'ledger', 'refund', 'escalation', 'runbook',
      'checklist', 'roadmap', 'milestone', 'retrospective', 'handoff', 'audit', 'permission', 'token', 'endpoint', 'payload',
      'deadline', 'estimate', 'experiment', 'metric', 'baseline', 'capacity', 'failover', 'snapshot', 'template', 'workflow'
    ] as w,
    array['quarterly', 'urgent', 'draft', 'final', 'internal', 'shared', 'weekly', 'legacy', 'new', 'revised'] as adj
),
note as (
  select g as i, decode(md5(tag.name || ':' || g), 'hex') as h,
         decode(md5(tag.name || ':' || ((g % 110) + 1)), 'hex') as related_h, (g % 110) + 1 as related_i
  from tag, generate_series(1, 110) as g
),
parts as (
  select note.i, note.related_i,
    vocab.adj[1 + get_byte(note.h, 0) % 10] as a1,
    vocab.w[1 + get_byte(note.h, 1) % 50] as w1,
    vocab.w[1 + get_byte(note.h, 2) % 50] as w2,
    vocab.w[1 + get_byte(note.h, 3) % 50] as w3,
    vocab.w[1 + get_byte(note.h, 4) % 50] as w4,
    vocab.w[1 + get_byte(note.h, 5) % 50] as w5,
    vocab.w[1 + get_byte(note.h, 6) % 50] as w6,
    vocab.adj[1 + get_byte(note.related_h, 0) % 10] as ra,
    vocab.w[1 + get_byte(note.related_h, 1) % 50] as rw1,
    vocab.w[1 + get_byte(note.related_h, 2) % 50] as rw2,
    get_byte(note.h, 7) as p
  from note, vocab
),
rows as (
  select
    format('%s-%s-%s-%s', a1, w1, w2, i) as slug,
    format('%s-%s-%s-%s', ra, rw1, rw2, related_i) as related_slug,
    initcap(format('%s %s %s', a1, w1, w2)) as title,
    initcap(format('%s %s %s', ra, rw1, rw2)) as related_title,
    parts.*
  from parts
)
insert into pgmcp.resources (uri, name, title, description, mime_type, text, tags, audience, priority, readers)
select
  format('notes:///%s/%s', tag.name, rows.slug),
  rows.slug,
  rows.title,
  format('%s note about the %s %s and its %s.', initcap(tag.name), rows.w1, rows.w2, rows.w3),
  'text/markdown',
  format(E'# %s\n\n_Tag: %s · note %s of 110_\n\n'
         'This note records how the team handles the %s %s. The %s depends on the %s, so every change '
         'to the %s is reviewed before the next %s. Owners update it after each %s.\n\n'
         '## Key points\n\n- Check the %s before touching the %s.\n- Record the %s in the %s.\n'
         '- Escalate when the %s exceeds its %s.\n\n## Related\n\n- [%s](notes:///%s/%s)\n',
         rows.title, tag.name, rows.i,
         rows.w1, rows.w2, rows.w3, rows.w4, rows.w1, rows.w5, rows.w6,
         rows.w2, rows.w3, rows.w4, rows.w5, rows.w6, rows.w1,
         rows.related_title, tag.name, rows.related_slug),
  array[tag.name],
  case when rows.p % 3 = 0 then array['user', 'assistant'] else array['assistant'] end,
  round((rows.p / 255.0)::numeric, 2)::double precision,
  tag.readers
from rows, tag
on conflict (uri) do nothing
