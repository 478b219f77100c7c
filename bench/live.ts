// Live-update benchmarks (docs/benchmarks.md "Method"), run by bench/run.ts in the same run as the
// others: commit → notification latency with 1,000 open streams, one change fanned out to 10,000
// streams against a bare node:http SSE broadcast, resources/read p99 during those broadcasts,
// memory per idle stream, and write throughput with the capture triggers against without.
import { catalogSource } from '../src/resources/index.js';
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import type pg from 'pg';
import { createApp, type App } from '../src/app/index.js';
import { loadConfig } from '../src/config/index.js';
import type { DatabaseHandle } from '../src/db/index.js';
import type { Logger } from '../src/log.js';
import type { Dispatcher } from '../src/protocol/index.js';
import type { HttpTransport } from '../src/transport/index.js';
import { alternate } from './alternate.js';
import { measure, type Run } from './load.js';
import {
  commitLatency,
  type SseClients,
  startClients,
} from './notify-latency.js';

export interface LiveBenchContext {
  readonly db: DatabaseHandle;
  readonly admin: pg.Client;
  readonly logger: Logger;
  readonly durationMs: number;
  readonly rounds: number;
  /** resources/read load on `url` for durationMs (a worker thread), as run.ts runs it. */
  readonly readLoad: (url: string) => Promise<Run>;
  /** The read load's warm-up before its measured part, in ms. */
  readonly readWarmupMs: number;
  /** Serve `dispatcher` over HTTP with token authentication (serve.ts). */
  readonly serve: (dispatcher: Dispatcher) => Promise<HttpTransport>;
  /** The listen streams' Authorization headers, for a role that reads every bench row. */
  readonly authorizations: readonly string[];
}

export interface LiveBenchOutput {
  readonly results: Record<string, unknown>;
}

