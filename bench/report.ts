// The bench's tables: bench/results/latest.json → the results section of docs/benchmarks.md and
// the short table in README. Pure functions of the summary, so docs can be regenerated without a run.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Run } from './load.js';
import { walRows } from './report-wal.js';

/** bench/results/latest.json. */
export interface BenchSummary {
  readonly version: string;
  readonly date: string;
  readonly machine: {
    readonly cpus: number;
    readonly model?: string;
    readonly node: string;
  };
  readonly postgres?: {
    readonly version: string;
    readonly sharedBuffers?: string;
    readonly autovacuum?: string;
  };
  readonly durationMs: number;
  readonly rounds: number;
  /** How the rounds alternate: 'abba' (every other round pgmcp first); absent: baseline first. */
  readonly order?: 'abba';
  readonly results: Record<string, unknown>;
  /** Who sent the requests (bearer tokens over roles); absent before tokens. */
  readonly callers?: string;
  /** BENCH_ONLY runs merged into this file: keys → that run's date and versions. */
  readonly partialRuns?: Record<string, { readonly date: string }>;
}

/** A comparison run.ts alternates: medians of each side, and of the per-round ratios. */
interface Comparison {
  baseline: Run;
  served: Run;
  ratio: number;
  rounds: number[];
}
interface Ratios {
  ratio: number;
  rounds: number[];
  with: Run[];
  without: Run[];
}
interface P50 {
  p50: number;
}

type Group =
  | 'request'
  | 'driver'
  | 'storage'
  | 'live'
  | 'replicas'
  | 'standby'
  | 'wal'
  | 'legacy'
  | 'catalog';

/** One row of a results table. */
export interface Row {
  readonly group: Group;
  readonly measure: string;
  readonly figure: string;
  readonly ratio?: number;
  readonly rounds?: readonly number[];
  readonly target?: string;
  readonly met?: boolean;
}

/** A target on a figure: its text and whether `value` meets it. */
interface Target {
  readonly text: string;
  readonly met: (value: number) => boolean;
}
const atLeast = (bound: number, text = bound.toFixed(2)): Target => ({
  text: `≥ ${text}`,
  met: (value) => value >= bound,
});
const atMost = (bound: number, text = bound.toFixed(2)): Target => ({
  text: `≤ ${text}`,
  met: (value) => value <= bound,
});
const below = (bound: number, text: string): Target => ({
  text: `< ${text}`,
  met: (value) => value < bound,
});

/** How one result key becomes rows (a key may give a target row and context rows). */
type Measure = (result: unknown) => Omit<Row, 'group'>[];

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const ms = (value: number, digits = 2): string => `${value.toFixed(digits)} ms`;

function targetRow(
  row: Omit<Row, 'group' | 'target' | 'met'>,
  target: Target,
  subject: number,
): Omit<Row, 'group'> {
  return { ...row, target: target.text, met: target.met(subject) };
}

/** A throughput comparison: pgmcp's requests per second against the baseline's (no target: context). */
const throughput =
  (measure: string, target?: Target): Measure =>
  (result) => {
    const { served, baseline, ratio, rounds } = result as Comparison;
    const figure = `${served.perSecond.toFixed(0)} vs ${baseline.perSecond.toFixed(0)}`;
    const row = { measure, figure, ratio, rounds };
    return [target === undefined ? row : targetRow(row, target, ratio)];
  };

/** A latency comparison: pgmcp's p50 over the baseline's. */
const latency =
  (measure: string, target: Target): Measure =>
  (result) => {
    const { served, baseline, ratio, rounds } = result as Comparison;
    const figure = `${ms(served.p50)} / ${ms(baseline.p50)}`;
    return [targetRow({ measure, figure, ratio, rounds }, target, ratio)];
  };

/** A single p50 against an absolute target. */
const p50 =
  (measure: string, target: Target): Measure =>
  (result) => {
    const value = (result as P50).p50;
    return [targetRow({ measure, figure: ms(value) }, target, value)];
  };

/** Write throughput with the capture triggers against without (live bench). */
const writes =
  (measure: string, target?: Target): Measure =>
  (result) => {
    const run = result as Ratios;
    const perSecond = (runs: Run[]) =>
      median(runs.map((one) => one.perSecond)).toFixed(0);
    const row = {
      measure,
      figure: `${perSecond(run.with)} vs ${perSecond(run.without)}`,
      ratio: run.ratio,
      rounds: run.rounds,
    };
    return [target === undefined ? row : targetRow(row, target, run.ratio)];
  };

