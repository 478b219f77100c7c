// The change log read exactly once per change, in xid-horizon order (change-feed.ts wakes it), and
// told of rows delivered another way (a batch the feed leader published: shared-delivery.ts).
import {
  readChangePage,
  type ChangePosition,
  type ChangePage,
  type ChangeRow,
  type DatabaseHandle,
  type DatabaseHistory,
} from '../db/index.js';

/** What a reader needs of its feed's options (ChangeFeedOptions in change-feed.ts). */
export interface ChangeLogReaderOptions {
  readonly db: DatabaseHandle;
  /** Deliver one batch; throwing means "not delivered", and the batch is read again later. */
  readonly publish: (changes: readonly ChangeRow[]) => Promise<void>;
  /** The database's history changed: tell every stream what it watches may be stale. */
  readonly resync: () => void;
  readonly log: (line: string) => void;
  readonly warn?: (line: string) => void;
  /** Rows read per page of the log. */
  readonly pageSize?: number;
}

/**
 * Reads the log exactly once per change. It keeps a horizon H (every transaction below H has
 * finished and its rows were delivered) and the seqs it delivered from transactions at or above
 * H. Each read takes rows of transactions >= H that are visible now, delivers the ones not seen,
 * then moves H to the xmin of the read's first snapshot.
 */
export class ChangeLogReader {
  readonly #options: ChangeLogReaderOptions;
  #horizon: bigint;
  /** Which history the horizon belongs to; set by the first read. */
  #history: DatabaseHistory | undefined;
  /** Seqs delivered from transactions at or above the horizon, with their transaction ids. */
  readonly #delivered = new Map<string, bigint>();

  constructor(options: ChangeLogReaderOptions, horizon: bigint) {
    this.#options = options;
    this.#horizon = horizon;
  }

  async readOnce(): Promise<void> {
    const pageSize = this.#options.pageSize ?? 1000;
    let after: ChangePosition | undefined;
    let nextHorizon: bigint | undefined;
    for (;;) {
      const page = await readChangePage(this.#options.db, {
        horizon: this.#horizon,
        after,
        limit: pageSize,
      });
      if (nextHorizon === undefined) {
        const changed = historyChange(this.#history, this.#horizon, page);
        this.#history = page.history;
        if (changed !== undefined) {
          this.#resynchronise(changed, page.snapshotXmin);
          continue;
        }
        nextHorizon = page.snapshotXmin;
      }
      const fresh = page.rows.filter((row) => !this.#delivered.has(row.seq));
      if (fresh.length > 0) {
        await this.#options.publish(fresh);
        for (const row of fresh) this.#delivered.set(row.seq, row.txid);
      }
      const last = page.rows.at(-1);
      if (page.rows.length < pageSize || last === undefined) break;
      after = { txid: last.txid, seq: last.seq };
    }
    if (nextHorizon > this.#horizon) this.#horizon = nextHorizon;
    for (const [seq, txid] of this.#delivered)
      if (txid < this.#horizon) this.#delivered.delete(seq);
  }

  /** Whether `row` was delivered: by a read of the log, or marked (markDelivered). */
  hasDelivered(row: Pick<ChangeRow, 'seq' | 'txid'>): boolean {
    return row.txid < this.#horizon || this.#delivered.has(row.seq);
  }

  /** Whether the row numbered `seq` of a transaction at or above the horizon was delivered. */
  hasDeliveredSeq(seq: string): boolean {
    return this.#delivered.has(seq);
  }

  /** `rows` were delivered another way (a published batch): later reads skip them. */
  markDelivered(rows: readonly ChangeRow[]): void {
    for (const row of rows)
      if (row.txid >= this.#horizon) this.#delivered.set(row.seq, row.txid);
  }

  /**
   * Start again in the new history at `snapshotXmin`: what committed below it finished before
   * the streams are told their view may be stale, so re-reading covers it; what commits from
   * there on is read from the log as usual. The delivered seqs belong to the old history.
   */
  #resynchronise(reason: string, snapshotXmin: bigint): void {
    (this.#options.warn ?? this.#options.log)(
      `live updates: the database's history changed (${reason}); every stream is told its resources may have changed, and the change log is read again from now`,
    );
    this.#horizon = snapshotXmin;
    this.#delivered.clear();
    this.#options.resync();
  }
}

/**
 * Why `page` cannot come from the history the feed has been reading (`previous`, up to `horizon`),
 * or undefined when it can. Transaction ids (xid8, with epoch) and the WAL position never go back
 * within one history; a restore or a lagging standby's promotion sends them back, and a promotion
 * or another cluster also changes the timeline or the system identifier. A new slot of the WAL
 * change source (its capture epoch) may have missed changes too.
 */
function historyChange(
  previous: DatabaseHistory | undefined,
  horizon: bigint,
  page: ChangePage,
): string | undefined {
  const now = page.history;
  if (previous !== undefined) {
    if (
      previous.systemId !== null &&
      now.systemId !== null &&
      previous.systemId !== now.systemId
    )
      return 'another database system identifier';
    if (now.timeline !== previous.timeline)
      return `timeline ${previous.timeline} → ${now.timeline}`;
    if (now.walLsn < previous.walLsn) return 'the WAL position went back';
    if (now.captureEpoch !== previous.captureEpoch)
      return 'the WAL change source has a new slot';
  }
  if (page.snapshotXmin < horizon) return 'transaction ids went back';
  return undefined;
}
