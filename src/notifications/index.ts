// notifications/: how a committed change reaches a listen stream (the change path, below, step by
// step in order), and the subscriptions/listen method that opens the streams.
import {
  CHANGE_VISIBILITY,
  runRequestQuery,
  type ChangeRow,
  type DatabaseHandle,
} from '../db/index.js';
import { startChangeFeed, type ChangeFeed } from './change-feed.js';
import { createSharedDelivery } from './shared-delivery.js';
import {
  enqueueHeard,
  whoMayHear,
  type Authorize,
  type PublishedChange,
} from './role-batches.js';
import type { ListenChannel } from './listen-channel.js';
import type { StreamRegistry } from './stream-registry.js';

export {
  CHANGES_CHANNEL,
  startChangeFeed,
  type ChangeFeed,
  type ChangeFeedOptions,
  type FeedHealth,
} from './change-feed.js';
export type { ListenChannel } from './listen-channel.js';
export {
  type Authorize,
  type PublishedChange,
  type Visibility,
} from './role-batches.js';
export {
  StreamRegistry,
  subscriptionKeys,
  type StreamRegistryOptions,
} from './stream-registry.js';
export { createListenMethod, type ListenDependencies } from './listen.js';
export { StreamQueue } from './stream-queue.js';

/** A database whose change log feeds the streams (resources/' CatalogSource is one). */
export interface ChangeSource {
  /** Prefixes the feed's log lines when there are several databases. */
  readonly name: string;
  readonly db: DatabaseHandle;
}

export interface ChangePathOptions<TSource extends ChangeSource> {
  readonly sources: readonly TSource[];
  readonly streams: StreamRegistry;
  /**
   * Step 2, what one logged change means for URIs: the resources subscribers of it hear of, and
   * whether lists may have changed. resources/ owns URIs, collections and the catalog's scope, and
   * notifications/ may not import resources/ (the layers in eslint.config.js), so the composition
   * root hands that function in here, as this one named step.
   */
  readonly deliveredChanges: (
    source: TSource,
    change: ChangeRow,
  ) => readonly PublishedChange[];
  /**
   * Drop what resources/ remembers of `source`'s catalog (which roles have entries): a schema
   * change, or a changed history, may have made it wrong.
   */
  readonly forgetCatalog: (source: TSource) => void;
  readonly retentionSeconds: number;
  readonly log: (line: string) => void;
  /** Failures of a feed (issue 35: logged at warn); `log` when absent. */
  readonly warn?: (line: string) => void;
  /** Read each log this often even without a notification (default: the feed's). */
  readonly pollIntervalMs?: number;
  /** Other channels the main database's (the first source's) listener also LISTENs on. */
  readonly channels?: readonly ListenChannel[];
  /**
   * Decide who may hear each change once per database for every replica (shared-delivery.ts;
   * default true); false: this process reads each log and decides on its own.
   */
  readonly shareDecisions?: boolean;
  /** How long a committed change waits for the leader's decisions before this replica decides itself. */
  readonly leaderLagMs?: number;
}

/**
 * Start the change path for every source:
 *
 * 1. read the log: one change feed per database (change-feed.ts) hands over new rows in batches;
 * 2. what they mean: `deliveredChanges` maps each row to the URIs it changes;
 * 3. decide who may hear: one access check per role among the streams that could care
 *    (role-batches.ts), the query being `authorizeIn` below;
 * 4. enqueue: each stream's share goes on its queue (stream-queue.ts), written until its client
 *    pushes back.
 *
 * And when a database's history changes (a restore, a failover), `resync`.
 * Resolves once every feed listens. The returned feed polls and stops them all; it is ready when
 * every one is, and otherwise says why the first is not.
 */
export async function startChangePath<TSource extends ChangeSource>(
  options: ChangePathOptions<TSource>,
): Promise<ChangeFeed> {
  const feeds: ChangeFeed[] = [];
  try {
    for (const source of options.sources)
      feeds.push(await startSourceFeed(options, source));
  } catch (error) {
    for (const feed of feeds) await feed.stop().catch(() => undefined);
    throw error;
  }
  return everyFeed(feeds);
}

