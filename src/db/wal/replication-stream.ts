// One replication connection reading a logical slot with pgoutput: decoded transactions handed
// over one at a time, in commit order, each acknowledged only after it was handed over.
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

export interface ReplicationStreamOptions {
  readonly session: SessionConfig;
  readonly slot: string;
  readonly publication: string;
  /** Resolves once the transaction is logged; the slot is acknowledged past it only then. */
  readonly onTransaction: (transaction: DecodedTransaction) => Promise<void>;
}

export interface ReplicationStream {
  /** Rejects when the stream ends, with why (a lost connection, a busy slot, a failed hand-over). */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

type Queued =
  | { readonly type: 'data'; readonly message: PgoutputMessage }
  | { readonly type: 'keepalive'; readonly lsn: bigint };

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
  #reject: (error: unknown) => void = () => undefined;
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
    this.#copy = copyBothOf(this.#client);
    this.#copy.onData((chunk) => this.#received(chunk));
    // From 0/0: the server starts at the slot's confirmed position. The slot name is pgmcp's own
    // (letters, digits, "_"); the publication is a constant.
    await this.#client.query(
      `START_REPLICATION SLOT ${this.#options.slot} LOGICAL 0/0 (proto_version '1', publication_names '${this.#options.publication}')`,
    );
    this.#fail(new Error('the replication stream ended'));
  }

  /** XLogData ('w') carries a pgoutput message after its 25-byte header; 'k' is a keepalive. */
  #received(chunk: Buffer): void {
    if (chunk[0] === 0x77)
      this.#enqueue({
        type: 'data',
        message: this.#decoder.decode(chunk.subarray(25)),
      });
    else if (chunk[0] === 0x6b)
      this.#enqueue({ type: 'keepalive', lsn: chunk.readBigUInt64BE(1) });
  }

  async stop(): Promise<void> {
    this.#fail(new Error('stopped'));
    await this.#client.end().catch(() => undefined);
    await this.#chain.catch(() => undefined);
  }

  #fail(error: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    this.#reject(error);
  }

  #enqueue(item: Queued): void {
    this.#chain = this.#chain.then(() =>
      this.#failure === undefined ? this.#handle(item) : undefined,
    );
    this.#chain.catch((error: unknown) => this.#fail(error));
  }

  async #handle(item: Queued): Promise<void> {
    if (item.type === 'keepalive') {
      this.#acknowledge(
        this.#open === undefined ? item.lsn : this.#acknowledged,
      );
      return;
    }
    const { message } = item;
    if (message.tag === 'begin') this.#open = [];
    else if (message.tag === 'commit') {
      const changes = this.#open ?? [];
      this.#open = undefined;
      if (changes.length > 0)
        await this.#options.onTransaction({
          commitLsn: message.commitLsn,
          changes,
        });
      this.#acknowledge(message.endLsn);
    } else if (message.tag === 'change') this.#open?.push(message.change);
  }

  /**
   * Standby status update ('r'): `position` (never less than before) as written, flushed and
   * applied, so the slot's confirmed_flush_lsn moves to it.
   */
  #acknowledge(position: bigint): void {
    if (position > this.#acknowledged) this.#acknowledged = position;
    const update = Buffer.alloc(34);
    update.write('r', 0);
    update.writeBigUInt64BE(this.#acknowledged, 1);
    update.writeBigUInt64BE(this.#acknowledged, 9);
    update.writeBigUInt64BE(this.#acknowledged, 17);
    // Microseconds since 2000-01-01.
    update.writeBigInt64BE(BigInt(Date.now() - 946_684_800_000) * 1000n, 25);
    update.writeUInt8(0, 33);
    this.#copy?.send(update);
  }
}
