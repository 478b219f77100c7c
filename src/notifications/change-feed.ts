// One listener per process: LISTEN pgmcp_changes on a dedicated connection (pg-listen), and read
// the change log in xid-horizon order on every wake-up, so nothing is lost when a notification is.
import { METRICS } from '../observability/index.js';
import {
  currentHorizon,
  pruneChanges,
  type ChangeRow,
  type DatabaseHandle,
} from '../db/index.js';
import { ChangeLogReader } from './change-log-reader.js';
import type { FeedSharing } from './feed-sharing.js';
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
  /**
   * A read that follows one during which a notification came starts at least this long after it
   * (default 20 ms), so a busy log is read, and decided, in batches; after a quiet read the next
   * starts at once.
   */
  readonly batchGapMs?: number;
  /**
   * Decide each change once per database (shared-delivery.ts): this replica leads or follows
   * instead of reading the log on every wake-up. Absent: it reads and decides on its own.
   */
  readonly sharing?: FeedSharing;
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
  const { sharing } = options;
  const spacing = spaced(() => {
    readNotifiedAt = notifiedAt;
    notifiedAt = undefined;
    return sharing === undefined ? reader.readOnce() : sharing.step(reader);
  }, options.batchGapMs ?? 20);
  const poller = createPoller(spacing.read, warn);
  // The safety net and a reconnect make even a follower read the log itself.
  const readSelf = (): Promise<void> => {
    sharing?.readSelf();
    return poller.poll();
  };
  const listener = await startListener(
    { ...options, warn },
    readSelf,
    (payload) => {
      notifiedAt ??= performance.now();
      spacing.woken();
      if (sharing === undefined || sharing.notified(payload, reader))
        void poller.poll();
    },
  );
  sharing?.start(poller.poll, (on) => listener.hearChanges(on));
  const stopTimers = startTimers(options, readSelf);
  return {
    readiness: () => readinessOf(listener, poller),
    poll: readSelf,
    async stop() {
      stopTimers();
      await poller.stop();
      await sharing?.stop();
      await listener.close();
    },
  };
}

/** Ready while listening and reading. */
function readinessOf(
  listener: { readonly listening: boolean },
  poller: Poller,
): ReturnType<ChangeFeed['readiness']> {
  const { listening } = listener;
  const { reading } = poller;
  return {
    ok: listening && reading,
    detail: { liveUpdates: { listening, reading } },
  };
}

/**
 * `read`, where a call that follows a read during which a notification came (a busy log) starts at
 * least `gapMs` after that read started; after a quiet read it starts at once.
 */
function spaced(
  read: () => Promise<void>,
  gapMs: number,
): { read: () => Promise<void>; woken: () => void } {
  let startedAt = -Infinity;
  let reading = false;
  let busy = false;
  return {
    woken() {
      if (reading) busy = true;
    },
    async read() {
      const wait = busy ? startedAt + gapMs - performance.now() : 0;
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      busy = false;
      reading = true;
      startedAt = performance.now();
      try {
        await read();
      } finally {
        reading = false;
      }
    },
  };
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
