// Memory per idle legacy (2025-11-25) HTTP session with one subscription (issue 14 point 7): opens
// N sessions against an in-process pgmcp, each initialized, subscribed to its own resource and
// holding its GET stream open, then reads the heap after a full GC. Run with --expose-gc:
//   npm run bench:legacy-memory  (BENCH_DATABASE_URL or TEST_DATABASE_URL's server; N=LEGACY_SESSIONS)
// Prints one JSON line: sessions, heap and external bytes per session (server and the bare sockets
// of the clients together, so an upper bound on the server's share), and RSS per session.
import http from 'node:http';
import net from 'node:net';
import { createApp, type App } from '../src/app/index.js';
import { LOGIN_PRINCIPAL } from '../src/auth/index.js';
import { MIGRATIONS_DIRECTORY } from '../src/config/index.js';
import {
  createDatabase,
  type DatabaseHandle,
  runMigrations,
} from '../src/db/index.js';
import { createLogger } from '../src/log.js';
import { catalogSource } from '../src/resources/index.js';
import {
  type HttpTransport,
  startHttpTransport,
} from '../src/transport/index.js';
import { recreateDatabase } from '../test/setup/recreate-database.js';

const SESSIONS = Number(process.env['LEGACY_SESSIONS'] ?? 2000);
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) throw new Error('run node with --expose-gc');
  collect();
  collect();
}

/** POST one legacy message; resolves with the status, the session header and the body. */
function post(
  port: number,
  body: object,
  session?: string,
): Promise<{ status: number; session: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        agent,
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          ...(session === undefined
            ? {}
            : {
                'Mcp-Session-Id': session,
                'MCP-Protocol-Version': '2025-11-25',
              }),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            session: response.headers['mcp-session-id'] as string | undefined,
            text,
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

/** The session's GET stream on a bare socket (the least client memory): resolves on its 200. */
function openStream(port: number, session: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(
        `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n` +
          `Mcp-Session-Id: ${session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n`,
      ),
    );
    socket.once('data', (chunk: Buffer) => {
      if (chunk.toString('latin1').startsWith('HTTP/1.1 200')) resolve(socket);
      else reject(new Error(chunk.toString('latin1').slice(0, 200)));
    });
    socket.on('error', reject);
  });
}

async function openSession(port: number, index: number): Promise<net.Socket> {
  const initialized = await post(port, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'memory', version: '1' },
    },
  });
  const session = initialized.session;
  if (session === undefined) throw new Error(initialized.text);
  await post(
    port,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    session,
  );
  const stream = await openStream(port, session);
  const subscribed = await post(
    port,
    {
      jsonrpc: '2.0',
      id: 2,
      method: 'resources/subscribe',
      params: { uri: `notes:///memory/n${index}` },
    },
    session,
  );
  if (!subscribed.text.includes('"result":{}'))
    throw new Error(subscribed.text);
  return stream;
}

/** A fresh database on the bench's server, migrated, with one resource for each session. */
async function seededDatabase(): Promise<DatabaseHandle> {
  const base =
    process.env['BENCH_DATABASE_URL'] ?? process.env['TEST_DATABASE_URL'];
  if (base === undefined || base === '')
    throw new Error('set BENCH_DATABASE_URL or TEST_DATABASE_URL');
  const url = await recreateDatabase(base, 'pgmcp_legacy_memory');
  const db = createDatabase({
    connectionString: url,
    poolSize: 4,
    statementTimeoutMs: 60_000,
    onError: () => undefined,
  });
  const admin = await db.connectAdmin();
  await runMigrations(admin, MIGRATIONS_DIRECTORY, () => undefined);
  await admin.query(
    `insert into pgmcp.resources (uri, name, text)
     select format('notes:///memory/n%s', i), 'n', 'v' from generate_series(0, $1 - 1) as i`,
    [SESSIONS],
  );
  await admin.end();
  return db;
}

/** pgmcp over HTTP with legacy sessions, caps raised to fit every session, as the login. */
async function startServer(
  db: DatabaseHandle,
): Promise<{ app: App; server: HttpTransport }> {
  const logger = createLogger({
    stream: { write: () => true } as unknown as NodeJS.WritableStream,
  });
  const caps = SESSIONS + 10;
  const app = createApp({
    db,
    sources: [await catalogSource(db, {})],
    cursorSecrets: ['legacy-memory-secret-0123456789'],
    pageSize: 100,
    maxDirectoryEntries: 500,
    live: {
      maxStreams: caps,
      maxStreamsPerRole: caps,
      maxSubscriptionUris: 1000,
      keepAliveMs: 15_000,
      maxPendingBytes: 1024 * 1024,
      stallTimeoutMs: 30_000,
      listChangedIntervalMs: 1000,
      changeRetentionSeconds: 86_400,
      sharedDelivery: 'on',
      auditRetentionSeconds: 7_776_000,
      legacySessionIdleSeconds: 1800,
      maxLegacySessions: caps,
      maxLegacySessionsPerRole: caps,
    },
    logger,
  });
  const server = await startHttpTransport({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    dispatcher: app.dispatcher,
    maxBodyBytes: 1024 * 1024,
    allowedHosts: ['127.0.0.1'],
    allowedOrigins: [],
    authenticate: () => LOGIN_PRINCIPAL,
    log: () => undefined,
    otherEra: app.otherEraHttp,
  });
  return { app, server };
}

/**
 * Open the sessions and print the figure: memory after GC with all of them open, against after
 * the first. Returns every session's stream, for the caller to close.
 */
async function measureSessions(port: number): Promise<net.Socket[]> {
  // Warm every path (and the pool) once, so the baseline already holds the code and caches.
  const warm = await openSession(port, 0);
  gc();
  const before = process.memoryUsage();
  const streams: net.Socket[] = [];
  for (let index = 1; index < SESSIONS; index += 1)
    streams.push(await openSession(port, index));
  gc();
  const after = process.memoryUsage();
  const sessions = streams.length;
  const perSession = (key: keyof NodeJS.MemoryUsage): number =>
    Math.round((after[key] - before[key]) / sessions);
  process.stdout.write(
    `${JSON.stringify({
      sessions,
      heapBytesPerSession: perSession('heapUsed'),
      externalBytesPerSession: perSession('external'),
      rssBytesPerSession: perSession('rss'),
    })}\n`,
  );
  return [warm, ...streams];
}

async function main(): Promise<void> {
  const db = await seededDatabase();
  const { app, server } = await startServer(db);
  const sockets = await measureSessions(Number(new URL(server.url).port));
  for (const socket of sockets) socket.destroy();
  app.fanout.closeAll();
  agent.destroy();
  await server.close();
  await db.close();
}

await main();
