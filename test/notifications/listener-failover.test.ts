// The change feed's listener closed while it moves to a promoted standby: the connection it was
// opening there must not outlive it. A gate (a TCP relay in front of the current primary) holds the
// new connection until close() was called. Its own pair: the promotion cannot be undone.
import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/index.js';
import { startListener } from '../../src/notifications/feed-listener.js';
import {
  pairDatabase,
  startStandbyPair,
  waitFor,
  type StandbyPair,
} from '../setup/standby-pair.js';

/** A relay to `target()`'s host and port as it is when a connection comes; it can hold them. */
class Gate {
  readonly #target: () => string;
  readonly #server = net.createServer((socket) => this.#arrived(socket));
  readonly #sockets = new Set<net.Socket>();
  #held: net.Socket[] = [];
  #holding = false;

  constructor(target: () => string) {
    this.#target = target;
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) =>
      this.#server.listen(0, '127.0.0.1', resolve),
    );
    const { port } = this.#server.address() as net.AddressInfo;
    return `postgres://postgres@127.0.0.1:${port}/postgres`;
  }

  get held(): number {
    return this.#held.length;
  }

  hold(): void {
    this.#holding = true;
  }

  release(): void {
    this.#holding = false;
    for (const socket of this.#held.splice(0)) this.#relay(socket);
  }

  close(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#server.close();
  }

  #arrived(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.#sockets.delete(socket));
    if (this.#holding) {
      socket.pause();
      this.#held.push(socket);
    } else this.#relay(socket);
  }

  #relay(socket: net.Socket): void {
    const url = new URL(this.#target());
    const upstream = net.connect(Number(url.port), url.hostname);
    this.#sockets.add(upstream);
    upstream.on('error', () => socket.destroy());
    upstream.on('close', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
    socket.pipe(upstream);
    upstream.pipe(socket);
    socket.resume();
  }
}

let pair: StandbyPair;
let db: DatabaseHandle | undefined;
let gate: Gate | undefined;

async function listenerSessions(
  server: 'primary' | 'standby',
): Promise<number> {
  const rows = await pair.sql(
    server,
    `select count(*)::int as n from pg_stat_activity where application_name like 'pgmcp-listener%'`,
  );
  return Number(rows[0]?.['n']);
}

beforeAll(async () => {
  pair = await startStandbyPair();
}, 120_000);

afterAll(async () => {
  gate?.close();
  await db?.close();
  pair?.close();
});

it('closes the connection a move was opening on the new primary when the listener is closed meanwhile', async () => {
  const lines: string[] = [];
  const handle = pairDatabase(pair, lines);
  db = handle;
  const relay = new Gate(() => handle.primary?.url ?? pair.primaryUrl);
  gate = relay;
  const url = await relay.start();
  const listener = await startListener(
    {
      db: {
        ...handle,
        sessionConfig: (name) => ({
          ...handle.sessionConfig(name),
          connectionString: url,
        }),
      },
      log: (line) => lines.push(line),
      warn: (line) => lines.push(`WARN ${line}`),
    },
    () => Promise.resolve(),
    () => undefined,
  );
  expect(await listenerSessions('primary')).toBe(1);

  relay.hold();
  pair.stopPrimary('immediate');
  await pair.promoteStandby();
  await waitFor(() => handle.primary?.url === pair.standbyUrl);
  // The move's connection to the new primary waits in the gate.
  await waitFor(() =>
    lines.some((line) => line.includes('listening on the new one')),
  );
  await waitFor(() => relay.held > 0);
  const closing = listener.close();
  relay.release();
  await closing;

  await waitFor(async () => (await listenerSessions('standby')) === 0);
  expect(listener.listening).toBe(false);
}, 240_000);
