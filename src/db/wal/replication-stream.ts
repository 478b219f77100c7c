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

export interface DecodedTransaction {
  /** Where its commit record starts: the order transactions commit in. */
  readonly commitLsn: bigint;
  readonly changes: readonly DecodedChange[];
}

interface PendingTransaction extends DecodedTransaction {
  readonly endLsn: bigint;
}

export interface ReplicationStreamOptions {
  readonly session: SessionConfig;
  readonly slot: string;
  readonly publication: string;
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
  stop(): Promise<void>;
}

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
  #acknowledged = 0n;
  #failure: unknown;
  #chain = Promise.resolve();
  /** Committed transactions with row changes not yet logged, in commit order. */
  readonly #pending: PendingTransaction[] = [];
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
   * `#pending`; whatever has piled up while the last batch was being logged is logged next, as one
   * batch (one commit of the log for many of the source's), so a busy slot is read at the pace of
   * the log's writes rather than one flush per decoded transaction.
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
    if (message.tag === 'begin') this.#open = [];
    else if (message.tag === 'change') this.#open?.push(message.change);
    else if (message.tag === 'commit') {
      const changes = this.#open ?? [];
      this.#open = undefined;
      this.#endLsn = message.endLsn;
      if (changes.length > 0)
        this.#pending.push({
          commitLsn: message.commitLsn,
          endLsn: message.endLsn,
          changes,
        });
      if (this.#pending.length === 0 && !this.#writing)
        this.#acknowledge(message.endLsn);
      else this.#drain();
    }
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
        const batch = this.#pending.splice(0);
        previous = batch.length;
        const last = batch.at(-1) as PendingTransaction;
        await this.#options.onTransactions(batch);
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
    const update = Buffer.alloc(34);
    update.write('r', 0);
    update.writeBigUInt64BE(this.#acknowledged, 1);
    update.writeBigUInt64BE(this.#acknowledged, 9);
    update.writeBigUInt64BE(this.#acknowledged, 17);
    // Microseconds since 2000-01-01.
    update.writeBigInt64BE(BigInt(Date.now() - 946_684_800_000) * 1000n, 25);
    update.writeUInt8(replyRequested ? 1 : 0, 33);
    this.#copy?.send(update);
  }
}

/** A duration as SHOW prints it ("60s", "1min", "500ms", "0") in milliseconds. */
function durationMs(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h|d)?\s*$/.exec(text);
  if (match === null) return 0;
  const scale: Record<string, number> = {
    ms: 1,
    s: 1000,
    min: 60_000,
    h: 3_600_000,
    d: 86_400_000,
  };
  return Number(match[1]) * (scale[match[2] ?? 'ms'] ?? 1);
}
