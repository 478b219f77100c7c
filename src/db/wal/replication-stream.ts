// One replication connection reading a logical slot with pgoutput: decoded transactions handed
// over in batches, in commit order, each acknowledged only after it was handed over.
import pg from 'pg';
import { copyBothOf, type CopyBoth } from '../driver/index.js';
import type { SessionConfig } from '../pool.js';
import {
  PgoutputDecoder,
  type DecodedChange,
  type PgoutputMessage,
} from './pgoutput.js';
import { durationMs, standbyStatusUpdate } from './walsender-messages.js';

export interface DecodedTransaction {
  /** Where its commit record starts: the order transactions commit in. */
  readonly commitLsn: bigint;
  readonly changes: readonly DecodedChange[];
  /**
   * It changed more rows than a transaction may keep (maxTransactionRows): its changes were not
   * kept (`changes` is empty), so it is logged as a new capture epoch, and every stream resyncs.
   */
  readonly overflowed?: true;
}

interface PendingTransaction extends DecodedTransaction {
  readonly endLsn: bigint;
}

export interface ReplicationStreamOptions {
  readonly session: SessionConfig;
  readonly slot: string;
  readonly publication: string;
  /**
   * Most row changes kept of one transaction, and in one batch handed over: a transaction with
   * more keeps none and is handed over `overflowed`.
   */
  readonly maxTransactionRows: number;
  /**
   * Most row changes of committed transactions waiting to be handed over: past it the socket is
   * not read (the server waits) until the backlog is down to half.
   */
  readonly maxPendingRows: number;
  /**
   * Resolves once the transactions (one or more, in commit order) are logged; the slot is
   * acknowledged past them only then.
   */
  readonly onTransactions: (
    transactions: readonly DecodedTransaction[],
  ) => Promise<void>;
}

export interface ReplicationStream {
  /** Rejects when the stream ends, with why (a lost connection, a busy slot, a failed hand-over). */
  readonly done: Promise<void>;
  /** Row changes of committed transactions waiting to be handed over. */
  readonly pendingRows: number;
  stop(): Promise<void>;
}

/** The defaults of PGMCP_WAL_MAX_TRANSACTION_ROWS and PGMCP_WAL_MAX_PENDING_ROWS. */
export const WAL_ROW_LIMITS = {
  maxTransactionRows: 10_000,
  maxPendingRows: 100_000,
} as const;

/**
 * How long a batch may wait for more transactions under load (milliseconds): what a change may be
 * delayed by while writers are busy, against how many transactions one commit of the log holds.
 */
const GATHER_MS = 5;
/** No wait once this many transactions are waiting. */
const GATHER_MAX = 256;
/**
 * The silence bound when the server's wal_sender_timeout is 0 (it never pings on its own): the
 * reader asks for a keepalive at half of it, so a live server is heard well within it.
 */
const SILENCE_WITHOUT_TIMEOUT_MS = 60_000;

type Queued =
  | { readonly type: 'data'; readonly message: PgoutputMessage }
  | {
      readonly type: 'keepalive';
      readonly lsn: bigint;
      /** The server asks for a status update now (its wal_sender_timeout is half spent). */
      readonly replyRequested: boolean;
    };

/**
 * START_REPLICATION on `slot` from where it was last acknowledged. Messages are handled strictly
 * in arrival order; a keepalive received while no transaction is open acknowledges the server's
 * position (everything before it was handed over), so a slot whose publication sees no writes
 * still moves on and holds no WAL.
 */
export function openReplicationStream(
  options: ReplicationStreamOptions,
): ReplicationStream {
  const reader = new StreamReader(options);
  reader.start();
  return reader;
}

/** One replication connection and the ordered hand-over of what it decodes. */
class StreamReader implements ReplicationStream {
  readonly #options: ReplicationStreamOptions;
  readonly #client: pg.Client;
  #copy: CopyBoth | undefined;
  readonly #decoder = new PgoutputDecoder();
  /** The changes of the transaction being received, if one is. */
  #open: DecodedChange[] | undefined;
  /** The transaction being received changed more rows than it may keep. */
  #openOverflowed = false;
  #acknowledged = 0n;
  #failure: unknown;
  #chain = Promise.resolve();
  /** Committed transactions with row changes not yet logged, in commit order. */
  readonly #pending: PendingTransaction[] = [];
  /** The row changes in `#pending`. */
  #pendingRows = 0;
  /** The socket is not read until the backlog drains. */
  #paused = false;
  /** Messages received after the pause, from the same read of the socket, in order. */
  readonly #held: Buffer[] = [];
  #writing = false;
  /** The end of the last commit received. */
  #endLsn = 0n;
  #reject: (error: unknown) => void = () => undefined;
  /** When the server was last heard (data or keepalive), performance.now(). */
  #heard = performance.now();
  #silenceTimer: NodeJS.Timeout | undefined;
  readonly done: Promise<void>;

