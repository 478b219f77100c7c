// The WAL source's slot check against a server that stops answering once the check has connected
// (a black-holed network): the check is given up at its deadline, and the next one runs, rather
// than one check holding every later tick (and so the slot's bound) until TCP gives up.
import net from 'node:net';
import { afterAll, expect, it } from 'vitest';
import { createSlotWatch } from '../../src/db/wal/slot-watch.js';
import { testDatabaseUrl } from '../setup/harness.js';

/**
 * A relay to the test database that passes the client's first chunk (its startup message; the
 * test server trusts it) and then swallows what the client sends, answering nothing more and
 * never closing: the server has gone silent.
 */
class SilentAfterStartup {
  readonly #server = net.createServer({ allowHalfOpen: true }, (socket) =>
    this.#arrived(socket),
  );
  readonly #sockets = new Set<net.Socket>();
  connections = 0;

  async start(): Promise<string> {
    await new Promise<void>((resolve) =>
      this.#server.listen(0, '127.0.0.1', resolve),
    );
    const { port } = this.#server.address() as net.AddressInfo;
    const url = new URL(testDatabaseUrl());
    url.hostname = '127.0.0.1';
    url.port = String(port);
    return url.toString();
  }

  close(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#server.close();
  }

  #arrived(socket: net.Socket): void {
    this.connections += 1;
    const target = new URL(testDatabaseUrl());
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const each of [socket, upstream]) {
      this.#sockets.add(each);
      each.on('error', () => each.destroy());
    }
    let first = true;
    socket.on('data', (chunk) => {
      if (first) upstream.write(chunk);
      first = false;
    });
    upstream.on('data', (chunk) => socket.write(chunk));
  }
}

const relay = new SilentAfterStartup();

afterAll(() => relay.close());

it('gives up a check whose server stops answering after it connected, and runs the next one', async () => {
  const url = await relay.start();
  const warnings: string[] = [];
  const watch = createSlotWatch(
    {
      db: {
        sessionConfig: (name) => ({
          connectionString: url,
          fallback_application_name: name,
          options: '-c TimeZone=UTC',
          keepAlive: true,
        }),
      },
      name: 'main',
      slotMaxBytes: 1024 * 1024 * 1024,
      checkTimeoutMs: 300,
      warn: (line) => warnings.push(line),
    },
    'pgmcp_slot_watch_test',
  );
  await expect(watch.watch()).rejects.toThrow();
  expect(watch.busy).toBe(false);
  await expect(watch.watch()).rejects.toThrow();
  expect(relay.connections).toBe(2);
  await watch.stop();
  expect(warnings).toEqual([]);
});
