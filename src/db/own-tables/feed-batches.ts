// Shared delivery decisions (migrations/0035_share_change_decisions.sql): the feed leader's lock and
// the batches it publishes on its own connection, the replicas' listening principals, and reading
// the batches back.
import pg from 'pg';
import type { DatabaseHandle } from '../pool.js';
import { writeOneStatement } from '../connection/write-transaction.js';

// One fixed advisory lock key per database: whoever holds it decides for every replica.
const LEADER_LOCK_KEY = '7034003500';

/** One published batch: the change log rows the leader read and its decisions per principal. */
export interface FeedBatch {
  readonly id: bigint;
  readonly changes: unknown;
  readonly decisions: unknown;
}

/**
 * The leader's dedicated session: it holds the advisory lock, and every batch is published on it,
 * so only the lock's holder can publish (a replica whose session died publishes nothing more).
 */
export interface FeedLeadership {
  /** Whether this replica leads now, taking the lock when it is free. */
  tryLead(): Promise<boolean>;
  /** Whether the last tryLead took or kept the lock and the session is still up. */
  readonly leading: boolean;
  /** Insert a batch; returns its id. Throws when not leading. */
  publish(batch: {
    readonly changes: unknown;
    readonly decisions: unknown;
  }): Promise<bigint>;
  /** Delete batches older than `seconds` and replicas not seen for as long. */
  prune(seconds: number): Promise<void>;
  /** What other replicas seen within `seconds` listen as: their principals, each list as stored. */
  otherReplicas(self: string, seconds: number): Promise<unknown[]>;
  close(): Promise<void>;
}

/** The leader's session of `db` (opened on the first tryLead, again after it is lost). */
export function createFeedLeadership(
  db: DatabaseHandle,
  onLost: (error: unknown) => void,
): FeedLeadership {
  return new LeaderSession(db, onLost);
}

class LeaderSession implements FeedLeadership {
  readonly #db: DatabaseHandle;
  readonly #onLost: (error: unknown) => void;
  #client: pg.Client | undefined;
  #leading = false;
  /** Stops following the primary's moves: while a session is open, a move ends it. */
  #unfollow: (() => void) | undefined;

  constructor(db: DatabaseHandle, onLost: (error: unknown) => void) {
    this.#db = db;
    this.#onLost = onLost;
  }

  get leading(): boolean {
    return this.#leading;
  }

  async tryLead(): Promise<boolean> {
    if (this.#leading && this.#client !== undefined) return true;
    const [row] = await this.#query<{ locked: boolean }>(
      'select pg_try_advisory_lock($1::bigint) as locked',
      [LEADER_LOCK_KEY],
    );
    this.#leading = row?.locked === true;
    return this.#leading;
  }

  async publish(batch: {
    readonly changes: unknown;
    readonly decisions: unknown;
  }): Promise<bigint> {
    if (!this.#leading) throw new Error('not the feed leader');
    const [row] = await this.#query<{ id: string }>(
      `insert into pgmcp.feed_batches (changes, decisions)
       values ($1, $2) returning id::text`,
      [JSON.stringify(batch.changes), JSON.stringify(batch.decisions)],
    );
    return BigInt(row?.id ?? '0');
  }

