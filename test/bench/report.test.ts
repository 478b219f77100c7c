// The bench's table writer against a fixed real run's figures (fixtures/summary-2026-11-30.json, a
// run without token schemes; its navigator, value-hint and context-size figures come from a later
// catalog run), and the committed docs against the last run (bench/results/latest.json).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { format } from 'prettier';
import { describe, expect, it } from 'vitest';
import {
  benchmarkRows,
  caption,
  readSummary,
  renderReadmeResults,
  renderResults,
  replaceBetweenMarkers,
  type BenchSummary,
} from '../../bench/report.js';
import { PROJECT_ROOT } from '../../src/version.js';

const summary = readSummary(
  path.join(
    PROJECT_ROOT,
    'test',
    'bench',
    'fixtures',
    'summary-2026-11-30.json',
  ),
);
const latest = readSummary(
  path.join(PROJECT_ROOT, 'bench', 'results', 'latest.json'),
);
const read = (file: string) =>
  readFileSync(path.join(PROJECT_ROOT, file), 'utf8');

/** The text between a pair of markers in `text`. */
function between(text: string, name: string): string {
  const start = `<!-- ${name}:start -->`;
  return text
    .slice(
      text.indexOf(start) + start.length,
      text.indexOf(`<!-- ${name}:end -->`),
    )
    .trim();
}

