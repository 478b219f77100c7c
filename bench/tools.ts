// The tools' request-path figures, run by bench/run.ts once per token scheme on the 1,000,000-row
// bench table: search latency as a role that reads 1 row in 10, the query tool's primary-key point
// read against a bare server running it the plain safe way (and, as context, the raw prepared
// point read), and tools/list against a bare server writing the same bytes. Results go under the
// keys below (plus the scheme's suffix); their targets are in bench/report.ts.
import type { CompareRuns, LoadCaller, LoadRunner, Run } from './load.js';

/** What run.ts lends: its loads, its alternation of baseline and pgmcp, and where results go. */
export interface ToolFiguresContext {
  /** The pgmcp endpoint. */
  readonly url: string;
  /** Every role's callers, and bench_reader's (it reads 1 row in 10). */
  readonly mix: readonly LoadCaller[];
  readonly readers: readonly LoadCaller[];
  /** The raw point read's statement (one $1: a stored resource's URI). */
  readonly pointRead: string;
  /** The raw point read of URI `uri` on the bench pool, from `concurrency` loops. */
  readonly rawPointReads: (
    concurrency: number,
    uri: (i: number) => string,
  ) => Promise<Run>;
  readonly load: LoadRunner;
  readonly compare: CompareRuns;
  /** A bare server answering each caller with the bytes pgmcp answers it for `kind`. */
  readonly startSameBytes: (kind: 'tools-list') => Promise<BareServer>;
  /** A bare server running the statement the plain safe way (role, READ ONLY, an audit row). */
  readonly startSafeQuery: () => Promise<BareServer>;
  readonly runs: (key: string) => boolean;
  readonly record: (key: string, result: unknown) => void;
}

interface BareServer {
  readonly url: string;
  close(): Promise<void>;
}

const ROWS = 1_000_000;
const throughputRatio = (base: Run, ours: Run): number =>
  ours.perSecond / base.perSecond;

/** Run the tools' figures BENCH_ONLY asks for (all when unset). */
export async function toolFigures(context: ToolFiguresContext): Promise<void> {
  const { url, runs, record, load } = context;

  // search p50, one caller at a time, as bench_reader: two words ("resource 4240") naming one of
  // its rows, so the index finds a handful of candidates among 1,000,000 documents.
  if (runs('search_p50_role10pct'))
    record(
      'search_p50_role10pct',
      await load(url, 1, { kind: 'tool-search', rows: ROWS }, context.readers),
    );

  // The query tool reading one row by primary key (a read-only transaction as the caller's role,
  // one statement, an audit row), 10 callers: against a bare server doing the same the plain safe
  // way (the target), and, as context, against the raw prepared point read.
  const queryWorkload = {
    kind: 'tool-query',
    rows: ROWS,
    sql: context.pointRead,
  } as const;
  if (runs('query_point_read_vs_bare_safe')) {
    const bare = await context.startSafeQuery();
    try {
      record(
        'query_point_read_vs_bare_safe',
        await context.compare(
          () => load(bare.url, 10, queryWorkload, context.mix),
          () => load(url, 10, queryWorkload, context.mix),
          throughputRatio,
        ),
      );
    } finally {
      await bare.close();
    }
  }
  if (runs('query_point_read_vs_raw'))
    record(
      'query_point_read_vs_raw',
      await context.compare(
        () =>
          context.rawPointReads(
            10,
            (i) => `bench:///r/${1 + ((i * 7919) % ROWS)}`,
          ),
        () => load(url, 10, queryWorkload, context.mix),
        throughputRatio,
      ),
    );

  // tools/list (the same page for everyone, serialized once) vs a bare server writing the same
  // bytes, 10 callers.
  if (runs('tools_list_vs_bare_bytes')) {
    const bare = await context.startSameBytes('tools-list');
    try {
      record(
        'tools_list_vs_bare_bytes',
        await context.compare(
          () => load(bare.url, 10, { kind: 'tools-list' }, context.mix),
          () => load(url, 10, { kind: 'tools-list' }, context.mix),
          throughputRatio,
        ),
      );
    } finally {
      await bare.close();
    }
  }
}