/**
 * The request-path figures through pgmcp (a summary from before tokens has them under these keys).
 * Targets are against baselines a Node server can reach: the bare statement server, a bare server
 * writing the same bytes, the plain safe query server, the official SDK's server. Ratios to the raw
 * statement on the pool, and to the JSON echo of earlier runs, are context.
 */
const REQUEST_PATH: Record<string, Measure> = {
  list_c10: throughput(
    'context: resources/list pages/s, 10 callers, vs the raw keyset query',
  ),
  list_c50: throughput(
    'context: resources/list pages/s, 50 callers, vs the raw keyset query',
  ),
  list_c10_vs_bare: throughput(
    'resources/list pages/s vs a bare node:http server answering with the raw keyset query (no token, no MCP), 10 callers',
    atLeast(0.95),
  ),
  last_vs_first_page: latency('last-page p50 / first-page p50', atMost(1.2)),
  discover_vs_bare_bytes: throughput(
    'server/discover req/s vs a bare node:http server writing the same bytes',
    atLeast(0.8),
  ),
  discover_vs_echo: throughput(
    'context: server/discover req/s vs a bare node:http JSON echo',
  ),
  prompts_list_vs_bare_bytes: throughput(
    'prompts/list req/s vs a bare node:http server writing the same bytes',
    atLeast(0.8),
  ),
  prompts_list_vs_echo: throughput(
    'context: prompts/list req/s vs a bare node:http JSON echo',
  ),
  read_vs_point_read: throughput(
    'context: resources/read req/s vs the raw point read',
  ),
  read_vs_bare: throughput(
    'resources/read req/s vs a bare node:http server answering with the raw point read (no token, no MCP)',
    atLeast(0.8),
  ),
  read_vs_peer: throughput(
    'resources/read req/s vs the official TypeScript SDK (`@modelcontextprotocol/server`) serving the same rows',
    atLeast(4),
  ),
  list_role_10pct_vs_raw_rls: throughput(
    'resources/list pages/s as a role that sees 10% of the rows, vs the raw query under the same RLS in one round trip',
    atLeast(0.8),
  ),
  list_role_10pct_vs_all_p50: latency(
    'resources/list p50, role seeing 10% / role seeing everything',
    atMost(1.25),
  ),
  // bench/tools.ts
  search_p50_role10pct: p50(
    '`search` p50 for a two-word query, as a role that sees 10% of the rows, one caller',
    atMost(20, '20 ms'),
  ),
  query_point_read_vs_bare_safe: throughput(
    '`query` tool primary-key point read req/s vs a bare node:http server running it the plain safe way (READ ONLY, role set locally, one audit row)',
    atLeast(0.7),
  ),
  query_point_read_vs_raw: throughput(
    'context: `query` tool primary-key point read req/s vs the raw point read',
  ),
  tools_list_vs_bare_bytes: throughput(
    'tools/list req/s vs a bare node:http server writing the same bytes',
    atLeast(0.8),
  ),
  tools_list_vs_echo: throughput(
    'context: tools/list req/s vs a bare node:http JSON echo',
  ),
};

/** How each run of run.ts's request figures authenticated its callers, by key suffix. */
const TOKEN_SCHEMES: [string, string][] = [
  ['hs256', 'HS256 tokens'],
  ['jwks', 'ES256 tokens from a JWKS'],
];

/** `measure`'s rows, each measure text followed by `(label)`. */
const labelled =
  (measure: Measure, label: string): Measure =>
  (result) =>
    measure(result).map((row) => ({
      ...row,
      measure: `${row.measure} (${label})`,
    }));

/** The context row: no pgmcp, no token. */
const httpCeiling: Measure = (result) => {
  const { ceiling, bytes } = result as { ceiling: Run; bytes: number };
  return [
    {
      measure: `context: bare node:http serving a fixed ${bytes}-byte page`,
      figure: `${ceiling.perSecond.toFixed(0)} pages/s`,
    },
  ];
};

// Rows in the order of the tables: the ceilings after the list figures, then each scheme's run.
const requestPath = Object.entries(REQUEST_PATH);
const perScheme = TOKEN_SCHEMES.flatMap(([suffix, label]) =>
  requestPath.map(([key, measure]): [string, Measure] => [
    `${key}_${suffix}`,
    labelled(measure, label),
  ]),
);
const ceilingEntries: [string, Measure][] = [
  ['list_http_ceiling', httpCeiling],
  [
    'list_ceiling_vs_raw',
    throughput(
      'context: bare node:http answering each page with the raw keyset query (no token, no MCP) vs the raw keyset query, 10 callers',
    ),
  ],
  [
    'read_ceiling_vs_raw',
    throughput(
      'context: bare node:http answering each read with the raw point read (no token, no MCP) vs the raw point read, 10 callers',
    ),
  ],
];
const REQUEST: Record<string, Measure> = Object.fromEntries([
  ...requestPath.slice(0, 2),
  ...ceilingEntries,
  ...requestPath.slice(2),
  ...perScheme,
]);

