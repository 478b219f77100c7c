// Legacy-era (2025-11-25) benchmarks (issue 14 point 7, docs/benchmarks.md "Method"), run by
// bench/run.ts as the group `legacy`: resources/read and resources/list in open sessions against
// the same requests in the 2026-07-28 era, alternated on the same server with the same callers;
// commit → notifications/resources/updated with 1,000 subscribed sessions; memory per idle session
// with one subscription (bench/legacy-memory.ts in a child process with --expose-gc).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type pg from 'pg';
import { createApp, type App } from '../src/app/index.js';
import { loadConfig } from '../src/config/index.js';
import type { DatabaseHandle } from '../src/db/index.js';
import type { Logger } from '../src/log.js';
import type { HttpEraRoute, HttpTransport } from '../src/transport/index.js';
import { catalogSource } from '../src/resources/index.js';
import type { Dispatcher } from '../src/protocol/index.js';
import type {
  CompareRuns,
  LoadCaller,
  LoadRunner,
  Run,
  Workload,
} from './load.js';
import { listenRequest } from './live.js';
import {
  commitLatency,
  type SseClients,
  startClients,
} from './notify-latency.js';

export interface LegacyBenchContext {
  readonly db: DatabaseHandle;
  readonly admin: pg.Client;
  readonly logger: Logger;
  /** The bench database's URL; the memory figure recreates its own database on that server. */
  readonly databaseUrl: string;
  /** run.ts's HTTP load in a worker thread. */
  readonly load: LoadRunner;
  /** run.ts's alternation of two runs, `ratioOf` per round, medians. */
  readonly compare: CompareRuns;
  /** Serve `dispatcher` with `legacy` sessions over HTTP, tokens verified (serve.ts). */
  readonly serve: (
    dispatcher: Dispatcher,
    legacy: HttpEraRoute | undefined,
  ) => Promise<HttpTransport>;
  /** The list workload of the request-path figures (spread keyset pages)... */
  readonly listWorkload: Workload;
  /** ...whose cursors this secret signs. */
  readonly cursorSecret: string;
  /** Every role's tokens, interleaved, as the request-path figures send them. */
  readonly mix: readonly LoadCaller[];
  /** Tokens of a role that reads every bench row (the subscribers'). */
  readonly all: readonly LoadCaller[];
}

const SUBSCRIBERS = 1000;
const PROTOCOL_VERSION = '2025-11-25';

/** POST one JSON-RPC message as `authorization`, in `session` if given. */
async function post(
  url: string,
  authorization: string,
  message: object,
  session?: string,
): Promise<{ status: number; session: string | null; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: authorization,
      ...(session === undefined
        ? {}
        : {
            'Mcp-Session-Id': session,
            'MCP-Protocol-Version': PROTOCOL_VERSION,
          }),
    },
    body: JSON.stringify(message),
  });
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    text: await response.text(),
  };
}

/** `initialize`, then `notifications/initialized`: the new session's id. */
async function openSession(
  url: string,
  authorization: string,
): Promise<string> {
  const initialized = await post(url, authorization, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'pgmcp-bench', version: '1' },
    },
  });
  const session = initialized.session;
  if (session === null)
    throw new Error(
      `initialize: HTTP ${initialized.status} ${initialized.text}`,
    );
  const ready = await post(
    url,
    authorization,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    session,
  );
  if (ready.status !== 202)
    throw new Error(`initialized: HTTP ${ready.status} ${ready.text}`);
  return session;
}

/** `work(item)` for every item, `width` at a time. */
async function inBatches<T, R>(
  items: readonly T[],
  width: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let from = 0; from < items.length; from += width)
    results.push(
      ...(await Promise.all(
        items
          .slice(from, from + width)
          .map((item, offset) => work(item, from + offset)),
      )),
    );
  return results;
}

/** The app the group serves: caps raised so that 1,000 sessions of one role fit. */
async function legacyApp(context: LegacyBenchContext): Promise<App> {
  const caps = SUBSCRIBERS * 5;
  return createApp({
    db: context.db,
    sources: [await catalogSource(context.db)],
    cursorSecrets: [context.cursorSecret],
    pageSize: 100,
    maxDirectoryEntries: 500,
    live: {
      ...loadConfig({}, {}).live,
      maxStreams: caps,
      maxStreamsPerRole: caps,
      maxLegacySessions: caps,
      maxLegacySessionsPerRole: caps,
    },
    logger: {
      ...context.logger,
      info: () => undefined,
      warn: () => undefined,
    },
  });
}

export async function legacyBenchmarks(
  context: LegacyBenchContext,
): Promise<Record<string, unknown>> {
  const results: Record<string, unknown> = {};
  // Sessions a previous run left behind count against the role's cap.
  await context.admin.query('delete from pgmcp.legacy_sessions');
  const app = await legacyApp(context);
  const server = await context.serve(app.dispatcher, app.otherEraHttp);
  try {
    Object.assign(results, await throughput(context, server.url));
    results['legacy_notify_latency_1000_subscribers'] = await subscribers(
      context,
      app,
      server.url,
    );
  } finally {
    app.fanout.closeAll();
    await server.close();
    await context.admin.query('delete from pgmcp.legacy_sessions');
  }
  results['legacy_memory_per_idle_session'] = await memoryPerSession(
    context.databaseUrl,
  );
  return results;
}

