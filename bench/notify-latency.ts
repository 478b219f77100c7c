// What the listen-stream (bench/live.ts) and legacy-subscriber (bench/legacy.ts) latency figures
// share: the SSE client process (bench/sse-clients.ts) and the commit → notification loop.
import { fork, type ChildProcess } from 'node:child_process';

/** The SSE client process, with a promise-returning command channel. */
export interface SseClients {
  command<T>(message: object): Promise<T>;
  stop(): void;
}

export async function startClients(): Promise<SseClients> {
  const child: ChildProcess = fork(
    new URL('./sse-clients.js', import.meta.url),
    [],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const queue: ((value: unknown) => void)[] = [];
  child.on('message', (message) => queue.shift()?.(message));
  await new Promise((resolve) => queue.push(resolve));
  return {
    command: <T>(message: object) =>
      new Promise<T>((resolve) => {
        queue.push(resolve as (value: unknown) => void);
        child.send(message);
      }),
    stop: () => child.kill(),
  };
}

export const percentile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;

/** The latency figure: from the commit's acknowledgement, and from when the UPDATE was sent. */
export interface NotifyLatency {
  readonly p50: number;
  readonly p99: number;
  readonly fromUpdateSent: { readonly p50: number; readonly p99: number };
  readonly samples: number;
}

/**
 * With `clients` holding one open stream per URI of `uris`, each subscribed to its own: 200
 * single-row changes one after another (`update(uri)` commits one), each of which exactly one
 * stream must hear, timed to its arrival at that stream's socket.
 */
export async function commitLatency(
  clients: SseClients,
  uris: readonly string[],
  update: (uri: string) => Promise<unknown>,
): Promise<NotifyLatency> {
  const latencies: number[] = [];
  const fromSent: number[] = [];
  for (let sample = 0; sample < 200; sample += 1) {
    const uri = uris[(sample * 7) % uris.length] as string;
    const sent = performance.timeOrigin + performance.now();
    await update(uri);
    // The commit is acknowledged: from here on the change is the server's to deliver.
    const committed = performance.timeOrigin + performance.now();
    const { times } = await clients.command<{ times: number[] }>({
      cmd: 'expect',
      events: 1,
      timeoutMs: 5000,
    });
    if (times.length !== 1)
      throw new Error(
        `change ${sample} reached ${times.length} streams, not 1`,
      );
    latencies.push((times[0] as number) - committed);
    fromSent.push((times[0] as number) - sent);
  }
  latencies.sort((a, b) => a - b);
  fromSent.sort((a, b) => a - b);
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    fromUpdateSent: {
      p50: percentile(fromSent, 0.5),
      p99: percentile(fromSent, 0.99),
    },
    samples: latencies.length,
  };
}
