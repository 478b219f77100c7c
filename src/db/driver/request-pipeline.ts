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

export class RequestPipelines {
  readonly #slots: Slot[];
  #closed = false;

  constructor(
    readonly config: pg.ClientConfig,
    connections: number,
    readonly onError: (message: string, error: unknown) => void,
  ) {
    this.#slots = Array.from({ length: connections }, () => ({
      client: undefined,
      inFlight: 0,
    }));
  }

  /** Send `transaction` on the connection with the fewest in flight; its rows when it ends. */
  async run(transaction: ImplicitTransaction): Promise<Rows> {
    let slot = this.#slots[0] as Slot;
    for (const candidate of this.#slots)
      if (candidate.inFlight < slot.inFlight) slot = candidate;
    slot.inFlight += 1;
    const connecting = this.#connected(slot);
    try {
      const client = await connecting;
      void client.query(transaction as unknown as pg.Submittable);
      const rows = await transaction.result;
      return rows;
    } catch (error) {
      // Which of its new prepared statements exist is unknown: the connection goes (transactions
      // behind it never bind a name still being parsed, so they are unaffected), and the slot
      // reconnects on its next use. Only this connection: the slot may hold a newer one.
      if (transaction.unsafeToReuse && slot.client === connecting)
        this.#drop(slot);
      throw error;
    } finally {
      slot.inFlight -= 1;
    }
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