const URI = 'bench:///r/1';
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A subscriptions/listen POST for `uris`, as raw HTTP/1.1 (bench/legacy.ts uses it too). */
export function listenRequest(
  port: number,
  uris: string[],
  authorization: string,
): string {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 'bench-listen',
    method: 'subscriptions/listen',
    params: { _meta: META, notifications: { resourceSubscriptions: uris } },
  });
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n` +
    `Mcp-Method: subscriptions/listen\r\nAuthorization: ${authorization}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function heapAfterGc(): number {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

export async function liveBenchmarks(
  context: LiveBenchContext,
): Promise<LiveBenchOutput> {
  const results: Record<string, unknown> = {};
  const rig = await startRig(context);
  try {
    // 1. Commit → notification at the client with 1,000 open streams, each subscribed to its own
    //    resource: 200 changes one after another, each heard by the one stream that asked.
    const heapBefore = heapAfterGc();
    results['notify_latency_1000_streams'] = await notifyLatency(rig);
    // 2. Memory per idle stream: figure 1's streams closed, 10,000 on one resource, the server's
    //    heap (JS heap and external memory) after GC, against before any stream was open.
    results['memory_per_idle_stream'] = await memoryPerIdleStream(
      rig,
      heapBefore,
    );
    // 3. One change to 10,000 streams vs a bare node:http SSE broadcast of the same size, with
    //    resources/read running alongside ours (its p99 during the broadcasts is the third
    //    figure). The sides take turns, never at once: both would need 20,000 sockets in this
    //    process, the usual open-file limit.
    Object.assign(results, await broadcastFigures(context, rig));
    // 4. Write throughput of single-row updates with the capture triggers vs without: one writer
    //    (the target) and ten (context: concurrent writers that NOTIFY commit one at a time).
    Object.assign(results, await captureWriteFigures(context, rig));
  } finally {
    rig.clients.stop();
    rig.app.fanout.closeAll();
    await rig.feed.stop();
    await rig.server.close();
  }
  return { results };
}

/** What the live figures run against: pgmcp over HTTP with its change feed, and the SSE clients. */
interface LiveRig {
  readonly app: App;
  readonly feed: Awaited<ReturnType<App['startChangePath']>>;
  readonly server: HttpTransport;
  readonly port: number;
  readonly clients: SseClients;
  /** Stream i's Authorization header: the tokens in turn. */
  readonly authorization: (i: number) => string;
  /** One single-row update, committed on its own. */
  readonly update: (uri?: string) => Promise<unknown>;
}

/** An app with stream caps above 10,000, its change feed started, served; the SSE clients. */
async function startRig(context: LiveBenchContext): Promise<LiveRig> {
  const { db, admin, logger } = context;
  const silent = { ...logger, info: () => undefined, warn: () => undefined };
  const live = {
    ...loadConfig({}, {}).live,
    maxStreams: 20_000,
    maxStreamsPerRole: 20_000,
  };
  const source = await catalogSource(db);
  const app = createApp({
    db,
    sources: [source],
    cursorSecrets: ['bench-live-cursor-secret-0123456789'],
    pageSize: 100,
    maxDirectoryEntries: 500,
    live,
    logger: silent,
  });
  const feed = await app.startChangePath({ log: (line) => logger.warn(line) });
  const server = await context.serve(app.dispatcher);
  const { authorizations } = context;
  return {
    app,
    feed,
    server,
    port: Number(new URL(server.url).port),
    clients: await startClients(),
    authorization: (i) => authorizations[i % authorizations.length] as string,
    update: (uri = URI) =>
      admin.query(
        `update pgmcp.resources set priority = random() where uri = $1`,
        [uri],
      ),
  };
}

/** Wait until the server holds no stream. */
async function streamsClosed(app: App): Promise<void> {
  while (app.fanout.size > 0)
    await new Promise((resolve) => setTimeout(resolve, 50));
}

/** Figure 1: 1,000 streams, each on its own resource, and the commit → notification latency. */
async function notifyLatency(rig: LiveRig): Promise<unknown> {
  const { clients, port, authorization } = rig;
  const latencyUris = Array.from(
    { length: 1000 },
    (_, index) => `bench:///r/${1001 + index}`,
  );
  await clients.command({
    cmd: 'open',
    port,
    requests: latencyUris.map((uri, i) =>
      listenRequest(port, [uri], authorization(i)),
    ),
  });
  return commitLatency(clients, latencyUris, rig.update);
}

/** Figure 2: those closed, 10,000 streams on one resource (left open), bytes per stream. */
async function memoryPerIdleStream(
  rig: LiveRig,
  heapBefore: number,
): Promise<unknown> {
  const { app } = rig;
  await reopenStreams(rig, rig.port);
  const heapAfter = heapAfterGc();
  const perStream = (heapAfter - heapBefore) / app.fanout.size;
  return { bytes: perStream, streams: app.fanout.size };
}

/**
 * Figure 3: one change to 10,000 streams of pgmcp against the same event written to 10,000 streams
 * of a bare node:http server, `max(5, rounds)` broadcasts each, the sides alternated ABBA so that
 * drift (the client process, the machine) falls on both. The clients hold one side's 10,000
 * streams at a time and reopen them when the side changes. resources/read loads run during
 * pgmcp's broadcasts; their worst p99 is reported beside.
 */
async function broadcastFigures(
  context: LiveBenchContext,
  rig: LiveRig,
): Promise<Record<string, unknown>> {
  const broadcasts = Math.max(5, context.rounds);
  const bare = await startBareSse();
  const sides = broadcastSides(context, rig, bare);
  let pairs: [number, number][];
  try {
    pairs = await alternate(broadcasts, sides.bare, sides.ours);
  } finally {
    await sides.close();
    await bare.close();
  }
  const oursTimes = pairs.map(([, ours]) => ours);
  const bareTimes = pairs.map(([baseline]) => baseline);
  const ours = median(oursTimes);
  const baseline = median(bareTimes);
  const rounds = pairs.map(([base, served]) => served / base);
  const readRuns = sides.readRuns;
  return {
    fanout_10000_vs_bare_sse: {
      served: ours,
      baseline,
      ratio: median(rounds),
      rounds,
      servedRounds: oursTimes,
      baselineRounds: bareTimes,
    },
    read_p99_during_broadcast: {
      p99: Math.max(...readRuns.map((run) => run.p99)),
      runs: readRuns,
    },
  };
}

/** A bare node:http SSE server: its URL, a write of one event to every stream, and close. */
type BareSse = Awaited<ReturnType<typeof startBareSse>>;

/**
 * The two sides of figure 3 as functions that each run one broadcast and return the time until
 * the last of the 10,000 streams had it, opening that side's streams first when the clients hold
 * the other side's. pgmcp's side runs one resources/read load around its broadcast, which starts
 * once the load's warm-up is over.
 */
function broadcastSides(
  context: LiveBenchContext,
  rig: LiveRig,
  bare: BareSse,
): {
  bare: () => Promise<number>;
  ours: () => Promise<number>;
  readRuns: Run[];
  close: () => Promise<void>;
} {
  const barePort = Number(new URL(bare.url).port);
  // Figure 2 left pgmcp's 10,000 streams open.
  let open = rig.app.fanout.size >= 10_000 ? rig.port : 0;
  const openOn = async (port: number): Promise<void> => {
    if (open !== port) await reopenStreams(rig, port);
    open = port;
  };
  const readRuns: Run[] = [];
  const sample = `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"bench-listen"},"uri":"${URI}"}}`;
  return {
    readRuns,
    bare: async () => {
      await openOn(barePort);
      const start = performance.timeOrigin + performance.now();
      bare.broadcast(`data: ${sample}\n\n`);
      return lastHeard(rig.clients, start);
    },
    ours: async () => {
      await openOn(rig.port);
      const reads = context.readLoad(rig.server.url);
      try {
        await new Promise((resolve) =>
          setTimeout(resolve, context.readWarmupMs + 250),
        );
        const start = performance.timeOrigin + performance.now();
        await rig.update();
        return await lastHeard(rig.clients, start);
      } finally {
        // Awaited even when the broadcast failed, so the load never outlives the figure.
        readRuns.push(await reads);
      }
    },
    close: () => closeStreams(rig),
  };
}

/** Close every client stream and wait until pgmcp holds none. */
async function closeStreams(rig: LiveRig): Promise<void> {
  await rig.clients.command({ cmd: 'closeAll' });
  await streamsClosed(rig.app);
}

/** Close every client stream, then open 10,000 on `port`, all listening to URI. */
async function reopenStreams(rig: LiveRig, port: number): Promise<void> {
  await closeStreams(rig);
  await rig.clients.command({
    cmd: 'open',
    port,
    requests: Array.from({ length: 10_000 }, (_, i) =>
      listenRequest(port, [URI], rig.authorization(i)),
    ),
  });
}

/** Ms from `start` until the last of 10,000 streams had the event; then a 300 ms pause. */
async function lastHeard(clients: SseClients, start: number): Promise<number> {
  const { times } = await clients.command<{ times: number[] }>({
    cmd: 'expect',
    events: 10_000,
    timeoutMs: 10_000,
  });
  if (times.length < 10_000)
    throw new Error(`only ${times.length} of 10,000 streams heard the change`);
  const elapsed = Math.max(...times) - start;
  await new Promise((resolve) => setTimeout(resolve, 300));
  return elapsed;
}

/** One variant of figure 4: how many writers, and whether the change feed runs meanwhile. */
interface WriteVariant {
  readonly writers: number;
  readonly feed: boolean;
}

/** Figure 4, one entry per variant. */
async function captureWriteFigures(
  context: LiveBenchContext,
  rig: LiveRig,
): Promise<Record<string, unknown>> {
  const results: Record<string, unknown> = {};
  // The trigger's cost alone is the target: the change feed (which reads the log after each
  // commit) is stopped first; the third row puts it back, as context.
  await rig.feed.stop();
  const variants: WriteVariant[] = [
    { writers: 1, feed: false },
    { writers: 10, feed: false },
    { writers: 1, feed: true },
  ];
  for (const variant of variants)
    results[
      `writes_with_capture_vs_without_${variant.writers}${variant.feed ? '_listening' : ''}`
    ] = await captureWrites(context, rig, variant);
  return results;
}

/** Single-row updates without the capture trigger and with it, alternated ABBA for the rounds. */
async function captureWrites(
  context: LiveBenchContext,
  rig: LiveRig,
  variant: WriteVariant,
): Promise<unknown> {
  const { db, admin, logger } = context;
  const toggle = (enable: boolean) =>
    admin.query(
      `alter table pgmcp.resources ${enable ? 'enable' : 'disable'} trigger resources_capture_updates`,
    );
  const running = variant.feed
    ? await rig.app.startChangePath({ log: (line) => logger.warn(line) })
    : undefined;
  const writes = () =>
    measure(variant.writers, context.durationMs, 300, async (i) => {
      await db.pool.query(
        'begin read write; update pgmcp.resources set priority = random() where id = ' +
          String(1 + ((i * 7919) % 1_000_000)) +
          '; commit',
      );
    });
  const ratios: number[] = [];
  const withRuns: Run[] = [];
  const withoutRuns: Run[] = [];
  try {
    const writesWith = async (enable: boolean): Promise<Run> => {
      await toggle(enable);
      return writes();
    };
    const pairs = await alternate(
      context.rounds,
      () => writesWith(false),
      () => writesWith(true),
    );
    for (const [without, withTriggers] of pairs) {
      withoutRuns.push(without);
      withRuns.push(withTriggers);
      ratios.push(withTriggers.perSecond / without.perSecond);
    }
  } finally {
    await toggle(true);
    await running?.stop();
  }
  return {
    ratio: median(ratios),
    rounds: ratios,
    with: withRuns,
    without: withoutRuns,
  };
}

/** A bare node:http server holding SSE responses, with a broadcast that writes to each. */
async function startBareSse(): Promise<{
  url: string;
  broadcast: (event: string) => void;
  close: () => Promise<void>;
}> {
  const streams = new Set<http.ServerResponse>();
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'Content-Type': 'text/event-stream' });
      response.write('data: {"open":true}\n\n');
      streams.add(response);
      response.on('close', () => streams.delete(response));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`,
    broadcast: (event) => {
      for (const response of streams) response.write(event);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
