// One listener per process: LISTEN pgmcp_changes on a dedicated connection (pg-listen), and read
// the change log in xid-horizon order on every wake-up, so nothing is lost when a notification is.
import { METRICS } from '../observability/index.js';
import {
  currentHorizon,
  pruneChanges,
  readChangePage,
  type ChangePosition,
  type ChangePage,
  type ChangeRow,
  type DatabaseHandle,
  type DatabaseHistory,
} from '../db/index.js';

import { CHANGES_CHANNEL, describe, startListener } from './feed-listener.js';
import type { ListenChannel } from './listen-channel.js';

export { CHANGES_CHANNEL };

export interface ChangeFeedOptions {
  readonly db: DatabaseHandle;
  /** Deliver one batch; throwing means "not delivered", and the batch is read again later. */
  readonly publish: (changes: readonly ChangeRow[]) => Promise<void>;
  /**
   * The database's history changed (a restore, a failover, a crash that lost commits): changes
   * may have committed that the log can no longer be trusted to show. Tell every stream that what
   * it watches may be stale.
   */
  readonly resync: () => void;
  readonly retentionSeconds: number;
  readonly log: (line: string) => void;
  /** Failures (a lost listener, a failed read or prune, a changed history); `log` when absent. */
  readonly warn?: (line: string) => void;
  /** Rows read per page of the log. */
  readonly pageSize?: number;
  /** Read the log this often even without a notification (a safety net, and catch-up after outages). */
  readonly pollIntervalMs?: number;
  readonly pruneIntervalMs?: number;
  /** Other channels the feed's listener connection also LISTENs on (none by default). */
  readonly channels?: readonly ListenChannel[];
}

export interface FeedHealth {
  /** The LISTEN connection is up. */
  readonly listening: boolean;
  /** The last read of the log succeeded. */
  readonly reading: boolean;
}

export interface ChangeFeed {
  /** For /readyz: ready while listening and reading, with the details. */
  readiness(): { ok: boolean; detail: { liveUpdates: FeedHealth } };
  /** Read the log now (tests and the start-up path use it; notifications do it on their own). */
  poll(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Start listening. Resolves once LISTEN is in place and the starting horizon is read: changes
 * committed from then on are delivered.
 */
export async function startChangeFeed(
  options: ChangeFeedOptions,
): Promise<ChangeFeed> {
  const warn = options.warn ?? options.log;
  // Issue 35: a read that follows a notification times its delivery from the notification's
  // arrival; one that finds changes no notification announced is a poll fallback.
  let notifiedAt: number | undefined;
  let readNotifiedAt: number | undefined;
  const reader = new ChangeLogReader(
    {
      ...options,
      warn,
      publish: async (changes) => {
        await options.publish(changes);
        METRICS.changes.inc(changes.length);
        if (readNotifiedAt === undefined) METRICS.pollFallbacks.inc();
        else
          METRICS.changeDelivery.observe(
            (performance.now() - readNotifiedAt) / 1000,
          );
      },
    },
    await currentHorizon(options.db),
  );
  const poller = createPoller(() => {
    readNotifiedAt = notifiedAt;
    notifiedAt = undefined;
    return reader.readOnce();
  }, warn);
  const listener = await startListener(
    { ...options, warn },
    poller.poll,
    () => {
      notifiedAt ??= performance.now();
    },
  );
  const stopTimers = startTimers(options, poller.poll);
  return {
    readiness: () => ({
      ok: listener.listening && poller.reading,
      detail: {
        liveUpdates: {
          listening: listener.listening,
          reading: poller.reading,
        },
      },
    }),
    poll: poller.poll,
    async stop() {
      stopTimers();
      await poller.stop();
      await listener.close();
    },
  };
}

/**
 * Reads the log exactly once per change. It keeps a horizon H (every transaction below H has
 * finished and its rows were delivered) and the seqs it delivered from transactions at or above
 * H. Each read takes rows of transactions >= H that are visible now, delivers the ones not seen,
 * then moves H to the xmin of the read's first snapshot.
 */
class ChangeLogReader {
  readonly #options: ChangeFeedOptions;
  #horizon: bigint;
  /** Which history the horizon belongs to; set by the first read. */
  #history: DatabaseHistory | undefined;
  /** Seqs delivered from transactions at or above the horizon, with their transaction ids. */
  readonly #delivered = new Map<string, bigint>();

  constructor(options: ChangeFeedOptions, horizon: bigint) {
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

interface Poller {
  /** Read the log now, or once more after the read under way. */
  readonly poll: () => Promise<void>;
  /** The last read succeeded. */
  readonly reading: boolean;
  /** No more reads; resolves when the one under way has finished. */
  stop(): Promise<void>;
}

/** Coalesce wake-ups: one read at a time, and one more if woken during it. */
function createPoller(
  readOnce: () => Promise<void>,
  log: (line: string) => void,
): Poller {
  let reading = true;
  let polling: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  /** Whether the last read gave up on a lock (logged once until a read succeeds). */
  let heldUp = false;
  function poll(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (polling !== undefined) {
      again = true;
      return polling;
    }
    polling = (async () => {
      do {
        again = false;
        try {
          await readOnce();
          if (!reading || heldUp)
            log('live updates: reading the change log again');
          reading = true;
          heldUp = false;
        } catch (error) {
          METRICS.changeFeedFailures.inc();
          // Issue 34 point 2: a lock someone holds on pgmcp's tables holds up every replica's read
          // alike; readiness stays this replica's own (listener up, the database reachable), so
          // the lock does not take every replica out of service. The next wake-up reads again.
          // A read cut by statement_timeout is not a lock: it fails readiness as any failure does.
          if (heldUpByLock(error)) {
            if (!heldUp)
              log(
                `live updates: reading the change log waited too long for a lock (${describe(error)}); retrying`,
              );
            heldUp = true;
            return;
          }
          if (reading)
            log(
              `live updates: reading the change log failed (${describe(error)}); retrying`,
            );
          reading = false;
          return;
        }
      } while (again && !stopped);
    })().finally(() => {
      polling = undefined;
    });
    return polling;
  }
  return {
    poll,
    get reading() {
      return reading;
    },
    async stop() {
      stopped = true;
      await polling;
    },
  };
}

/** A lock wait past lock_timeout (55P03). */
function heldUpByLock(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === '55P03') return true;
  }
  return false;
}

/** The safety-net poll and the pruning of old changes (once now, then periodically). */
function startTimers(
  options: ChangeFeedOptions,
  poll: () => Promise<void>,
): () => void {
  const pollTimer = setInterval(
    () => void poll(),
    options.pollIntervalMs ?? 2000,
  );
  const prune = (): void => {
    pruneChanges(options.db, options.retentionSeconds).then(
      (count) => {
        if (count > 0) options.log(`live updates: pruned ${count} old changes`);
      },
      (error: unknown) => {
        METRICS.changeFeedFailures.inc();
        (options.warn ?? options.log)(
          `live updates: pruning the change log failed (${describe(error)})`,
        );
      },
    );
  };
  const pruneTimer = setInterval(prune, options.pruneIntervalMs ?? 60_000);
  pollTimer.unref();
  pruneTimer.unref();
  prune();
  return () => {
    clearInterval(pollTimer);
    clearInterval(pruneTimer);
  };
}

/**
 * Why `page` cannot come from the history the feed has been reading (`previous`, up to `horizon`),
 * or undefined when it can. Transaction ids (xid8, with epoch) and the WAL position never go back
 * within one history; a restore or a lagging standby's promotion sends them back, and a promotion
 * or another cluster also changes the timeline or the system identifier.
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
