// What a change feed asks of shared delivery (shared-delivery.ts), so the feed (change-feed.ts)
// wakes it without knowing who leads.
import type { ChangeLogReader } from './change-log-reader.js';

/**
 * One replica's part in deciding each change once per database: it leads (reads the log, decides
 * for every replica's roles, publishes) or follows (delivers published batches, and reads the log
 * itself when they lag or as a safety net).
 */
export interface FeedSharing {
  /** The channel published batches wake replicas on, listened to beside the change log's. */
  readonly channel: string;
  /** One step in place of reading the log on every wake-up. */
  step(reader: ChangeLogReader): Promise<void>;
  /** A notification on the change log's channel or `channel`: whether to step now. */
  notified(channel: string, payload: unknown, reader: ChangeLogReader): boolean;
  /** This replica reads the log itself at its next step (the safety-net poll, a reconnect). */
  readSelf(): void;
  /** Start its timers, stepping through `poll`. */
  start(poll: () => Promise<void>): void;
  /** Stop the timers and give up leading. */
  stop(): Promise<void>;
}