describe('bench report', () => {
  it('puts the date and the pgmcp, Node and PostgreSQL versions in the caption', () => {
    const text = caption(summary);
    expect(text).toContain('2026-11-30');
    expect(text).toContain('pgmcp 0.1.0');
    expect(text).toContain('Node v20.20.2');
    expect(text).toContain('PostgreSQL 15');
    expect(text).toContain('alternated 5 times, medians');
  });

  it('says the rounds alternated ABBA only when the run recorded that order', () => {
    expect(caption({ ...summary, order: 'abba' })).toContain(
      'alternated 5 times (ABBA: every other round pgmcp first), medians',
    );
    expect(caption(summary)).not.toContain('ABBA');
  });

  it('renders the figures of the last run as they were reported', () => {
    const table = renderResults(summary);
    for (const figure of [
      '| context: resources/list pages/s, 10 callers, vs the raw keyset query',
      '6903 vs 5462',
      '1.39, 1.38, 1.26, 1.16, 1.20',
      '0.27 ms / 0.25 ms',
      '40470 pages/s',
      '3654 vs 465',
      '0.75 ms',
      '5.24 ms',
      '1.89 / 14.90 ms',
      '9.9 KB',
      '191 ms vs 136 ms',
      '24.8 ms',
      '1543 vs 1631',
      '2092 vs 4072',
      '14.03 ms',
      '1036 ms vs 921 ms',
      '(10021 entries, 101 pages)',
      '1.06 ms',
      '11.93 / 1.16 ms',
      '29.83 ms',
    ])
      expect(table).toContain(figure);
  });

  it("renders the navigators' p50 and size against their budget, value hints' growth and the context sizes, with their targets", () => {
    const rows = benchmarkRows(summary).map((row) => [
      row.measure,
      row.figure,
      row.target,
      row.met,
    ]);
    expect(rows).toContainEqual([
      'navigator (`pg://{database}`) of the 10,000-table catalog, as a granted role (p50)',
      '191.15 ms',
      '≤ 50 ms',
      false,
    ]);
    expect(rows).toContainEqual([
      'navigator (`pg://{database}`) of the 100,000-table catalog: its size',
      '4217 B',
      '≤ 16384 B (its budget)',
      true,
    ]);
    expect(rows).toContainEqual([
      "a description's bytes with value hints / without, largest of the demo's 8 tables",
      '11878 B vs 9634 B in all',
      '≤ 2.00',
      true,
    ]);
    const table = renderResults(summary);
    expect(table).toMatch(
      /\| context: making the 100,000-table catalog once \(a copy of the 10,000 and look-alike tables\) +\| 247 s +\|/,
    );
    expect(table).toMatch(
      /\| table description \(`shop.orders`; `s01.t0005`\) +\| 1854 B \(~464 tokens\) +\| 872 B \(~218 tokens\) +\|/,
    );
  });

  it('lists the request measures with a target in README, and sums up the other groups in a line', () => {
    const targets = benchmarkRows(summary).filter(
      (row) => row.target !== undefined,
    );
    const readme = renderReadmeResults(summary);
    const results = readme.match(/\| (?:not )?met +\|$/gm) ?? [];
    // Each scheme's figure of a request measure shares its row: fewer rows than targets.
    expect(results.length).toBeGreaterThan(0);
    expect(results.length).toBeLessThanOrEqual(
      targets.filter((row) => row.group === 'request').length,
    );
    for (const row of targets.filter((one) => one.group !== 'request'))
      expect(readme).not.toContain(`| ${row.measure} `);
    // The fixture's six live-update figures all met their targets.
    expect(readme).toContain('live updates: 6 of 6 targets met');
    expect(readme).not.toContain('context:');
  });

  it('marks a figure that misses its target as not met', () => {
    const results = structuredClone(summary.results) as Record<
      string,
      { ratio: number }
    >;
    results['read_vs_bare'] = {
      ...(results['read_vs_point_read'] as { ratio: number }),
      ratio: 0.5,
    };
    const missed: BenchSummary = { ...summary, results };
    const row = benchmarkRows(missed).find((one) =>
      one.measure.startsWith('resources/read req/s vs a bare'),
    );
    expect(row).toMatchObject({ target: '≥ 0.80', met: false });
    expect(renderReadmeResults(missed)).toContain('| not met |');
  });

  it('leaves out measures a partial summary does not have', () => {
    const partial: BenchSummary = {
      ...summary,
      results: { catalog_read: summary.results['catalog_read'] },
    };
    expect(benchmarkRows(partial).map((row) => row.group)).toEqual(['catalog']);
    expect(renderResults(partial)).not.toContain('### Live updates');
  });

  it("labels each token scheme's request figures, with their targets, and says who called", () => {
    const { list_c10, read_vs_point_read } = summary.results;
    const tokens: BenchSummary = {
      ...summary,
      callers: '100 bearer tokens over 4 roles.',
      results: {
        list_c10_vs_bare_hs256: list_c10,
        list_c10_vs_bare_jwks: list_c10,
        read_vs_bare_jwks: read_vs_point_read,
      },
    };
    expect(
      benchmarkRows(tokens).map((row) => [row.measure, row.target]),
    ).toEqual([
      [
        'resources/list pages/s vs a bare node:http server answering with the raw keyset query (no token, no MCP), 10 callers (HS256 tokens)',
        '≥ 0.95',
      ],
      [
        'resources/list pages/s vs a bare node:http server answering with the raw keyset query (no token, no MCP), 10 callers (ES256 tokens from a JWKS)',
        '≥ 0.95',
      ],
      [
        'resources/read req/s vs a bare node:http server answering with the raw point read (no token, no MCP) (ES256 tokens from a JWKS)',
        '≥ 0.80',
      ],
    ]);
    expect(caption(tokens)).toContain(
      'medians over rounds. 100 bearer tokens over 4 roles.',
    );
  });

  it("puts the WAL source's rate against the inert consumer's under its 0.9 target, beside the context rows", () => {
    const side = (perSecond: number, batches = 0, rowsLogged = 0) => ({
      perSecond,
      cpuPerThousand: { walsender: 40, log: batches === 0 ? 0 : 25, node: 30 },
      drainMs: 1,
      batches,
      rowsLogged,
    });
    const wal = (ratios: number[]) => ({
      seconds: 10,
      writer: 'pgbench',
      throughputRatio: [...ratios].sort()[1],
      vsNoneRatio: 0.7,
      ratios,
      vsNoneRatios: [0.7, 0.7, 0.7],
      rounds: ratios.map((ratio) => ({
        none: side(1000),
        inert: side(800),
        capture: side(800 * ratio, 10, 200),
      })),
      commitToNotify: { p50: 0.6, p99: 4 },
      samples: 200,
    });
    const rows = (ratios: number[]) =>
      benchmarkRows({ ...summary, results: { wal_capture: wal(ratios) } });
    const met = rows([0.95, 0.92, 0.88]);
    expect(met.map((row) => row.group)).toEqual(Array(6).fill('wal'));
    expect(met[0]).toMatchObject({
      figure: '736 vs 800',
      ratio: 0.92,
      rounds: [0.95, 0.92, 0.88],
      target: '≥ 0.90',
      met: true,
    });
    expect(met[3]?.figure).toBe('40, 25, 30; 40, 30');
    expect(met[4]?.figure).toBe('20.0');
    expect(rows([0.85, 0.89, 0.95])[0]).toMatchObject({ met: false });
    expect(
      renderResults({
        ...summary,
        results: { wal_capture: wal([0.9, 0.9, 0.9]) },
      }),
    ).toContain('### The WAL change source');
  });

  it('shows the broadcast per-round ratios when the run alternated its sides, and none for an older run', () => {
    const measure =
      'one change to 10,000 streams, all delivered, vs a bare node:http SSE broadcast';
    const broadcastRow = (result: unknown) =>
      benchmarkRows({
        ...summary,
        results: { fanout_10000_vs_bare_sse: result },
      }).find((row) => row.measure === measure);
    expect(
      broadcastRow({
        served: 300,
        baseline: 200,
        ratio: 1.4,
        rounds: [1.2, 1.4, 2.5],
      }),
    ).toMatchObject({
      figure: '300 ms vs 200 ms',
      ratio: 1.4,
      rounds: [1.2, 1.4, 2.5],
      target: '≤ 2.00',
      met: true,
    });
    const older = broadcastRow({ served: 300, baseline: 100, ratio: 3 });
    expect(older).toMatchObject({ ratio: 3, met: false });
    expect(older?.rounds).toBeUndefined();
  });

  it('renders the ceilings and pgmcp against the raw statement as context rows: a ratio and its rounds, no target, not in README', () => {
    const { read_vs_point_read } = summary.results;
    const ceilings: BenchSummary = {
      ...summary,
      results: {
        list_ceiling_vs_raw: read_vs_point_read,
        read_vs_point_read_hs256: read_vs_point_read,
        query_point_read_vs_raw_hs256: read_vs_point_read,
      },
    };
    const rows = benchmarkRows(ceilings);
    expect(rows.map((row) => row.measure)).toEqual([
      'context: bare node:http answering each page with the raw keyset query (no token, no MCP) vs the raw keyset query, 10 callers',
      'context: resources/read req/s vs the raw point read (HS256 tokens)',
      'context: `query` tool primary-key point read req/s vs the raw point read (HS256 tokens)',
    ]);
    const { ratio, rounds } = read_vs_point_read as {
      ratio: number;
      rounds: number[];
    };
    for (const row of rows) {
      expect(row).toMatchObject({ ratio, rounds });
      expect(row.target).toBeUndefined();
    }
    expect(renderReadmeResults(ceilings)).not.toContain('context:');
  });

  it('renders the 2025-11-25 figures in their own table with their targets, and only counts them in README', () => {
    const { read_vs_point_read, notify_latency_1000_streams } = summary.results;
    const legacy: BenchSummary = {
      ...summary,
      results: {
        legacy_read_vs_modern: {
          ...(read_vs_point_read as object),
          ratio: 0.95,
        },
        legacy_list_vs_modern: {
          ...(read_vs_point_read as object),
          ratio: 0.85,
        },
        legacy_notify_latency_1000_subscribers: notify_latency_1000_streams,
        legacy_memory_per_idle_session: { sessions: 1999, bytes: 10_553 },
      },
    };
    expect(
      benchmarkRows(legacy).map((row) => [
        row.group,
        row.measure.slice(0, 16),
        row.target,
        row.met,
      ]),
    ).toEqual([
      ['legacy', '`resources/read`', '≥ 0.90', true],
      ['legacy', '`resources/list`', '≥ 0.90', false],
      ['legacy', 'commit → `notifi', '≤ 5 ms', true],
      ['legacy', 'commit → `notifi', '≤ 25 ms', true],
      ['legacy', 'context: the sam', undefined, undefined],
      ['legacy', 'memory per idle ', '≤ 16 KB', true],
    ]);
    const table = renderResults(legacy);
    expect(table).toContain('### 2025-11-25 sessions');
    expect(table).toContain('1,000 subscribed 2025-11-25 sessions (p99)');
    expect(table).toContain('10.3 KB');
    const readme = renderReadmeResults(legacy);
    expect(readme).not.toContain('sessions (p99)');
    expect(readme).toContain('the 2025-11-25 era: 4 of 5 targets met');
  });

  it('renders the standby figures in their own table without targets, and says so in README', () => {
    const run = (perSecond: number) => ({
      count: 1,
      perSecond,
      p50: 1,
      p99: 2,
    });
    const standby: BenchSummary = {
      ...summary,
      results: {
        standby_read: {
          baseline: run(2000),
          served: run(1500),
          ratio: 0.74,
          rounds: [0.7, 0.74, 0.8],
          standbyShare: 0.9995,
        },
        standby_read_after_notify: {
          standby: { p50: 4, p99: 12 },
          primary: { p50: 2, p99: 10 },
          samples: 100,
          stale: { standby: 1, primary: 0 },
          standbyReads: { 'standby/caught_up': 180, 'standby/waited': 20 },
        },
      },
    };
    const rows = benchmarkRows(standby);
    expect(rows.map((row) => [row.group, row.figure, row.ratio])).toEqual([
      ['standby', '1500 vs 2000', 0.74],
      ['standby', '4.00 ms / 2.00 ms', 2],
      ['standby', '12.00 ms / 10.00 ms', 1.2],
      ['standby', '1 / 0', undefined],
      ['standby', 'standby caught_up 180, standby waited 20', undefined],
    ]);
    expect(rows[0]?.measure).toContain('(100.0% answered by the standby)');
    expect(rows.every((row) => row.target === undefined)).toBe(true);
    expect(renderResults(standby)).toContain('### Reads from a hot standby');
    expect(renderResults(standby)).toContain('| 0.70, 0.74, 0.80 ');
    const readme = renderReadmeResults(standby);
    expect(readme).toContain(
      'reads from a hot standby: figures only, no target',
    );
    expect(readme).not.toContain('1500 vs 2000');
  });

  it('shows a request measure once in README, each scheme side by side, not met when one scheme misses', () => {
    const { read_vs_point_read } = summary.results as Record<
      string,
      { ratio: number }
    >;
    const missed = { ...(read_vs_point_read as object), ratio: 0.5 };
    const tokens: BenchSummary = {
      ...summary,
      results: {
        read_vs_bare_hs256: read_vs_point_read,
        read_vs_bare_jwks: missed,
      },
    };
    const readme = renderReadmeResults(tokens);
    const rows = readme
      .split('\n')
      .filter((line) => line.startsWith('| resources/read'));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain(
      'resources/read req/s vs a bare node:http server answering with the raw point read (no token, no MCP) (HS256 tokens / ES256 tokens from a JWKS)',
    );
    expect(rows[0]).toContain(
      `${(read_vs_point_read as { ratio: number }).ratio.toFixed(2)} / 0.50`,
    );
    expect(rows[0]).toContain('| not met |');
  });

  it('writes tables that prettier leaves as they are', async () => {
    for (const text of [renderResults(summary), renderReadmeResults(summary)])
      expect(await format(text, { parser: 'markdown' })).toBe(`${text}\n`);
  });

  it('replaces only what lies between the markers, and refuses a file without them', () => {
    const text = 'a\n<!-- x:start -->\nold\n<!-- x:end -->\nb\n';
    expect(replaceBetweenMarkers(text, 'x', 'new')).toBe(
      'a\n<!-- x:start -->\n\nnew\n\n<!-- x:end -->\nb\n',
    );
    expect(() => replaceBetweenMarkers('a', 'x', 'new')).toThrow(/markers/);
  });

  it('docs/benchmarks.md and README hold the tables of bench/results/latest.json (npm run bench:docs)', () => {
    expect(between(read('docs/benchmarks.md'), 'bench:results')).toBe(
      renderResults(latest),
    );
    expect(between(read('README.md'), 'bench:summary')).toBe(
      renderReadmeResults(latest),
    );
  });
});
