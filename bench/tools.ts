// The tools' request-path figures (issue 15 point 8), run by bench/run.ts once per token scheme on
// the 1,000,000-row bench table: search latency as a role that reads 1 row in 10, the query tool's
// primary-key point read against the raw prepared point read, and tools/list against a bare
// node:http JSON echo. Results go under the keys below (plus the scheme's suffix); their targets
// are in bench/report.ts.
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
  readonly startEcho: () => Promise<{
    url: string;
    close: () => Promise<void>;
  }>;
  readonly runs: (key: string) => boolean;
  readonly record: (key: string, result: unknown) => void;
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
  // one statement, an audit row) vs the raw prepared point read, 10 callers.
  if (runs('query_point_read_vs_raw'))
    record(
      'query_point_read_vs_raw',
      await context.compare(
        () =>
          context.rawPointReads(
            10,
            (i) => `bench:///r/${1 + ((i * 7919) % ROWS)}`,
          ),
        () =>
          load(
            url,
            10,
            { kind: 'tool-query', rows: ROWS, sql: context.pointRead },
            context.mix,
          ),
        throughputRatio,
      ),
    );

  // tools/list (the same page for everyone, serialized once) vs the echo, 10 callers.
  if (runs('tools_list_vs_echo')) {
    const echo = await context.startEcho();
    try {
      record(
        'tools_list_vs_echo',
        await context.compare(
          () => load(echo.url, 10, { kind: 'tools-list' }, context.mix),
          () => load(url, 10, { kind: 'tools-list' }, context.mix),
          throughputRatio,
        ),
      );
    } finally {
      await echo.close();
    }
  }
}
