// Issue 34 point 3: who may hear each change is decided once per database. The feed leader (a
// session advisory lock) reads the log, decides for every role any replica listens as, publishes
// the batch; the others deliver from it, and read the log themselves when batches lag a committed
// change past a short bound or at the safety-net poll: a lost leader delays, never loses.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Principal } from '../auth/index.js';
import { METRICS } from '../observability/index.js';
import {
  createFeedLeadership,
  latestChange,
  latestFeedBatch,
  readFeedBatches,
  type ChangeRow,
  type DatabaseHandle,
  type FeedBatch,
  type FeedLeadership,
} from '../db/index.js';
import type { ChangeLogReader } from './change-log-reader.js';
import type { FeedSharing } from './feed-sharing.js';
import {
  batchRoleKey,
  decodeDecisions,
  decodePrincipals,
  decodeRows,
  encodeDecisions,
  encodeRows,
} from './published-batch.js';
import {
  decideEach,
  enqueueHeard,
  whoMayHear,
  type Authorize,
  type PublishedChange,
  type Visibility,
} from './role-batches.js';
import {
  startRegistration,
  REFRESH_MS,
  type Registration,
} from './replica-registration.js';
import type { StreamRegistry } from './stream-registry.js';
import { deniedSharing, notifiedSeq } from './sharing-signals.js';

export interface SharedDeliveryOptions {
  /** The feed's handle of the database. */
  readonly db: DatabaseHandle;
  readonly streams: StreamRegistry;
  /** What rows mean to subscribers (the change path's step 2, with forgetting the catalog). */
  readonly meaning: (rows: readonly ChangeRow[]) => readonly PublishedChange[];
  /** The access check as a role (index.ts authorizeIn). */
  readonly authorize: Authorize;
  readonly log: (line: string) => void;
  readonly warn: (line: string) => void;
  /** How long a committed change waits for the leader's batch before a follower decides itself. */
  readonly lagMs?: number;
  /** How often a follower tries to become the leader. */
  readonly leadRetryMs?: number;
}

/** A replica not seen for this long is left out of the leader's decisions. */
const REPLICA_EXPIRY_SECONDS = 15;
/** Published batches are kept this long (a follower further behind reads the log itself). */
const BATCH_RETENTION_SECONDS = 60;
const BATCH_PAGE = 50;
/** How often a follower with streams fetches the leader's batches. */
const FOLLOW_MS = 100;

/** The parts of the change path for one database that decide once for every replica. */
export interface SharedDelivery {
  readonly sharing: FeedSharing;
  /** The feed's publish: a leader decides and publishes; a follower reading the log decides itself. */
  readonly publish: (rows: readonly ChangeRow[]) => Promise<void>;
}

export function createSharedDelivery(
  options: SharedDeliveryOptions,
): SharedDelivery {
  const delivery = new Sharing(options);
  return { sharing: delivery, publish: (rows) => delivery.publish(rows) };
}

class Sharing implements FeedSharing {
  readonly #options: SharedDeliveryOptions;
  readonly #replica = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  readonly #leadership: FeedLeadership;
  readonly #lagMs: number;
  #lastBatch: bigint | undefined;
  #lastLeadTry = -Infinity;
  #caughtUp = false;
  #disabled = false;
  #selfReadDue = true;
  /** Seqs notified committed and not yet delivered, with when they were noticed. */
  readonly #awaited = new Map<string, number>();
  #others = new Map<string, Principal>();
  #othersListen = false;
  #othersReadAt = -Infinity;
  #prunedAt = -Infinity;
  #poll: (() => Promise<void>) | undefined;
  #hearChanges: ((on: boolean) => Promise<void>) | undefined;
  /** Whether the feed LISTENs to the change log's channel (it starts listening); undefined: unsure. */
  #hearing: boolean | undefined = true;
  #reader: ChangeLogReader | undefined;
  #probeTimer: NodeJS.Timeout | undefined;
  #followTimer: NodeJS.Timeout | undefined;
  #lagTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #registration: Registration | undefined;

