// Whether the driver internals (src/db/driver/) earn their keep: the same request figures from two
// pgmcp servers in one process, one whose database handle drives the internals and one on pg's
// public API only (PGMCP_DRIVER_PATCHES=off for its handle), alternated ABBA for the rounds with the
// same callers and tokens. An internal stays only where a figure is at least 10% faster with it
// and the two sides' per-round figures do not overlap (issue 33 point 2); the rows say which.
import { alternate } from './alternate.js';
import type { LoadCaller, LoadRunner, Run, Workload } from './load.js';

/** One figure: each side's per-round req/s, and the per-round on / off ratios with their median. */
export interface InternalsFigure {
  readonly on: number[];
  readonly off: number[];
  readonly rounds: number[];
  readonly ratio: number;
}

export interface InternalsContext {
  /** pgmcp with the internals on, and the same server with them off. */
  readonly onUrl: string;
  readonly offUrl: string;
  readonly callers: readonly LoadCaller[];
  readonly rounds: number;
  readonly load: LoadRunner;
  /** The figures to run, by key (without the `internals_` prefix and the scheme suffix). */
  readonly workloads: Record<string, Workload>;
  readonly record: (key: string, result: InternalsFigure) => void;
}

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** Each workload's figure, internals off (the baseline) and on alternated, 10 callers. */
export async function internalsFigures(
  context: InternalsContext,
): Promise<void> {
  const { load, callers } = context;
  for (const [key, workload] of Object.entries(context.workloads)) {
    const pairs: [Run, Run][] = await alternate(
      context.rounds,
      () => load(context.offUrl, 10, workload, callers),
      () => load(context.onUrl, 10, workload, callers),
    );
    const rounds = pairs.map(([off, on]) => on.perSecond / off.perSecond);
    context.record(`internals_${key}`, {
      off: pairs.map(([off]) => off.perSecond),
      on: pairs.map(([, on]) => on.perSecond),
      rounds,
      ratio: median(rounds),
    });
  }
}