/**
 * resources/read and resources/list, 10 callers: the modern requests (baseline) and the same
 * requests from the same tokens, each in the session it opened (served), alternated.
 */
async function throughput(
  context: LegacyBenchContext,
  url: string,
): Promise<Record<string, unknown>> {
  const { mix, load } = context;
  const sessions = await inBatches(mix, 10, (caller) =>
    openSession(url, caller.authorization),
  );
  const legacy = mix.map((caller, index) => ({
    ...caller,
    legacySession: sessions[index] as string,
  }));
  const ratio = (modern: Run, ours: Run): number =>
    ours.perSecond / modern.perSecond;
  const read: Workload = { kind: 'read', rows: 1_000_000 };
  return {
    legacy_read_vs_modern: await context.compare(
      () => load(url, 10, read, mix),
      () => load(url, 10, read, legacy),
      ratio,
    ),
    legacy_list_vs_modern: await context.compare(
      () => load(url, 10, context.listWorkload, mix),
      () => load(url, 10, context.listWorkload, legacy),
      ratio,
    ),
  };
}

/**
 * 1,000 sessions (bench_all's tokens in turn), each with its GET stream open and subscribed to its
 * own resource; 200 single-row changes one after another, timed as the listen streams' figure is.
 */
async function subscribers(
  context: LegacyBenchContext,
  app: App,
  url: string,
): Promise<unknown> {
  const feed = await app.startChangePath({
    log: (line) => context.logger.warn(line),
  });
  const clients = await startClients();
  try {
    const uris = Array.from(
      { length: SUBSCRIBERS },
      (_, index) => `bench:///r/${1001 + index}`,
    );
    const authorization = (index: number): string =>
      (context.all[index % context.all.length] as LoadCaller).authorization;
    const streams = { app, url, clients, uris, authorization };
    await openSubscribedSessions(streams);
    const update = (uri: string) =>
      context.admin.query(
        'update pgmcp.resources set priority = random() where uri = $1',
        [uri],
      );
    const legacy = await commitLatency(clients, uris, update);
    // Context: the listen streams' figure on the same server in the same run.
    await reopenAsListenStreams(streams);
    return {
      ...legacy,
      listenStreams: await commitLatency(clients, uris, update),
    };
  } finally {
    clients.stop();
    await feed.stop();
  }
}

/** What the subscribers' figure opens: one stream per URI, on `url`, in `clients`. */
interface SubscriberStreams {
  readonly app: App;
  readonly url: string;
  readonly clients: SseClients;
  readonly uris: readonly string[];
  /** Stream i's Authorization header. */
  readonly authorization: (index: number) => string;
}

/** A session per URI, its GET stream open in `clients`, subscribed to that URI. */
async function openSubscribedSessions(
  streams: SubscriberStreams,
): Promise<void> {
  const { app, url, clients, uris, authorization } = streams;
  const sessions = await inBatches(uris, 20, (_, index) =>
    openSession(url, authorization(index)),
  );
  const { host, port } = new URL(url);
  await clients.command({
    cmd: 'open',
    port: Number(port),
    requests: sessions.map(
      (session, index) =>
        `GET /mcp HTTP/1.1\r\nHost: ${host}\r\nAccept: text/event-stream\r\n` +
        `Authorization: ${authorization(index)}\r\nMcp-Session-Id: ${session}\r\n` +
        `MCP-Protocol-Version: ${PROTOCOL_VERSION}\r\n\r\n`,
    ),
  });
  await inBatches(uris, 20, async (uri, index) => {
    const subscribed = await post(
      url,
      authorization(index),
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'resources/subscribe',
        params: { uri },
      },
      sessions[index],
    );
    if (!subscribed.text.includes('"result":{}'))
      throw new Error(`resources/subscribe: ${subscribed.text}`);
  });
  if (app.fanout.size < SUBSCRIBERS)
    throw new Error(
      `${app.fanout.size} of ${SUBSCRIBERS} sessions hold a GET stream`,
    );
}

/** Close the sessions' streams, then open a subscriptions/listen stream per URI instead. */
async function reopenAsListenStreams(
  streams: SubscriberStreams,
): Promise<void> {
  const { app, url, clients, uris, authorization } = streams;
  const port = Number(new URL(url).port);
  await clients.command({ cmd: 'closeAll' });
  while (app.fanout.size > 0)
    await new Promise((resolve) => setTimeout(resolve, 50));
  await clients.command({
    cmd: 'open',
    port,
    requests: uris.map((uri, index) =>
      listenRequest(port, [uri], authorization(index)),
    ),
  });
}

/**
 * bench/legacy-memory.ts in a fresh process with --expose-gc (nothing of the bench's own heap in
 * the figure), on its own database on the bench's server: heap and external bytes per session.
 */
async function memoryPerSession(databaseUrl: string): Promise<unknown> {
  const script = fileURLToPath(new URL('./legacy-memory.js', import.meta.url));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', script],
    {
      env: { ...process.env, BENCH_DATABASE_URL: databaseUrl },
      maxBuffer: 1024 * 1024,
    },
  );
  const figure = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as {
    sessions: number;
    heapBytesPerSession: number;
    externalBytesPerSession: number;
    rssBytesPerSession: number;
  };
  return {
    ...figure,
    bytes: figure.heapBytesPerSession + figure.externalBytesPerSession,
  };
}
