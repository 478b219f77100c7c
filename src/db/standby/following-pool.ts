// Pools that follow a database's primary (db/standby/primary-target.ts): each new connection goes
// to the current target, and once the primary moves, the pool's connections to the former one are
// closed as they become idle.
import pg from 'pg';
import type { PrimaryTarget } from './primary-target.js';

/** Idle sessions on a former primary are closed with this error; it is not a failure to log. */
export class PrimaryMovedError extends Error {
  constructor() {
    super('the primary moved; this session was on the former one');
    this.name = 'PrimaryMovedError';
  }
}

/** The URL each following client connected to. */
const connectedTo = new WeakMap<pg.ClientBase, string>();

/**
 * A pg.Client class for pg.Pool's documented `Client` option: whatever URL the pool was given, it
 * connects to the target's current URL.
 */
export function followingClient(target: PrimaryTarget): typeof pg.Client {
  return class FollowingClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      const url = target.url;
      super({
        ...(typeof config === 'object' ? config : {}),
        connectionString: url,
      });
      connectedTo.set(this, url);
    }
  };
}

/**
 * Close `pool`'s sessions on a former primary: the idle ones when the primary moves, a checked-out
 * one when it is released (a request on it has failed or finished). Emitting 'error' on an idle
 * client is how pg-pool is told a client died: its idle listener ends and removes it. Returns the
 * removal of the move listener.
 */
export function followPrimary(
  pool: pg.Pool,
  target: PrimaryTarget,
): () => void {
  const clients = new Set<pg.ClientBase>();
  const checkedOut = new Set<pg.ClientBase>();
  const stale = (client: pg.ClientBase) =>
    connectedTo.has(client) && connectedTo.get(client) !== target.url;
  const retire = (client: pg.ClientBase) => {
    if (clients.has(client) && !checkedOut.has(client) && stale(client)) {
      clients.delete(client);
      client.emit('error', new PrimaryMovedError());
    }
  };
  pool.on('connect', (client) => clients.add(client));
  pool.on('remove', (client) => {
    clients.delete(client);
    checkedOut.delete(client);
  });
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_error: unknown, client: pg.PoolClient) => {
    checkedOut.delete(client);
    // Ended here, before pg-pool decides where the client goes: it removes an ending client
    // instead of handing it to the next waiting request (which would keep it on the former
    // primary for as long as requests queue) or back to its idle list.
    if (stale(client)) {
      clients.delete(client);
      // The pool made it with followingClient: a pg.Client.
      (client as unknown as pg.Client).end().catch(() => undefined);
    }
  });
  return target.onMove(() => {
    for (const client of [...clients]) retire(client);
  });
}