/**
 * The driver internals on against off (bench/internals.ts): each side's per-round req/s as a range,
 * and the rule an internal is kept by (issue 33 point 2): at least 10% faster with it, the two
 * sides' per-round ranges apart.
 */
const internals =
  (measure: string): Measure =>
  (result) => {
    const run = result as {
      on: number[];
      off: number[];
      rounds: number[];
      ratio: number;
    };
    const range = (values: number[]) =>
      `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;
    const apart = Math.min(...run.on) > Math.max(...run.off);
    return [
      {
        measure,
        figure: `on ${range(run.on)} vs off ${range(run.off)}`,
        ratio: run.ratio,
        rounds: run.rounds,
        target: '≥ 1.10, ranges apart',
        met: run.ratio >= 1.1 && apart,
      },
    ];
  };
const DRIVER_FIGURES: Record<string, string> = {
  internals_read: '`resources/read` req/s',
  internals_list: '`resources/list` pages/s',
  internals_query: '`query` primary-key point read req/s',
};
const DRIVER: Record<string, Measure> = Object.fromEntries(
  TOKEN_SCHEMES.flatMap(([suffix, label]) =>
    Object.entries(DRIVER_FIGURES).map(([key, what]): [string, Measure] => [
      `${key}_${suffix}`,
      internals(
        `${what}, driver internals on vs off (the same server, one handle each), 10 callers (${label})`,
      ),
    ]),
  ),
);

/** Commit → notification latency (notify-latency.ts): p50 and p99 targets, the context row. */
const notifyLatency =
  (measure: string): Measure =>
  (result) => {
    const run = result as P50 & {
      p99: number;
      fromUpdateSent: P50 & { p99: number };
    };
    return [
      targetRow(
        { measure: `${measure} (p50)`, figure: ms(run.p50) },
        atMost(5, '5 ms'),
        run.p50,
      ),
      targetRow(
        { measure: `${measure} (p99)`, figure: ms(run.p99) },
        atMost(25, '25 ms'),
        run.p99,
      ),
      {
        measure:
          'context: the same from when the UPDATE is sent (p50 / p99), its commit included',
        figure: `${run.fromUpdateSent.p50.toFixed(2)} / ${ms(run.fromUpdateSent.p99)}`,
      },
    ];
  };

const LIVE: Record<string, Measure> = {
  notify_latency_1000_streams: notifyLatency(
    'commit → notification at the client, 1,000 open streams',
  ),
  memory_per_idle_stream: (result) => {
    const { bytes, streams } = result as { bytes: number; streams: number };
    return [
      targetRow(
        {
          measure: `memory per idle listen stream (server heap after GC, ${streams} streams)`,
          figure: `${(bytes / 1024).toFixed(1)} KB`,
        },
        atMost(16 * 1024, '16 KB'),
        bytes,
      ),
    ];
  },
  fanout_10000_vs_bare_sse: (result) => {
    const run = result as {
      served: number;
      baseline: number;
      ratio: number;
      /** Per-round ratios, in runs that alternated the sides. */
      rounds?: number[];
    };
    return [
      targetRow(
        {
          measure:
            'one change to 10,000 streams, all delivered, vs a bare node:http SSE broadcast',
          figure: `${ms(run.served, 0)} vs ${ms(run.baseline, 0)}`,
          ratio: run.ratio,
          ...(run.rounds === undefined ? {} : { rounds: run.rounds }),
        },
        atMost(2),
        run.ratio,
      ),
    ];
  },
  read_p99_during_broadcast: (result) => {
    const { p99 } = result as { p99: number };
    return [
      targetRow(
        {
          measure: 'resources/read p99 while the broadcasts run (worst run)',
          figure: ms(p99, 1),
        },
        below(50, '50 ms'),
        p99,
      ),
    ];
  },
  writes_with_capture_vs_without_1: writes(
    'single-row updates/s with the capture triggers vs without, one writer',
    atLeast(0.65),
  ),
  writes_with_capture_vs_without_10: writes(
    'context: the same with 10 writers (NOTIFY serializes their commits)',
  ),
  writes_with_capture_vs_without_1_listening: writes(
    'context: one writer, with a pgmcp listener reading the log after each commit',
  ),
};

/** The navigator's read p50 and, where the result has it, its size against its budget. */
const navigator =
  (catalog: string): Measure =>
  (result) => {
    const run = result as P50 & { bytes?: number; budget?: number };
    const measure = `navigator (\`pg://{database}\`) of the ${catalog}`;
    return [
      targetRow(
        { measure: `${measure}, as a granted role (p50)`, figure: ms(run.p50) },
        atMost(50, '50 ms'),
        run.p50,
      ),
      ...(run.bytes === undefined || run.budget === undefined
        ? []
        : [
            targetRow(
              { measure: `${measure}: its size`, figure: `${run.bytes} B` },
              atMost(run.budget, `${run.budget} B (its budget)`),
              run.bytes,
            ),
          ]),
    ];
  };

/** The 2025-11-25 era (bench/legacy.ts). */
const LEGACY: Record<string, Measure> = {
  legacy_read_vs_modern: throughput(
    '`resources/read` req/s in open 2025-11-25 sessions vs the same requests in 2026-07-28, 10 callers',
    atLeast(0.9),
  ),
  legacy_list_vs_modern: throughput(
    '`resources/list` pages/s in open 2025-11-25 sessions vs the same requests in 2026-07-28, 10 callers',
    atLeast(0.9),
  ),
  legacy_notify_latency_1000_subscribers: (result) => {
    const rows = notifyLatency(
      'commit → `notifications/resources/updated` at the client, 1,000 subscribed 2025-11-25 sessions',
    )(result);
    const listen = (result as { listenStreams?: P50 & { p99: number } })
      .listenStreams;
    return listen === undefined
      ? rows
      : [
          ...rows,
          {
            measure:
              'context: the same with 1,000 listen streams, same server and run (p50 / p99)',
            figure: `${listen.p50.toFixed(2)} / ${ms(listen.p99)}`,
          },
        ];
  },
  legacy_memory_per_idle_session: (result) => {
    const { bytes, sessions } = result as { bytes: number; sessions: number };
    return [
      targetRow(
        {
          measure: `memory per idle 2025-11-25 session with one subscription and its GET stream (heap after GC, ${sessions} sessions)`,
          figure: `${(bytes / 1024).toFixed(1)} KB`,
        },
        atMost(16 * 1024, '16 KB'),
        bytes,
      ),
    ];
  },
};

const CATALOG: Record<string, Measure> = {
  catalog_first_page: p50(
    'first `resources/list` page of a 10,000-table catalog, as a granted role (p50)',
    atMost(50, '50 ms'),
  ),
  catalog_walk: (result) => {
    const run = result as {
      items: number;
      pages: number;
      pairs: { raw: { ms: number }; served: { ms: number } }[];
      ratio: number;
      ratios: number[];
    };
    const served = median(run.pairs.map((pair) => pair.served.ms));
    const raw = median(run.pairs.map((pair) => pair.raw.ms));
    return [
      targetRow(
        {
          measure: `walking the whole catalog (${run.items} entries, ${run.pages} pages) through pgmcp vs the same keyset query raw, speed`,
          figure: `${ms(served, 0)} vs ${ms(raw, 0)}`,
          ratio: run.ratio,
          rounds: run.ratios,
        },
        atLeast(0.5),
        run.ratio,
      ),
    ];
  },
  catalog_read: p50(
    "`resources/read` of one table's description, as a granted role (p50)",
    atMost(10, '10 ms'),
  ),
  catalog_login: (result) => {
    const { firstPage, read } = result as { firstPage: P50; read: P50 };
    return [
      {
        measure:
          'context: the same first page / description as the login (a superuser), p50',
        figure: `${firstPage.p50.toFixed(2)} / ${ms(read.p50)}`,
      },
    ];
  },
  catalog_navigator: navigator('10,000-table catalog'),
  catalog_navigator_100k: (result) => {
    const { buildMs, tables } = result as { buildMs?: number; tables: number };
    return [
      ...navigator('100,000-table catalog')(result),
      ...(buildMs === undefined
        ? []
        : [
            {
              measure: `context: making the ${tables.toLocaleString('en-US')}-table catalog once (a copy of the 10,000 and look-alike tables)`,
              figure: `${(buildMs / 1000).toFixed(0)} s`,
            },
          ]),
    ];
  },
  catalog_hints_growth: (result) => {
    const { tables, ratio } = result as {
      tables: { with: number; without: number }[];
      ratio: number;
    };
    const sum = (side: 'with' | 'without') =>
      tables.reduce((total, table) => total + table[side], 0);
    return [
      targetRow(
        {
          measure: `a description's bytes with value hints / without, largest of the demo's ${tables.length} tables`,
          figure: `${sum('with')} B vs ${sum('without')} B in all`,
          ratio,
        },
        atMost(2),
        ratio,
      ),
    ];
  },
  catalog_hints_read: p50(
    "`resources/read` of a demo table's description with its value hints (`shop.orders`, p50)",
    atMost(10, '10 ms'),
  ),
  catalog_few_first_page: (result) => [
    {
      measure:
        'context: the first (and only) page as a role that sees 10 of the 10,000 tables, p50',
      figure: ms((result as P50).p50),
    },
  ],
};

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

/** One single-row statement's throughput with every trigger against none (bench/storage.ts). */
interface TriggerWrites {
  with: number[];
  without: number[];
  ratio: number;
  rounds: number[];
}
const WRITE_STATEMENTS: [string, string][] = [
  ['priority', '`UPDATE` of `priority`'],
  ['text', '`UPDATE` of `text`'],
  ['readers', '`UPDATE` of `readers`'],
  ['insert', '`INSERT`'],
];

const STORAGE: Record<string, Measure> = {
  storage: (result) => {
    const run = result as {
      table: { bytes: number };
      beside: { name: string; bytes: number }[];
      ratio: number;
      rows: number;
      readerKeys: number;
    };
    const total = run.beside.reduce((sum, size) => sum + size.bytes, 0);
    return [
      targetRow(
        {
          measure:
            'everything pgmcp keeps beside `pgmcp.resources`, vs the table with its indexes',
          figure: `${mb(total)} vs ${mb(run.table.bytes)}`,
          ratio: run.ratio,
        },
        atMost(1),
        run.ratio,
      ),
      ...run.beside
        .filter((size) => size.bytes >= 1024 * 1024)
        .map((size) => ({
          measure: `context: \`${size.name}\` with its indexes`,
          figure: mb(size.bytes),
        })),
      {
        measure: 'context: stored resources / rows of `pgmcp.resource_listing`',
        figure: `${run.rows} / ${run.readerKeys}`,
      },
    ];
  },
  writes_all_triggers: (result) => {
    const runs = result as Record<string, TriggerWrites>;
    return WRITE_STATEMENTS.flatMap(([key, statement]) => {
      const run = runs[key];
      if (run === undefined) return [];
      return [
        targetRow(
          {
            measure: `single-row ${statement}/s with every pgmcp trigger vs none, one writer`,
            figure: `${median(run.with).toFixed(0)} vs ${median(run.without).toFixed(0)}`,
            ratio: run.ratio,
            rounds: run.rounds,
          },
          atLeast(0.8),
          run.ratio,
        ),
      ];
    });
  },
  writes_search_index: (result) => {
    const runs = result as Record<string, TriggerWrites>;
    return WRITE_STATEMENTS.flatMap(([key, statement]) => {
      const run = runs[key];
      if (run === undefined) return [];
      return [
        {
          measure: `context: single-row ${statement}/s with the search index vs without, one writer`,
          figure: `${median(run.with).toFixed(0)} vs ${median(run.without).toFixed(0)}`,
          ratio: run.ratio,
          rounds: run.rounds,
        },
      ];
    });
  },
};

interface ReplicaRun {
  replicas: number;
  cpuMsPerChange: number;
  missed: number;
  extra: number;
  byPurpose: Record<string, number>;
}

/** bench/replicas.ts: delivery's PostgreSQL CPU per change with 1 and 3 replicas. */
const replicaDelivery: Measure = (result) => {
  const run = result as {
    workload: string;
    shared: ReplicaRun[];
    unshared: ReplicaRun[];
  };
  const [one, three] = run.shared;
  if (one === undefined || three === undefined) return [];
  const ratio = three.cpuMsPerChange / one.cpuMsPerChange;
  const lost = [...run.shared, ...run.unshared].reduce(
    (sum, figures) => sum + figures.missed + figures.extra,
    0,
  );
  return [
    targetRow(
      {
        measure: `PostgreSQL CPU per committed change, 3 replicas vs 1 (${run.workload})`,
        figure: `${ms(three.cpuMsPerChange, 3)} vs ${ms(one.cpuMsPerChange, 3)}`,
        ratio,
      },
      atMost(1.2),
      ratio,
    ),
    targetRow(
      {
        measure: 'PostgreSQL CPU per committed change, 4 roles, 3 replicas',
        figure: ms(three.cpuMsPerChange, 3),
      },
      atMost(0.5, '0.5 ms'),
      three.cpuMsPerChange,
    ),
    targetRow(
      {
        measure: 'notifications missed or repeated, every run',
        figure: String(lost),
      },
      atMost(0, '0'),
      lost,
    ),
    ...replicaContext(three, run.unshared),
  ];
};

/** Context rows: the unshared runs, and where the 3 replicas' CPU went. */
function replicaContext(
  three: ReplicaRun,
  unshared: ReplicaRun[],
): Omit<Row, 'group'>[] {
  const [oneAlone, threeAlone] = unshared;
  const purposes = Object.entries(three.byPurpose)
    .filter(([, perChange]) => perChange > 0)
    .map(([purpose, perChange]) => `${purpose} ${perChange.toFixed(3)}`)
    .join(', ');
  const rows: Omit<Row, 'group'>[] = [];
  if (oneAlone !== undefined && threeAlone !== undefined)
    rows.push({
      measure:
        'context: the same with `PGMCP_SHARED_DELIVERY=off` (each replica decides itself), 3 replicas vs 1',
      figure: `${ms(threeAlone.cpuMsPerChange, 3)} vs ${ms(oneAlone.cpuMsPerChange, 3)}`,
      ratio: threeAlone.cpuMsPerChange / oneAlone.cpuMsPerChange,
    });
  rows.push({
    measure: 'context: 3 replicas, ms per change by connection purpose',
    figure: purposes,
  });
  return rows;
}

const REPLICAS: Record<string, Measure> = {
  replica_delivery: replicaDelivery,
};

/** bench/standby.ts: the standby server's req/s over the primary-only server's, who answered. */
const standbyThroughput =
  (measure: string): Measure =>
  (result) => {
    const run = result as Comparison & { standbyShare: number };
    return [
      {
        measure: `${measure}, 10 callers (${(run.standbyShare * 100).toFixed(1)}% answered by the standby)`,
        figure: `${run.served.perSecond.toFixed(0)} vs ${run.baseline.perSecond.toFixed(0)}`,
        ratio: run.ratio,
        rounds: run.rounds,
      },
    ];
  };

/** bench/standby.ts: a read sent as soon as its change's notification arrives, on each server. */
const standbyReadAfterNotify: Measure = (result) => {
  const run = result as {
    standby: { p50: number; p99: number };
    primary: { p50: number; p99: number };
    samples: number;
    stale: { primary: number; standby: number };
    standbyReads: Record<string, number>;
  };
  const measure = `resources/read right after its change's notification, standby server vs primary-only (${run.samples} reads each)`;
  const answered = Object.entries(run.standbyReads)
    .map(([key, count]) => `${key.replace('/', ' ')} ${count}`)
    .join(', ');
  return [
    {
      measure: `${measure} (p50)`,
      figure: `${ms(run.standby.p50)} / ${ms(run.primary.p50)}`,
      ratio: run.standby.p50 / run.primary.p50,
    },
    {
      measure: `${measure} (p99)`,
      figure: `${ms(run.standby.p99)} / ${ms(run.primary.p99)}`,
      ratio: run.standby.p99 / run.primary.p99,
    },
    {
      measure:
        'reads after a notification that missed the change, standby server / primary-only',
      figure: `${run.stale.standby} / ${run.stale.primary}`,
    },
    {
      measure:
        "the standby server's read transactions in those rounds (each read's, each listen's), by server and reason",
      figure: answered,
    },
  ];
};

const STANDBY: Record<string, Measure> = {
  standby_read: standbyThroughput(
    'resources/read req/s, server reading from the standby vs from the primary',
  ),
  standby_query: standbyThroughput(
    '`query` tool primary-key point read req/s, server reading from the standby vs from the primary',
  ),
  standby_read_after_notify: standbyReadAfterNotify,
};

const WAL: Record<string, Measure> = { wal_capture: walRows };

const GROUPS: [Group, Record<string, Measure>][] = [
  ['request', REQUEST],
  ['driver', DRIVER],
  ['storage', STORAGE],
  ['live', LIVE],
  ['replicas', REPLICAS],
  ['standby', STANDBY],
  ['wal', WAL],
  ['legacy', LEGACY],
  ['catalog', CATALOG],
];

/** Every row the summary's results give, in table order; keys without results are left out. */
export function benchmarkRows(summary: BenchSummary): Row[] {
  return GROUPS.flatMap(([group, measures]) =>
    Object.entries(measures).flatMap(([key, measure]) => {
      const result = summary.results[key];
      if (result === undefined) return [];
      return measure(result).map((row) => ({ group, ...row }));
    }),
  );
}

/** A Markdown table laid out as prettier lays it out, so `prettier --check` passes on it. */
export function markdownTable(header: string[], body: string[][]): string {
  const widths = header.map((cell, column) =>
    Math.max(3, cell.length, ...body.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`;
  return [
    line(header),
    line(widths.map((width) => '-'.repeat(width))),
    ...body.map(line),
  ].join('\n');
}

const day = (iso: string): string => iso.slice(0, 10);
const result = (row: Row): string =>
  row.met === undefined ? '' : row.met ? 'met' : 'not met';

/** The caption: when, with which versions, how. */
export function caption(summary: BenchSummary): string {
  const pg = summary.postgres;
  const settings =
    pg?.sharedBuffers === undefined
      ? ''
      : ` (\`shared_buffers\` ${pg.sharedBuffers}, autovacuum ${pg.autovacuum ?? 'unknown'})`;
  const partial = Object.entries(summary.partialRuns ?? {})
    .map(
      ([keys, run]) =>
        ` \`BENCH_ONLY=${keys}\` re-measured on ${day(run.date)}.`,
    )
    .join('');
  return (
    `\`npm run bench\` on ${day(summary.date)}: pgmcp ${summary.version}, Node ${summary.machine.node}, ` +
    `PostgreSQL ${pg?.version ?? 'unknown'}${settings}, ${summary.machine.cpus} CPUs; ` +
    `${summary.durationMs / 1000} s per measure after a warm-up, baseline and pgmcp alternated ` +
    `${summary.rounds} times${summary.order === 'abba' ? ' (ABBA: every other round pgmcp first)' : ''}, medians over rounds.` +
    `${summary.callers === undefined ? '' : ` ${summary.callers}`}${partial}`
  );
}

/** The results section of docs/benchmarks.md: caption, then one table per group. */
export function renderResults(summary: BenchSummary): string {
  const rows = benchmarkRows(summary);
  const titles: Record<Group, string> = {
    request: 'Request path (1,000,000 stored resources)',
    driver:
      'Driver internals on / off (`src/db/driver/`; kept only where met: at least 10% faster, per-round ranges apart)',
    storage:
      'Storage beside the table, and single-row writes (the same 1,000,000 resources)',
    live: 'Live updates',
    replicas:
      'Delivery with several replicas (built servers on one database of their own)',
    standby:
      'Reads from a hot standby (built servers on a private primary and standby; figures, no target)',
    wal: 'The WAL change source (its own database on a server with `wal_level = logical`)',
    legacy: '2025-11-25 sessions (the same 1,000,000 resources)',
    catalog:
      'Catalogs of 10,000 and 100,000 tables (their own databases; runs last)',
  };
  const tables = GROUPS.map(([group]) => group)
    .filter((group) => rows.some((row) => row.group === group))
    .map((group) => {
      const body = rows
        .filter((row) => row.group === group)
        .map((row) => [
          row.measure,
          row.figure,
          row.ratio?.toFixed(2) ?? '',
          row.rounds?.map((ratio) => ratio.toFixed(2)).join(', ') ?? '',
          row.target ?? '',
          result(row),
        ]);
      const header = [
        'measure',
        'pgmcp vs baseline',
        'ratio',
        'per-round ratios',
        'target',
        'result',
      ];
      return `### ${titles[group]}\n\n${markdownTable(header, body)}`;
    });
  const sizes = contextSizes(summary.results['catalog_context_sizes']);
  return [caption(summary), ...tables, ...sizes].join('\n\n');
}

interface Size {
  bytes: number;
  tokens: number;
}

/** The catalog group's context sizes: what an agent reads, in bytes and about tokens (bytes / 4). */
function contextSizes(result: unknown): string[] {
  if (result === undefined) return [];
  const { demo, catalog_10k: catalog } = result as Record<
    'demo' | 'catalog_10k',
    Record<'navigator' | 'schema' | 'table', Size> | undefined
  >;
  const cell = (size: Size | undefined) =>
    size === undefined ? '' : `${size.bytes} B (~${size.tokens} tokens)`;
  const body = (
    [
      ['navigator `pg://{database}`', 'navigator'],
      ['schema read (`shop`; `s01`)', 'schema'],
      ['table description (`shop.orders`; `s01.t0005`)', 'table'],
    ] as const
  ).map(([what, key]) => [what, cell(demo?.[key]), cell(catalog?.[key])]);
  return [
    '### Context an agent reads (bytes, and about bytes / 4 tokens)',
    markdownTable(
      ['read (Markdown)', 'demo database', '10,000-table catalog'],
      body,
    ),
  ];
}

/** What README calls each group that it sums up in a line rather than a table. */
const GROUP_NAMES: Record<Exclude<Group, 'request'>, string> = {
  driver: 'driver internals on vs off',
  storage: 'storage and writes',
  live: 'live updates',
  replicas: 'delivery with several replicas',
  standby: 'reads from a hot standby',
  wal: 'the WAL change source',
  legacy: 'the 2025-11-25 era',
  catalog: 'the schema catalog',
};

/**
 * README's short table: the request-path figures that have a target, each measure once with each
 * token scheme's figure side by side (met only when every scheme met it); every other group as one
 * line of how many of its targets were met, its rows in docs/benchmarks.md.
 */
export function renderReadmeResults(summary: BenchSummary): string {
  const merged = new Map<
    string,
    { figures: string[]; target: string; met: boolean | undefined }
  >();
  const counts = new Map<Group, { met: number; targets: number }>();
  for (const row of benchmarkRows(summary)) {
    // A group of figures without targets still gets its line.
    if (row.group !== 'request' && !counts.has(row.group))
      counts.set(row.group, { met: 0, targets: 0 });
    if (row.target === undefined) continue;
    if (row.group !== 'request') {
      const count = counts.get(row.group) ?? { met: 0, targets: 0 };
      count.targets += 1;
      if (row.met === true) count.met += 1;
      counts.set(row.group, count);
      continue;
    }
    const scheme = TOKEN_SCHEMES.find(([, label]) =>
      row.measure.endsWith(` (${label})`),
    );
    const measure =
      scheme === undefined
        ? row.measure
        : `${row.measure.slice(0, -(scheme[1].length + 3))} (${TOKEN_SCHEMES.map(([, label]) => label).join(' / ')})`;
    const figure = row.ratio === undefined ? row.figure : row.ratio.toFixed(2);
    const seen = merged.get(measure);
    if (seen === undefined)
      merged.set(measure, {
        figures: [figure],
        target: row.target,
        met: row.met,
      });
    else {
      seen.figures.push(figure);
      if (row.met !== undefined) seen.met = (seen.met ?? true) && row.met;
    }
  }
  const body = [...merged].map(([measure, row]) => [
    measure,
    row.figures.join(' / '),
    row.target,
    row.met === undefined ? '' : row.met ? 'met' : 'not met',
  ]);
  const others = [...counts].map(
    ([group, count]) =>
      `${GROUP_NAMES[group as Exclude<Group, 'request'>]}: ${count.targets === 0 ? 'figures only, no target' : `${count.met} of ${count.targets} targets met`}`,
  );
  return [
    `${caption(summary)} Ratios are pgmcp against a baseline measured alongside it; method, context ` +
      'rows and per-round figures in [docs/benchmarks.md](docs/benchmarks.md).',
    markdownTable(['measure', 'figure or ratio', 'target', 'result'], body),
    ...(others.length === 0
      ? []
      : [
          `Beyond requests (tables in [docs/benchmarks.md](docs/benchmarks.md)): ${others.join('; ')}.`,
        ]),
  ].join('\n\n');
}

/** `text` with what lies between `<!-- name:start -->` and `<!-- name:end -->` replaced. */
export function replaceBetweenMarkers(
  text: string,
  name: string,
  content: string,
): string {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from === -1 || to < from)
    throw new Error(`markers ${start} … ${end} not found in order`);
  return `${text.slice(0, from + start.length)}\n\n${content}\n\n${text.slice(to)}`;
}

/** Write the summary's tables into docs/benchmarks.md and README.md under `root`. */
export function writeBenchDocs(summary: BenchSummary, root: string): void {
  const write = (file: string, name: string, content: string) => {
    const target = path.join(root, file);
    writeFileSync(
      target,
      replaceBetweenMarkers(readFileSync(target, 'utf8'), name, content),
    );
  };
  write(
    path.join('docs', 'benchmarks.md'),
    'bench:results',
    renderResults(summary),
  );
  write('README.md', 'bench:summary', renderReadmeResults(summary));
}

/** Read a summary written by `npm run bench`. */
export function readSummary(file: string): BenchSummary {
  return JSON.parse(readFileSync(file, 'utf8')) as BenchSummary;
}
