// The WAL change source's rows in the bench's tables (bench/wal.ts, result key `wal_capture`): the
// writers' rate under pgmcp's source against an inert pgoutput consumer (the target), against no
// WAL reader (context), where the source's CPU goes, and commit → NOTIFY latency.

/** One side of one round, as bench/wal.ts records it. */
interface SideRound {
  readonly perSecond: number;
  readonly cpuPerThousand: {
    readonly walsender: number;
    readonly log: number;
    readonly node: number;
  };
  readonly batches: number;
  readonly rowsLogged: number;
}

type Side = 'none' | 'inert' | 'capture';

/** The `wal_capture` result. */
interface WalResult {
  readonly seconds: number;
  readonly writer: string;
  readonly throughputRatio: number;
  readonly vsNoneRatio: number;
  readonly ratios: readonly number[];
  readonly vsNoneRatios: readonly number[];
  readonly rounds: readonly Record<Side, SideRound>[];
  readonly commitToNotify: { readonly p50: number; readonly p99: number };
  readonly samples: number;
  /** Absent in runs before it was measured. */
  readonly commitToClient?: Record<
    'wal' | 'triggers',
    { readonly p50: number; readonly p99: number; readonly samples: number }
  >;
}

/** A row as report.ts lays it out (its group added there). */
export interface WalRow {
  readonly measure: string;
  readonly figure: string;
  readonly ratio?: number;
  readonly rounds?: readonly number[];
  readonly target?: string;
  readonly met?: boolean;
}

/** The bar, from the issue: at least 0.9 of the same writes with the inert consumer. */
const TARGET = 0.9;

const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** The rows of one `wal_capture` result. */
export function walRows(result: unknown): WalRow[] {
  const run = result as WalResult;
  const of = (side: Side, pick: (round: SideRound) => number): number =>
    median(run.rounds.map((round) => pick(round[side])));
  const rate = (side: Side) => of(side, (round) => round.perSecond).toFixed(0);
  const cpu = (side: Side, part: keyof SideRound['cpuPerThousand']) =>
    of(side, (round) => round.cpuPerThousand[part]).toFixed(0);
  const writes = `single-row UPDATEs a second, 4 ${run.writer} writers, ${run.seconds} s a side`;
  const inertVsNone = run.rounds.map(
    (round) => round.inert.perSecond / round.none.perSecond,
  );
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  return [
    {
      measure: `${writes}: pgmcp's WAL source vs an inert pgoutput consumer`,
      figure: `${rate('capture')} vs ${rate('inert')}`,
      ratio: run.throughputRatio,
      rounds: run.ratios,
      target: `≥ ${TARGET.toFixed(2)}`,
      met: run.throughputRatio >= TARGET,
    },
    {
      measure: `context: the same, pgmcp's WAL source vs no WAL reader`,
      figure: `${rate('capture')} vs ${rate('none')}`,
      ratio: run.vsNoneRatio,
      rounds: run.vsNoneRatios,
    },
    {
      measure: 'context: the same, the inert consumer vs no WAL reader',
      figure: `${rate('inert')} vs ${rate('none')}`,
      ratio: median(inertVsNone),
      rounds: inertVsNone,
    },
    {
      measure:
        'context: CPU ms per 1,000 updates (medians over rounds), WAL source: walsender, log session, Node; inert: walsender, Node',
      figure: `${cpu('capture', 'walsender')}, ${cpu('capture', 'log')}, ${cpu('capture', 'node')}; ${cpu('inert', 'walsender')}, ${cpu('inert', 'node')}`,
    },
    {
      measure:
        'context: changes per log commit of the WAL source (median over rounds)',
      figure: of('capture', (round) =>
        round.batches === 0 ? 0 : round.rowsLogged / round.batches,
      ).toFixed(1),
    },
    {
      measure: `an UPDATE's commit → the WAL source's NOTIFY for it, one update at a time (p50 / p99, ${run.samples} updates)`,
      figure: `${ms(run.commitToNotify.p50)} / ${ms(run.commitToNotify.p99)}`,
    },
    ...clientRows(run),
  ];
}

/** Commit → a listen stream's notification through a built server, with each source. */
function clientRows(run: WalResult): WalRow[] {
  const client = run.commitToClient;
  if (client === undefined) return [];
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  return [
    {
      measure: `an UPDATE's commit → the notification at a client's listen stream, built server, wal source, one update at a time (p50 / p99, ${client.wal.samples} updates)`,
      figure: `${ms(client.wal.p50)} / ${ms(client.wal.p99)}`,
    },
    {
      measure: 'context: the same with capture triggers (p50 / p99)',
      figure: `${ms(client.triggers.p50)} / ${ms(client.triggers.p99)}`,
    },
  ];
}