/** One source's feed: shared with the other replicas unless asked not to. */
function startSourceFeed<TSource extends ChangeSource>(
  options: ChangePathOptions<TSource>,
  source: TSource,
): Promise<ChangeFeed> {
  const log =
    options.sources.length === 1
      ? options.log
      : (line: string) => options.log(`${source.name}: ${line}`);
  const warn = (line: string): void => {
    const warnLine = options.warn ?? options.log;
    warnLine(options.sources.length === 1 ? line : `${source.name}: ${line}`);
  };
  const shared =
    options.shareDecisions === false
      ? undefined
      : createSharedDelivery({
          db: source.db.feed,
          streams: options.streams,
          meaning: (rows) => meaningOf(options, source, rows),
          authorize: authorizeIn(source.db.feed),
          log,
          warn,
          lagMs: options.leaderLagMs,
          leadRetryMs: options.pollIntervalMs,
        });
  return startChangeFeed({
    // The feed's own pool: live updates never wait behind requests (issue 32 point 4).
    db: source.db.feed,
    publish: shared?.publish ?? ((rows) => deliverRows(options, source, rows)),
    resync: () => resync(options, source),
    retentionSeconds: options.retentionSeconds,
    log,
    warn,
    pollIntervalMs: options.pollIntervalMs,
    sharing: shared?.sharing,
    channels: source === options.sources[0] ? options.channels : undefined,
  });
}

/** Step 2 for one batch: the changes subscribers hear of. */
function meaningOf<TSource extends ChangeSource>(
  options: ChangePathOptions<TSource>,
  source: TSource,
  rows: readonly ChangeRow[],
): readonly PublishedChange[] {
  // A schema change (DDL, GRANT, REVOKE) may change whose catalog has entries.
  if (rows.some((row) => row.kind === 'schema')) options.forgetCatalog(source);
  return rows.flatMap((row) => options.deliveredChanges(source, row));
}

/** Steps 2 to 4 for one batch of `source`'s log. Throwing means "not delivered": read it again. */
async function deliverRows<TSource extends ChangeSource>(
  options: ChangePathOptions<TSource>,
  source: TSource,
  rows: readonly ChangeRow[],
): Promise<void> {
  const changes = meaningOf(options, source, rows);
  await deliverChanges(options.streams, changes, authorizeIn(source.db.feed));
}

/** Steps 3 and 4: decide who may hear of `changes` (with `authorize`), then enqueue it. */
export async function deliverChanges(
  streams: StreamRegistry,
  changes: readonly PublishedChange[],
  authorize: Authorize,
): Promise<void> {
  const hearing = await whoMayHear(streams, changes, authorize);
  await enqueueHeard(streams, hearing);
}

// Access checks run with no client to cancel them.
const BACKGROUND = new AbortController().signal;

/**
 * Step 3's query: which seqs of `db`'s change log a role may hear of, asked as the role in that
 * database (CHANGE_VISIBILITY: the change log's row-level security says before and after).
 */
function authorizeIn(db: DatabaseHandle): Authorize {
  return async function authorize(principal, seqs) {
    const rows = await runRequestQuery(
      { db, principal, cancellation: BACKGROUND },
      CHANGE_VISIBILITY,
      { seqs },
    );
    return new Map(
      rows.map((row) => [
        row.seq,
        { before: row.before, after: row.after, sensitive: row.sensitive },
      ]),
    );
  };
}

/**
 * `source`'s history changed, so its log cannot say what changed: forget cached catalog facts and
 * tell every stream that what it watches may be stale.
 */
function resync<TSource extends ChangeSource>(
  options: ChangePathOptions<TSource>,
  source: TSource,
): void {
  options.forgetCatalog(source);
  // Streams are not told apart by database: any of them may watch `source`.
  options.streams.markAllStale();
}

/** One feed standing for `feeds`: ready when all are, polled and stopped together. */
function everyFeed(feeds: readonly ChangeFeed[]): ChangeFeed {
  return {
    readiness() {
      const states = feeds.map((feed) => feed.readiness());
      return (
        states.find((state) => !state.ok) ??
        (states[0] as ReturnType<ChangeFeed['readiness']>)
      );
    },
    async poll() {
      await Promise.all(feeds.map((feed) => feed.poll()));
    },
    async stop() {
      await Promise.all(feeds.map((feed) => feed.stop()));
    },
  };
}