  constructor(options: ReplicationStreamOptions) {
    this.#options = options;
    // @types/pg does not list `replication`; pg passes it in the startup packet.
    this.#client = new pg.Client({
      ...options.session,
      replication: 'database',
    } as pg.ClientConfig);
    // Never removed: a late FATAL or reset on this connection must not end the process.
    this.#client.on('error', (error) => this.#fail(error));
    this.done = new Promise<void>((_, reject) => {
      this.#reject = reject;
    });
    this.done.catch(() => undefined);
  }

  get pendingRows(): number {
    return this.#pendingRows;
  }

  start(): void {
    this.#stream().catch((error: unknown) => this.#fail(error));
  }

  async #stream(): Promise<void> {
    await this.#client.connect();
    if (this.#failure !== undefined) return;
    const silenceMs = await this.#silenceBound();
    // Stopped meanwhile: no timer is left behind.
    if (this.#failure !== undefined) return;
    this.#watchSilence(silenceMs);
    this.#copy = copyBothOf(this.#client);
    this.#copy.onData((chunk) => this.#received(chunk));
    // From 0/0: the server starts at the slot's confirmed position. The slot name is pgmcp's own
    // (letters, digits, "_"); the publication is a constant.
    await this.#client.query(
      `START_REPLICATION SLOT ${this.#options.slot} LOGICAL 0/0 (proto_version '1', publication_names '${this.#options.publication}')`,
    );
    this.#fail(new Error('the replication stream ended'));
  }

  /**
   * XLogData ('w') carries a pgoutput message after its 25-byte header; 'k' is a keepalive. This
   * runs inside the socket's data handler: a message that does not decode fails the stream (the
   * reader retries, nothing acknowledged), never the process.
   */
  #received(chunk: Buffer): void {
    this.#heard = performance.now();
    // The rest of the read that paused the socket: kept undecoded (a copy: pg reuses its buffer)
    // until the backlog drains.
    if (this.#paused) this.#held.push(Buffer.from(chunk));
    else this.#handle(chunk);
  }

  #handle(chunk: Buffer): void {
    try {
      if (chunk[0] === 0x77)
        this.#enqueue({
          type: 'data',
          message: this.#decoder.decode(chunk.subarray(25)),
        });
      else if (chunk[0] === 0x6b)
        this.#enqueue({
          type: 'keepalive',
          lsn: chunk.readBigUInt64BE(1),
          replyRequested: chunk[17] === 1,
        });
    } catch (error) {
      this.#fail(error);
      void this.#client.end().catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    this.#fail(new Error('stopped'));
    await this.#client.end().catch(() => undefined);
    await this.#chain.catch(() => undefined);
  }

  #fail(error: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    clearInterval(this.#silenceTimer);
    // A paused socket would never see the server's goodbye; what it reads now is ignored.
    this.#held.length = 0;
    this.#paused = false;
    this.#copy?.pause(false);
    this.#reject(error);
  }

  /**
   * Twice the server's wal_sender_timeout: a walsender pings at half of it when it has not heard
   * from its reader, so a server silent for twice as long is gone (a black hole: its connection
   * never reset). A timeout of 0 gets a fixed bound, kept by asking for keepalives.
   */
  async #silenceBound(): Promise<number> {
    const { rows } = await this.#client.query<{ wal_sender_timeout: string }>(
      'SHOW wal_sender_timeout',
    );
    const timeout = durationMs(rows[0]?.wal_sender_timeout ?? '0');
    return timeout > 0 ? 2 * timeout : SILENCE_WITHOUT_TIMEOUT_MS;
  }

  /**
   * Fail the stream once the server has been silent past `boundMs`; past half of it, ask the
   * server for a keepalive (a status update with its reply flag), so only a lost one stays silent.
   */
  #watchSilence(boundMs: number): void {
    this.#heard = performance.now();
    this.#silenceTimer = setInterval(
      () => {
        // Not reading (the log is behind): the server is not expected to be heard, but it must
        // hear from the reader within its wal_sender_timeout.
        if (this.#paused) {
          this.#heard = performance.now();
          this.#acknowledge(this.#acknowledged);
          return;
        }
        const silent = performance.now() - this.#heard;
        if (silent > boundMs) {
          this.#fail(
            new Error(
              `the server sent nothing for ${Math.round(silent / 1000)} s (bound ${boundMs / 1000} s)`,
            ),
          );
          // START_REPLICATION is still running: end() destroys the socket rather than wait.
          void this.#client.end().catch(() => undefined);
        } else if (silent > boundMs / 2)
          this.#acknowledge(this.#acknowledged, true);
      },
      Math.max(10, boundMs / 8),
    );
    this.#silenceTimer.unref();
  }

  /**
   * Take one message in arrival order. A committed transaction with row changes waits in
   * `#pending`; whatever has piled up while the last batch was being logged is logged next, in
   * batches of whole transactions (one commit of the log for many of the source's), so a busy slot
   * is read at the pace of the log's writes rather than one flush per decoded transaction. What is
   * kept is bounded whatever the transactions: one that changes more rows than maxTransactionRows
   * keeps none, and while more than maxPendingRows wait the socket is not read.
   */
  #enqueue(item: Queued): void {
    if (this.#failure !== undefined) return;
    if (item.type === 'keepalive') {
      // Idle (nothing open, nothing waiting): everything before the server's position is handled.
      const idle =
        this.#open === undefined &&
        this.#pending.length === 0 &&
        !this.#writing;
      // A walsender that has sent everything and waits for WAL pings whenever the confirmed
      // position is behind what it sent, which it is while a batch is being logged; answering
      // each such ping with the same position would make it ping again after every transaction.
      // So a reply goes out when it moves the slot on or the server asks for one.
      if (item.replyRequested || (idle && item.lsn > this.#acknowledged))
        this.#acknowledge(idle ? item.lsn : this.#acknowledged);
      return;
    }
    const { message } = item;
    if (message.tag === 'begin') {
      this.#open = [];
      this.#openOverflowed = false;
    } else if (message.tag === 'change') this.#keep(message.change);
    else if (message.tag === 'commit') {
      const changes = this.#open ?? [];
      this.#open = undefined;
      this.#endLsn = message.endLsn;
      const { commitLsn, endLsn } = message;
      if (this.#openOverflowed)
        this.#pending.push({ commitLsn, endLsn, changes, overflowed: true });
      else if (changes.length > 0) {
        this.#pending.push({ commitLsn, endLsn, changes });
        this.#pendingRows += changes.length;
        if (this.#pendingRows > this.#options.maxPendingRows) this.#pause(true);
      }
      if (this.#pending.length === 0 && !this.#writing)
        this.#acknowledge(message.endLsn);
      else this.#drain();
    }
  }

  /** Keep a change of the open transaction, unless it has changed more rows than it may keep. */
  #keep(change: DecodedChange): void {
    if (this.#open === undefined || this.#openOverflowed) return;
    this.#open.push(change);
    if (this.#open.length > this.#options.maxTransactionRows) {
      this.#openOverflowed = true;
      this.#open = [];
    }
  }

  /**
   * Stop reading the socket, or read it again once what was held is handled (which may pause it
   * again).
   */
  #pause(paused: boolean): void {
    if (paused === this.#paused || this.#failure !== undefined) return;
    this.#paused = paused;
    if (paused) {
      this.#copy?.pause(true);
      return;
    }
    while (!this.#paused && this.#held.length > 0)
      this.#handle(this.#held.shift() as Buffer);
    if (!this.#paused) this.#copy?.pause(false);
  }

  /**
   * The next batch: whole transactions in commit order, at least one, and no more row changes
   * than one transaction may keep.
   */
  #nextBatch(): PendingTransaction[] {
    let rows = 0;
    let count = 0;
    for (const transaction of this.#pending) {
      rows += transaction.changes.length;
      if (count > 0 && rows > this.#options.maxTransactionRows) break;
      count += 1;
    }
    const batch = this.#pending.splice(0, count);
    for (const transaction of batch)
      this.#pendingRows -= transaction.changes.length;
    return batch;
  }

  /** Log the waiting transactions in batches, acknowledging each batch only once it is logged. */
  #drain(): void {
    if (this.#writing) return;
    this.#writing = true;
    this.#chain = (async () => {
      let previous = 0;
      while (this.#pending.length > 0 && this.#failure === undefined) {
        // Each batch is one commit of the log, whose cost hardly depends on its size: under load
        // (the last batch held several transactions) a moment's wait gathers more per commit.
        // One transaction at a time (no load) is logged at once.
        if (previous > 1 && this.#pending.length < GATHER_MAX)
          await new Promise((resolve) => setTimeout(resolve, GATHER_MS));
        if (this.#failure !== undefined) break;
        const batch = this.#nextBatch();
        previous = batch.length;
        const last = batch.at(-1) as PendingTransaction;
        await this.#options.onTransactions(batch);
        if (this.#pendingRows <= this.#options.maxPendingRows / 2)
          this.#pause(false);
        // Past the batch; up to the last commit received when nothing else waits (the ones
        // after the batch had no row changes).
        this.#acknowledge(
          this.#pending.length === 0 ? this.#endLsn : last.endLsn,
        );
      }
    })()
      .catch((error: unknown) => this.#fail(error))
      .finally(() => {
        this.#writing = false;
      });
  }

  /**
   * Standby status update ('r'): `position` (never less than before) as written, flushed and
   * applied, so the slot's confirmed_flush_lsn moves to it.
   */
  #acknowledge(position: bigint, replyRequested = false): void {
    if (position > this.#acknowledged) this.#acknowledged = position;
    this.#copy?.send(standbyStatusUpdate(this.#acknowledged, replyRequested));
  }
}
