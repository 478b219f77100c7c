// What a change feed asks of shared delivery (shared-delivery.ts), so the feed (change-feed.ts)
// wakes it without knowing who leads.
import type { ChangeLogReader } from './change-log-reader.js';

/**
 * One replica's part in deciding each change once per database: it leads (reads the log, decides
 * for every replica's roles, publishes) or follows (delivers published batches, and reads the log
 * itself when they lag or as a safety net).
 */
export interface FeedSharing {
  /** One step in place of reading the log on every wake-up. */
  step(reader: ChangeLogReader): Promise<void>;
  /** A wake-up on the change log's channel: whether to step now. */
  notified(payload: unknown, reader: ChangeLogReader): boolean;
  /** This replica reads the log itself at its next step (the safety-net poll, a reconnect). */
  readSelf(): void;
  /**
   * Start its timers, stepping through `poll`; `hearChanges` turns the feed's LISTEN to the change
   * log's channel on (leading) or off (following: it fetches the leader's batches on a timer).
   */
  start(
    poll: () => Promise<void>,
    hearChanges: (on: boolean) => Promise<void>,
  ): void;
  /** Stop the timers and give up leading. */
  stop(): Promise<void>;
}