  constructor(options: SharedDeliveryOptions) {
    this.#options = options;
    this.#lagMs = options.lagMs ?? 1000;
    this.#leadership = createFeedLeadership(options.db, () => {
      this.#selfReadDue = true;
      options.warn(
        'live updates: lost the feed leader session; following the next leader',
      );
    });
  }

  async step(reader: ChangeLogReader): Promise<void> {
    if (this.#disabled) return reader.readOnce();
    try {
      await this.#sharedStep(reader);
    } catch (error) {
      if (!deniedSharing(error)) throw error;
      await this.#disable(error);
      await reader.readOnce();
    }
  }

  /**
   * A login without migration 0035's grants cannot share: this replica reads and decides on its
   * own from now on, as with PGMCP_SHARED_DELIVERY=off.
   */
  async #disable(error: unknown): Promise<void> {
    this.#disabled = true;
    this.#options.warn(
      `live updates: this login may not use the shared delivery tables (${error instanceof Error ? error.message : String(error)}); this replica decides who may hear each change on its own (operations.md "The listener's login")`,
    );
    await this.#leadership.close();
    this.#hearing = undefined;
    await this.#hear(true);
  }

  async #sharedStep(reader: ChangeLogReader): Promise<void> {
    this.#reader = reader;
    this.#lastBatch ??= await latestFeedBatch(this.#options.db);
    const leading = await this.#lead();
    await this.#hear(leading);
    if (leading) {
      // Batches of a previous leader first, once: a new leader's own batches follow them.
      if (!this.#caughtUp) await this.#consume(reader);
      this.#caughtUp = true;
      await this.#leaderChores();
      this.#selfReadDue = false;
      await reader.readOnce();
      this.#awaited.clear();
      return;
    }
    this.#caughtUp = false;
    await this.#consume(reader);
    if (!this.#selfReadDue && !this.#lagging()) return;
    this.#selfReadDue = false;
    const started = performance.now();
    try {
      await reader.readOnce();
    } catch (error) {
      this.#selfReadDue = true;
      throw error;
    }
    // The read saw every change committed before it started.
    for (const [seq, noticed] of this.#awaited)
      if (noticed <= started) this.#awaited.delete(seq);
  }

  notified(payload: unknown, reader: ChangeLogReader): boolean {
    if (this.#disabled || this.#leadership.leading) return true;
    // A follower still listening (until its first step): the batches should bring it.
    const seq = notifiedSeq(payload);
    if (seq === undefined) return true;
    if (this.#options.streams.size === 0) return false;
    if (!reader.hasDeliveredSeq(seq) && !this.#awaited.has(seq)) {
      this.#awaited.set(seq, performance.now());
      this.#armLagTimer();
    }
    return false;
  }

  readSelf(): void {
    this.#selfReadDue = true;
  }

  start(
    poll: () => Promise<void>,
    hearChanges: (on: boolean) => Promise<void>,
  ): void {
    this.#poll = poll;
    this.#hearChanges = hearChanges;
    this.#registration = startRegistration(this.#options, this.#replica);
    this.#probeTimer = setInterval(
      () => void this.#probe(),
      Math.max(50, this.#lagMs / 2),
    );
    this.#probeTimer.unref();
    // A follower listens to nothing (change-feed.ts says why): it fetches batches on a timer.
    this.#followTimer = setInterval(() => {
      if (
        !this.#disabled &&
        !this.#leadership.leading &&
        this.#options.streams.size > 0
      )
        void poll();
    }, FOLLOW_MS);
    this.#followTimer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#probeTimer);
    clearInterval(this.#followTimer);
    clearTimeout(this.#lagTimer);
    await this.#registration?.stop();
    await this.#leadership.close();
  }

  async publish(rows: readonly ChangeRow[]): Promise<void> {
    if (!this.#leadership.leading) {
      const { streams, meaning, authorize } = this.#options;
      const hearing = await whoMayHear(streams, meaning(rows), authorize);
      await enqueueHeard(streams, hearing);
      return;
    }
    await this.#leaderPublish(rows);
  }

  /**
   * A leader hears every change's wake-up; a follower only the leader's batches (PostgreSQL wakes
   * each listening session for every change, a cost per replica that sharing exists to avoid).
   */
  async #hear(leading: boolean): Promise<void> {
    if (this.#hearing === leading || this.#hearChanges === undefined) return;
    this.#hearing = undefined;
    try {
      await this.#hearChanges(leading);
      this.#hearing = leading;
    } catch {
      // The listener is reconnecting; the next step tries again.
    }
  }

  /**
   * A follower asks for the newest change every lagMs / 2: one its batches have not brought yet
   * is awaited, and read from the log by this replica once it has waited lagMs.
   */
  async #probe(): Promise<void> {
    const reader = this.#reader;
    if (
      reader === undefined ||
      this.#disabled ||
      this.#leadership.leading ||
      this.#options.streams.size === 0
    )
      return;
    const latest = await latestChange(this.#options.db).catch(() => undefined);
    if (
      latest === undefined ||
      reader.hasDelivered(latest) ||
      this.#awaited.has(latest.seq)
    )
      return;
    this.#awaited.set(latest.seq, performance.now());
    this.#armLagTimer();
  }

  /** Lead when this replica holds the lock or can take it (tried every leadRetryMs). */
  async #lead(): Promise<boolean> {
    if (this.#leadership.leading) return true;
    const now = performance.now();
    if (now - this.#lastLeadTry < (this.#options.leadRetryMs ?? 2000))
      return false;
    this.#lastLeadTry = now;
    try {
      if (!(await this.#leadership.tryLead())) return false;
    } catch {
      return false;
    }
    this.#options.log(
      'live updates: this replica now decides who may hear each change for every replica (feed leader)',
    );
    return true;
  }

  /** Deliver every batch published since the last one this replica saw. */
  async #consume(reader: ChangeLogReader): Promise<void> {
    for (;;) {
      const batches = await readFeedBatches(this.#options.db, {
        afterId: this.#lastBatch ?? 0n,
        limit: BATCH_PAGE,
      });
      for (const batch of batches) {
        await this.#follow(batch, reader);
        this.#lastBatch = batch.id;
      }
      if (batches.length < BATCH_PAGE) return;
    }
  }

  /** Deliver the rows of `batch` not delivered yet, by its decisions; roles it lacks are asked. */
  async #follow(batch: FeedBatch, reader: ChangeLogReader): Promise<void> {
    const rows = decodeRows(batch.changes);
    const fresh = rows.filter((row) => !reader.hasDelivered(row));
    if (fresh.length > 0) {
      const decided = decodeDecisions(batch.decisions);
      const { streams, meaning, authorize } = this.#options;
      const shared: Authorize = async (principal, seqs) =>
        decided.get(batchRoleKey(principal)) ?? authorize(principal, seqs);
      const hearing = await whoMayHear(streams, meaning(fresh), shared);
      await enqueueHeard(streams, hearing);
      reader.markDelivered(fresh);
      // The log's rows as this replica delivers them, read once by the leader for it.
      METRICS.changes.inc(fresh.length);
    }
    for (const row of rows) this.#awaited.delete(row.seq);
  }

  /**
   * Decide who may hear `rows` for the roles of this replica's streams and every other replica's,
   * publish the batch when another replica listens, then enqueue this replica's share.
   */
  async #leaderPublish(rows: readonly ChangeRow[]): Promise<void> {
    const { streams, meaning, authorize } = this.#options;
    const changes = meaning(rows);
    const seqs = [...new Set(changes.map((change) => change.seq))];
    const decided = new Map<string, Visibility>();
    if (seqs.length > 0 && this.#othersListen)
      await decideEach(this.#others, { seqs, authorize, decided });
    const remembered: Authorize = async (principal, asked) => {
      const key = batchRoleKey(principal);
      const known = decided.get(key);
      if (known !== undefined) return known;
      const visibility = await authorize(principal, asked);
      decided.set(key, visibility);
      return visibility;
    };
    const hearing = await whoMayHear(streams, changes, remembered);
    if (this.#othersListen)
      this.#lastBatch = await this.#leadership.publish({
        changes: encodeRows(rows),
        decisions: encodeDecisions(decided),
      });
    await enqueueHeard(streams, hearing);
  }

  /** The leader re-reads whom other replicas listen as, and prunes old batches and replicas. */
  async #leaderChores(): Promise<void> {
    const now = performance.now();
    if (now - this.#othersReadAt >= REFRESH_MS) {
      const lists = await this.#leadership.otherReplicas(
        this.#replica,
        REPLICA_EXPIRY_SECONDS,
      );
      this.#others = decodePrincipals(lists);
      this.#othersListen = this.#others.size > 0;
      this.#othersReadAt = now;
    }
    if (now - this.#prunedAt >= BATCH_RETENTION_SECONDS * 1000) {
      this.#prunedAt = now;
      await this.#leadership
        .prune(BATCH_RETENTION_SECONDS)
        .catch((error: unknown) =>
          this.#options.warn(
            `live updates: pruning published batches failed (${String(error)})`,
          ),
        );
    }
  }

  #lagging(): boolean {
    const since = performance.now() - this.#lagMs;
    return [...this.#awaited.values()].some((noticed) => noticed <= since);
  }

  // Step once the oldest awaited change has waited lagMs (unless a batch brought it), then at
  // most every lagMs / 2: a read that keeps failing is never retried in a loop.
  #armLagTimer(minWaitMs = 0): void {
    if (this.#lagTimer !== undefined || this.#stopped || !this.#awaited.size)
      return;
    const oldest = Math.min(...this.#awaited.values());
    const wait = Math.max(minWaitMs, oldest + this.#lagMs - performance.now());
    this.#lagTimer = setTimeout(() => {
      this.#lagTimer = undefined;
      const lagging = this.#lagging();
      if (lagging) void this.#poll?.();
      this.#armLagTimer(lagging ? this.#lagMs / 2 : 0);
    }, wait);
    this.#lagTimer.unref();
  }
}