  async prune(seconds: number): Promise<void> {
    await this.#query(
      `with gone as (delete from pgmcp.feed_replicas
                      where seen_at < now() - make_interval(secs => $1))
       delete from pgmcp.feed_batches where published_at < now() - make_interval(secs => $1)`,
      [seconds],
    );
  }

  async otherReplicas(self: string, seconds: number): Promise<unknown[]> {
    const rows = await this.#query<{ principals: unknown }>(
      `select principals from pgmcp.feed_replicas
        where replica <> $1 and seen_at >= now() - make_interval(secs => $2)`,
      [self, seconds],
    );
    return rows.map((row) => row.principals);
  }

  async close(): Promise<void> {
    const current = this.#client;
    this.#client = undefined;
    this.#unfollow?.();
    this.#unfollow = undefined;
    this.#leading = false;
    // Ending the session releases the lock.
    await current?.end().catch(() => undefined);
  }

  async #query<TRow extends object>(
    text: string,
    values: unknown[],
  ): Promise<TRow[]> {
    const client = await this.#session();
    try {
      return (await client.query<TRow>(text, values)).rows;
    } catch (error) {
      // A failed statement leaves a live session usable; a broken connection is dropped.
      if ((error as { code?: unknown }).code === undefined) this.#drop(error);
      throw error;
    }
  }

  async #session(): Promise<pg.Client> {
    if (this.#client !== undefined) return this.#client;
    const config = this.#db.sessionConfig('pgmcp-leader');
    const fresh = new pg.Client({
      ...config,
      options: `${config.options} -c statement_timeout=${this.#db.statementTimeoutMs} -c lock_timeout=2000`,
    });
    fresh.on('error', (error) => {
      if (this.#client === fresh) this.#drop(error);
    });
    await fresh.connect();
    this.#client = fresh;
    // The lock is held on the old primary, which may be lost without a reset (a black hole) and
    // would keep this session, and its leadership, for ever: a move ends it, so the replicas'
    // next tries take the lock on the new primary.
    this.#unfollow?.();
    this.#unfollow = this.#db.primary?.onMove(() => {
      if (this.#client === fresh) this.#drop(new Error('the primary moved'));
    });
    return fresh;
  }

  /** The session is gone, and the lock with it. */
  #drop(error: unknown): void {
    const lost = this.#client;
    this.#client = undefined;
    this.#unfollow?.();
    this.#unfollow = undefined;
    if (this.#leading) this.#onLost(error);
    this.#leading = false;
    lost?.end().catch(() => undefined);
  }
}

/** Batches published after `afterId`, oldest first, at most `limit`. */
export async function readFeedBatches(
  db: DatabaseHandle,
  { afterId, limit }: { readonly afterId: bigint; readonly limit: number },
): Promise<FeedBatch[]> {
  // The primary's moves so far: a position read on a former one raises no floor.
  const moves = db.floor?.moves;
  const { rows } = await db.pool.query<{
    id: string;
    changes: string;
    decisions: string;
    insert_lsn: string;
  }>({
    name: 'pgmcp_read_feed_batches',
    text: `select id::text, changes, decisions,
                  (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as insert_lsn
             from pgmcp.feed_batches
            where id > $1::bigint order by id limit $2`,
    values: [afterId.toString(), limit],
  });
  // Issue 36 point 1: a follower delivers these batches' changes, all committed before this
  // position: a standby read after those notifications must have replayed this far, as after the
  // follower's own reads of the log (changes.ts).
  const first = rows[0];
  if (first !== undefined)
    db.floor?.raiseFloor(BigInt(first.insert_lsn), moves);
  return rows.map((row) => ({
    id: BigInt(row.id),
    changes: JSON.parse(row.changes) as unknown,
    decisions: JSON.parse(row.decisions) as unknown,
  }));
}

/** The newest change in the log (seq and transaction), if any: what a follower expects batches to bring. */
export async function latestChange(
  db: DatabaseHandle,
): Promise<{ seq: string; txid: bigint } | undefined> {
  const { rows } = await db.pool.query<{ seq: string; txid: string }>({
    name: 'pgmcp_latest_change',
    text: 'select seq::text, txid::text from pgmcp.latest_change()',
  });
  const row = rows[0];
  return row === undefined
    ? undefined
    : { seq: row.seq, txid: BigInt(row.txid) };
}

/** The newest published batch's id (0 when none): where a replica starting now follows from. */
export async function latestFeedBatch(db: DatabaseHandle): Promise<bigint> {
  const { rows } = await db.pool.query<{ id: string }>(
    'select coalesce(max(id), 0)::text as id from pgmcp.feed_batches',
  );
  return BigInt(rows[0]?.id ?? '0');
}

/** Record the principals `replica`'s streams listen as (and that it is alive); [] leaves it listed. */
export async function registerFeedReplica(
  db: DatabaseHandle,
  { replica, principals }: { readonly replica: string; principals: unknown[] },
): Promise<void> {
  await writeOneStatement(db, {
    name: 'pgmcp_register_feed_replica',
    text: `insert into pgmcp.feed_replicas (replica, principals, seen_at)
           values ($1, $2::jsonb, now())
           on conflict (replica) do update set principals = excluded.principals, seen_at = now()`,
    values: [replica, JSON.stringify(principals)],
  });
}

/** Take `replica` off the list (it stops). */
export async function unregisterFeedReplica(
  db: DatabaseHandle,
  replica: string,
): Promise<void> {
  await writeOneStatement(db, {
    name: 'pgmcp_unregister_feed_replica',
    text: 'delete from pgmcp.feed_replicas where replica = $1',
    values: [replica],
  });
}
