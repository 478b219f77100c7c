// Request transactions of many requests on a few connections, each written to PostgreSQL as soon as
// it is made, without waiting for the transactions ahead of it (pg's pipeline mode). PostgreSQL
// runs them one after another, each its own implicit transaction ending at its Sync, and answers a
// burst with few socket writes; the server reads a burst of answers with one read. Per request, that
// is a fraction of the system calls of a pooled connection (a write and a read on each side per
// transaction), which is what a point read mostly costs.
//
// Only statements on pgmcp's own tables go this way (PreparedQuery.pipelined): index lookups and
// keyset pages under pgmcp's own policies, short by construction. A statement behind a slow one
// waits for it, and a cancel cannot be aimed at one transaction of a pipeline, so anything that
// reads the company's tables (their policies, their sizes) takes a pooled connection, where a
// cancel stops it.
import pg from 'pg';
import type { ImplicitTransaction } from './implicit-transaction.js';

type Rows = Awaited<ImplicitTransaction['result']>;

interface Slot {
  client: Promise<pg.Client> | undefined;
  inFlight: number;
}

/** What pipelined connections are opened with. */
export interface RequestPipelinesOptions {
  readonly config: pg.ClientConfig;
  /** How many connections requests are spread over. */
  readonly connections: number;
  readonly onError: (message: string, error: unknown) => void;
  /** Longest a caller waits once its transaction is on the wire; 0 or absent: no bound. */
  readonly waitBoundMs?: number;
}

export class RequestPipelines {
  readonly #slots: Slot[];
  #closed = false;

  readonly config: pg.ClientConfig;
  readonly onError: (message: string, error: unknown) => void;
  /**
   * Longest a caller waits for its transaction once it is on the wire (the sessions'
   * lock_timeout, else their statement_timeout); 0: no bound.
   */
  readonly waitBoundMs: number;

  constructor(options: RequestPipelinesOptions) {
    this.config = options.config;
    this.onError = options.onError;
    this.waitBoundMs = options.waitBoundMs ?? 0;
    const connections = options.connections;
    this.#slots = Array.from({ length: connections }, () => ({
      client: undefined,
      inFlight: 0,
    }));
  }

  /**
   * Send `transaction` on the connection with the fewest in flight; its rows when it ends, or,
   * past `waitBoundMs` on the wire, a PipelineWaitError (issue 34 point 2).
   */
  async run(transaction: ImplicitTransaction): Promise<Rows> {
    let slot = this.#slots[0] as Slot;
    for (const candidate of this.#slots)
      if (candidate.inFlight < slot.inFlight) slot = candidate;
    slot.inFlight += 1;
    const connecting = this.#connected(slot);
    let client: pg.Client;
    try {
      client = await connecting;
    } catch (error) {
      slot.inFlight -= 1;
      throw error;
    }
    void client.query(transaction as unknown as pg.Submittable);
    // The slot counts the transaction until PostgreSQL has answered it, even when its caller was
    // answered first; a transaction that failed with a new prepared statement half-made drops
    // the connection (transactions behind it never bind a name still being parsed, so they are
    // unaffected), and the slot reconnects on its next use. Only this connection: the slot may
    // hold a newer one.
    const settled = transaction.result.then(
      (rows) => {
        slot.inFlight -= 1;
        return rows;
      },
      (error: unknown) => {
        slot.inFlight -= 1;
        if (transaction.unsafeToReuse && slot.client === connecting)
          this.#drop(slot);
        throw error;
      },
    );
    return this.waitBoundMs > 0
      ? withinBound(settled, this.waitBoundMs)
      : settled;
  }

  /** Close every connection, once the transactions on the wire have been answered. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(
      this.#slots.map(async (slot) => {
        const client = slot.client;
        slot.client = undefined;
        if (client !== undefined)
          await client.then(
            (connected) => connected.end(),
            () => undefined,
          );
      }),
    );
  }

  /**
   * Open new connections from here on (config is read again for each), ending the current ones
   * once what is on their wire has been answered: the primary moved (db/standby/primary-target.ts).
   */
  reconnect(): void {
    for (const slot of this.#slots) this.#drop(slot);
  }

  #connected(slot: Slot): Promise<pg.Client> {
    if (this.#closed)
      return Promise.reject(new Error('the database handle is closed'));
    if (slot.client !== undefined) return slot.client;
    // pg 8.23's pipeline option, which @types/pg does not declare yet.
    const client = new pg.Client({
      ...this.config,
      pipeline: true,
    } as pg.ClientConfig);
    // A lost connection fails what is on the wire (pg rejects each); the next use reconnects. A
    // client pg found in an impossible state keeps its socket open: end it.
    client.on('error', (error) => {
      this.onError('pipelined database connection failed', error);
      if (slot.client === connecting) slot.client = undefined;
      client.end().catch(() => undefined);
    });
    client.on('end', () => {
      if (slot.client === connecting) slot.client = undefined;
    });
    const connecting = client.connect().then(
      () => client,
      (error: unknown) => {
        if (slot.client === connecting) slot.client = undefined;
        throw error;
      },
    );
    slot.client = connecting;
    return connecting;
  }

  #drop(slot: Slot): void {
    const client = slot.client;
    slot.client = undefined;
    void client?.then(
      (connected) => connected.end(),
      () => undefined,
    );
  }
}

/**
 * Issue 34 point 2: a pipelined connection runs its transactions one after another, so behind one
 * that waits for a lock every other waits too, each then for its own lock_timeout: the k-th would
 * answer after k timeouts. Only short statements on pgmcp's own tables go this way, so one still
 * unanswered after the sessions' lock_timeout is held up by a lock; its caller is answered then
 * (UNAVAILABLE, like a lock timeout of its own), and PostgreSQL's answer, when it comes, is dropped.
 */
class PipelineWaitError extends Error {
  /** lock_not_available: db/sqlstate.ts maps it to UNAVAILABLE (503 with Retry-After). */
  readonly code = '55P03';

  constructor(waitBoundMs: number) {
    super(
      `a pipelined transaction was not answered within ${waitBoundMs} ms (the sessions' lock_timeout): it waits for a lock, or behind a transaction that does`,
    );
    this.name = 'PipelineWaitError';
  }
}

function withinBound(rows: Promise<Rows>, waitBoundMs: number): Promise<Rows> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new PipelineWaitError(waitBoundMs)),
      waitBoundMs,
    );
    rows.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: Error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
