// A child process holding many SSE listen streams for the live-updates bench (bench/live.ts). It is
// a separate process so the server's memory and event loop are measured alone. Commands arrive
// over IPC; every event arrival is timestamped on the shared clock (timeOrigin + now, in ms).
import net from 'node:net';

type Command =
  | { cmd: 'open'; port: number; requests: string[] }
  | { cmd: 'expect'; events: number; timeoutMs: number }
  | { cmd: 'closeAll' };

/** The marker counted as one delivered notification. */
const MARKER = 'notifications/resources/updated';

const sockets: net.Socket[] = [];
let arrivals: number[] = [];
let waiter: { events: number; resolve: () => void } | undefined;

const now = (): number => performance.timeOrigin + performance.now();

function send(message: unknown): void {
  process.send?.(message);
}

function openOne(port: number, request: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    let opened = false;
    let tail = '';
    socket.setNoDelay(true);
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk: string) => {
      const text = tail + chunk;
      // The first bytes (headers and the acknowledgement) mean the stream is open.
      if (!opened) {
        opened = true;
        resolve();
      }
      let at = text.indexOf(MARKER);
      while (at !== -1) {
        arrivals.push(now());
        at = text.indexOf(MARKER, at + MARKER.length);
      }
      tail = text.slice(-(MARKER.length - 1));
      if (waiter !== undefined && arrivals.length >= waiter.events) {
        const done = waiter;
        waiter = undefined;
        done.resolve();
      }
    });
    socket.on('error', (error) => {
      if (!opened) reject(error);
    });
    sockets.push(socket);
  });
}

process.on('message', (message: Command) => {
  void (async () => {
    if (message.cmd === 'open') {
      // In batches: the listen backlog is finite, and a refused SYN costs a one-second retry.
      let failures = 0;
      const count = message.requests.length;
      for (let done = 0; done < count; done += 100) {
        const batch = message.requests.slice(done, done + 100);
        await Promise.all(
          batch.map(async (request) => {
            // A connection reset under a burst of connects is retried, not fatal.
            for (let attempt = 0; ; attempt += 1) {
              try {
                return await openOne(message.port, request);
              } catch (error) {
                failures += 1;
                if (attempt >= 5) throw error;
                await new Promise((resolve) => setTimeout(resolve, 50));
              }
            }
          }),
        );
      }
      if (failures > 0)
        process.stderr.write(`sse-clients: ${failures} connects retried\n`);
      arrivals = [];
      send({ opened: sockets.length });
    } else if (message.cmd === 'expect') {
      // Reply with the arrival times once `events` notifications have arrived (or on timeout).
      await new Promise<void>((resolve) => {
        if (arrivals.length >= message.events) return resolve();
        waiter = { events: message.events, resolve };
        setTimeout(resolve, message.timeoutMs);
      });
      waiter = undefined;
      const times = arrivals;
      arrivals = [];
      send({ times });
    } else if (message.cmd === 'closeAll') {
      for (const socket of sockets.splice(0)) socket.destroy();
      send({ closed: true });
    }
  })();
});

send({ ready: true });
