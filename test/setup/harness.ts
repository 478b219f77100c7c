// Test harness: an in-process pgmcp (real Postgres, HTTP on port 0) and a raw MCP client whose
// every response is checked against the official schema.
import net from 'node:net';
import { catalogSource } from '../../src/resources/index.js';
import { inject } from 'vitest';
import { createApp, type AppExtension } from '../../src/app/index.js';
import { LOGIN_PRINCIPAL, type Principal } from '../../src/auth/index.js';
import {
  createDatabase,
  type DatabaseHandle,
  type StandbyOptions,
} from '../../src/db/index.js';
import type { DriverShape } from '../../src/db/driver/index.js';
import type { Config } from '../../src/config/index.js';
import { createLogger } from '../../src/log.js';
import type {
  ChangeFeed,
  StreamRegistry,
} from '../../src/notifications/index.js';
import type { Dispatcher } from '../../src/protocol/index.js';
import type { ToolLimits } from '../../src/tools/index.js';
import { startHttpTransport } from '../../src/transport/index.js';
import { assertValidNotification, assertValidResponse } from './spec-schema.js';

export const PROTOCOL_VERSION = '2026-07-28';
export const TEST_CURSOR_SECRET = 'test-cursor-secret-0123456789';

export const META = {
  'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'pgmcp-tests', version: '0' },
};

export interface TestServer {
  readonly url: string;
  readonly db: DatabaseHandle;
  readonly dispatcher: Dispatcher;
  readonly fanout: StreamRegistry;
  /** The change feed, when started with `live`. */
  readonly feed: ChangeFeed | undefined;
  close(): Promise<void>;
}

/** Live-update settings for tests: the server's defaults, small enough to reach in a test. */
export const TEST_LIVE: Config['live'] = {
  maxStreams: 100,
  maxStreamsPerRole: 50,
  maxSubscriptionUris: 1000,
  keepAliveMs: 15_000,
  maxPendingBytes: 1024 * 1024,
  stallTimeoutMs: 30_000,
  // No pacing: the tests count list_changed per change, so a leak cannot hide in a folded one
  // (fanout.test.ts covers the pacing).
  listChangedIntervalMs: 0,
  changeRetentionSeconds: 86_400,
  sharedDelivery: 'on',
  auditRetentionSeconds: 86_400,
  legacySessionIdleSeconds: 1800,
  maxLegacySessions: 100,
  maxLegacySessionsPerRole: 50,
};

export interface TestServerOptions {
  /** The database to serve (default: the shared test database). */
  databaseUrl?: string;
  pageSize?: number;
  /** Request pool connections (default 4) and the longest wait for one (default 5000 ms). */
  poolSize?: number;
  poolWaitMs?: number;
  maxBodyBytes?: number;
  /** How long and how much of a refused (413) body is drained before the connection closes. */
  drain?: { ms: number; bytes: number };
  maxDirectoryEntries?: number;
  cursorSecrets?: string[];
  allowedOrigins?: string[];
  logLines?: string[];
  /** Who every request runs as (default: the login role). */
  principal?: Principal;
  /** Or: how each request is authenticated (overrides `principal`). */
  authenticate?: (request: {
    headers: { authorization?: string | undefined };
  }) => Promise<Principal>;
  protectedResource?: {
    metadataUrl: string;
    document: Record<string, unknown>;
  };
  /** Role decisions the app forgets when the feed reports a schema change (createApp's). */
  roleDecisions?: { clear(): void };
  /** How long a prompts/list page is kept per role (default: the app's, 10 s). */
  roleCacheMaxAgeMs?: number;
  /** Start the change feed (LISTEN + change log), with these live-update settings over TEST_LIVE. */
  live?: Partial<Config['live']>;
  /** How the change path runs when `live` is set (default: polling every 500 ms, decisions shared). */
  changePath?: {
    pollIntervalMs?: number;
    shareDecisions?: boolean;
    leaderLagMs?: number;
  };
  /** Live-update settings without a change feed (stream caps, listen validation). */
  liveSettings?: Partial<Config['live']>;
  /** The catalog's scope (config file "catalog"); every schema by default. */
  catalogScope?: Config['catalog'];
  /** Row collections (config file "collections"); none by default. */
  collections?: Config['collections'];
  /** Tables whose rows need consent (config file "sensitive"); none by default. */
  sensitive?: Config['sensitive'];
  /** The pg the driver probe checks (src/db/driver/probe.ts): another shape simulates another pg. */
  driverShape?: DriverShape;
  /** Whether the driver internals may be used (default PGMCP_DRIVER_PATCHES). */
  driverPatches?: 'on' | 'off';
  /** The request sessions' statement timeout (default 10 s). */
  statementTimeoutMs?: number;
  /** Query bounds (PGMCP_QUERY_*, PGMCP_AUDIT_TEXT_BYTES) over the defaults. */
  query?: Partial<Config['query']>;
  /** Tool settings (config file "tools"); the defaults by default. */
  tools?: Partial<Config['tools']>;
  /** Tools and prompts added in code (the conformance fixtures: CONFORMANCE_FIXTURES). */
  extension?: AppExtension;
  /** The scope map (config file "scopes"); none by default. */
  scopes?: Config['scopes'];
  /** How long a legacy request waits for the client's answer to a server request (createApp's). */
  inputTimeoutMs?: number;
  /** The clock consents expire by (default Date.now). */
  now?: () => number;
  /** query/explain call limits (createApp's toolLimits); none by default. */
  toolLimits?: ToolLimits;
  /** The sessions' lock_timeout (default: the pool's, 2000 ms) and the feed's pool size. */
  lockTimeoutMs?: number;
  feedPoolSize?: number;
  /** Hot standbys that take the database's reads (config file "standbys"); none by default. */
  standbys?: StandbyOptions;
}

/** The test database URL global setup provided. */
export function testDatabaseUrl(): string {
  return inject('databaseUrl');
}

/** Start pgmcp in this process against the test database. */
export async function startTestServer(
  options: TestServerOptions = {},
): Promise<TestServer> {
  const lines = options.logLines;
  const logger = createLogger({
    stream: {
      write: (chunk: string) =>
        lines === undefined ? true : lines.push(chunk) > 0,
    } as unknown as NodeJS.WritableStream,
  });
  const db = createDatabase({
    connectionString: options.databaseUrl ?? testDatabaseUrl(),
    poolSize: options.poolSize ?? 4,
    poolWaitMs: options.poolWaitMs ?? 5000,
    statementTimeoutMs: options.statementTimeoutMs ?? 10_000,
    lockTimeoutMs: options.lockTimeoutMs,
    feedPoolSize: options.feedPoolSize,
    ...(options.query?.auditTextBytes === undefined
      ? {}
      : { auditTextBytes: options.query.auditTextBytes }),
    onError: (message, error) => logger.error(message, error),
    onWarning: (message) => logger.warn(message),
    ...(options.driverShape === undefined
      ? {}
      : { driverShape: options.driverShape }),
    ...(options.driverPatches === undefined
      ? {}
      : { driverPatches: options.driverPatches }),
    standbys: options.standbys,
  });
  const source = await catalogSource(db, {
    scope: options.catalogScope,
    collections: options.collections,
    sensitive: options.sensitive,
  });
  const app = createApp({
    db,
    sources: [source],
    cursorSecrets: options.cursorSecrets ?? [TEST_CURSOR_SECRET],
    pageSize: options.pageSize ?? 100,
    maxDirectoryEntries: options.maxDirectoryEntries ?? 500,
    live: { ...TEST_LIVE, ...options.liveSettings, ...options.live },
    logger,
    roleDecisions: options.roleDecisions,
    roleCacheMaxAgeMs: options.roleCacheMaxAgeMs,
    ...(options.inputTimeoutMs === undefined
      ? {}
      : { inputTimeoutMs: options.inputTimeoutMs }),
    now: options.now,
    extension: options.extension,
    scopes: options.scopes,
    toolLimits: options.toolLimits,
    tools:
      options.tools === undefined
        ? undefined
        : {
            disabled: [],
            schemas: null,
            explainAnalyze: false,
            searchLimit: 20,
            ...options.tools,
          },
    query:
      options.query === undefined
        ? undefined
        : {
            maxBytes: 24_576,
            maxCost: 1e9,
            tempFileLimitKb: 1_048_576,
            auditTextBytes: 4096,
            ...options.query,
          },
  });
  const feed =
    options.live === undefined
      ? undefined
      : await app.startChangePath({
          pollIntervalMs: 500,
          ...options.changePath,
        });
  const http = await startHttpTransport({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    dispatcher: app.dispatcher,
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    drain: options.drain,
    allowedHosts: ['localhost', '127.0.0.1', '[::1]'],
    allowedOrigins: options.allowedOrigins ?? [],
    authenticate:
      options.authenticate ?? (() => options.principal ?? LOGIN_PRINCIPAL),
    protectedResource: options.protectedResource,
    ready: feed === undefined ? undefined : () => feed.readiness(),
    log: (line) => logger.warn(line),
    otherEra: app.otherEraHttp,
  });
  return {
    url: http.url,
    db,
    dispatcher: app.dispatcher,
    fanout: app.fanout,
    feed,
    async close() {
      app.fanout.closeAll();
      await feed?.stop();
      await http.close();
      await db.close();
    },
  };
}

export interface RawResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | undefined;
  text: string;
}

/** The method a request body names, when it is a JSON object naming one. */
function requestMethod(body: string): string | undefined {
  try {
    const method = (JSON.parse(body) as { method?: unknown }).method;
    return typeof method === 'string' ? method : undefined;
  } catch {
    return undefined;
  }
}

/**
 * POST raw text with the given headers; validates any JSON-RPC body against the official schemas,
 * as the answer to `method` (default: the method the body names).
 */
export async function postRaw(
  url: string,
  body: string,
  headers: Record<string, string>,
  method?: string,
): Promise<RawResponse> {
  const response = await fetch(url, { method: 'POST', headers, body });
  const text = await response.text();
  let parsed: Record<string, unknown> | undefined;
  if (text !== '') {
    parsed = JSON.parse(text) as Record<string, unknown>;
    if (parsed['jsonrpc'] === '2.0')
      assertValidResponse(method ?? requestMethod(body), parsed);
  }
  return {
    status: response.status,
    headers: response.headers,
    body: parsed,
    text,
  };
}

/** The headers a well-behaved 2026-07-28 client sends for `method` (plus Mcp-Name when given). */
export function mcpHeaders(
  method: string,
  name?: string,
): Record<string, string> {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': PROTOCOL_VERSION,
    'Mcp-Method': method,
  };
  if (name !== undefined)
    headers['Mcp-Name'] =
      /^[\x21-\x7e]*$/.test(name) && name !== ''
        ? name
        : `=?base64?${Buffer.from(name).toString('base64')}?=`;
  return headers;
}

let nextId = 1;

/** Send one well-formed request; returns the parsed JSON-RPC response (validated). */
export async function call(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<{
  status: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: Record<string, unknown> };
}> {
  const id = nextId++;
  const name =
    method === 'resources/read' && typeof params['uri'] === 'string'
      ? params['uri']
      : method === 'tools/call' && typeof params['name'] === 'string'
        ? params['name']
        : undefined;
  const response = await postRaw(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method,
      params: { _meta: META, ...params },
    }),
    { ...mcpHeaders(method, name), ...headers },
    method,
  );
  const body = response.body ?? {};
  if (body['id'] !== id)
    throw new Error(
      `response id ${String(body['id'])} does not echo request id ${id}`,
    );
  return {
    status: response.status,
    result: body['result'] as Record<string, unknown> | undefined,
    error: body['error'] as
      | { code: number; message: string; data?: Record<string, unknown> }
      | undefined,
  };
}

/**
 * Follow resources/list from the first page to the last, failing on any error. `onPage` runs after
 * each page (1-based), e.g. to change rows mid-walk.
 */
export async function walkList(
  url: string,
  onPage?: (
    result: Record<string, unknown>,
    page: number,
  ) => Promise<void> | void,
): Promise<{ uris: string[]; pages: Record<string, unknown>[] }> {
  const uris: string[] = [];
  const pages: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  do {
    const { result, error } = await call(
      url,
      'resources/list',
      cursor === undefined ? {} : { cursor },
    );
    if (error !== undefined || result === undefined)
      throw new Error(`resources/list failed: ${JSON.stringify(error)}`);
    pages.push(result);
    uris.push(
      ...(result['resources'] as { uri: string }[]).map(
        (resource) => resource.uri,
      ),
    );
    cursor = result['nextCursor'] as string | undefined;
    await onPage?.(result, pages.length);
  } while (cursor !== undefined);
  return { uris, pages };
}

/** One message a listen stream carried, parsed. */
export type StreamMessage = {
  jsonrpc: '2.0';
  method?: string;
  id?: string | number;
  params?: Record<string, unknown> & { uri?: string };
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: Record<string, unknown> };
};

export interface ListenStream {
  /** HTTP status of the listen response. */
  readonly status: number;
  /** Every message so far, in arrival order (each validated against the schema). */
  readonly messages: StreamMessage[];
  /** Resolves when the server closes the stream. */
  readonly ended: Promise<void>;
  /** Wait until `predicate` holds for the messages so far (polling), or fail after `timeoutMs`. */
  waitFor(
    predicate: (messages: StreamMessage[]) => boolean,
    timeoutMs?: number,
  ): Promise<void>;
  /** URIs of notifications/resources/updated so far. */
  updated(): string[];
  /** How many notifications/resources/list_changed so far. */
  listChanges(): number;
  /** Close the stream (the client's cancel). */
  close(): void;
}

/** Open subscriptions/listen over HTTP and collect what the SSE stream carries. */
export async function listen(
  url: string,
  notifications: Record<string, unknown>,
  options: { id?: string | number; headers?: Record<string, string> } = {},
): Promise<ListenStream> {
  const id = options.id ?? `listen-${nextId++}`;
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...mcpHeaders('subscriptions/listen'), ...options.headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: { _meta: META, notifications },
    }),
    signal: controller.signal,
  });
  const messages: StreamMessage[] = [];
  const accept = (json: string): void => {
    const message = JSON.parse(json) as StreamMessage;
    if (message.method !== undefined) assertValidNotification(message);
    else assertValidResponse('subscriptions/listen', message);
    messages.push(message);
  };
  let ended: Promise<void>;
  if (
    !(response.headers.get('content-type') ?? '').startsWith(
      'text/event-stream',
    )
  ) {
    accept(await response.text());
    ended = Promise.resolve();
  } else {
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    ended = (async () => {
      let buffer = '';
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let boundary = buffer.indexOf('\n\n');
          while (boundary !== -1) {
            const event = buffer.slice(0, boundary);
            buffer = buffer.slice(boundary + 2);
            const data = event
              .split('\n')
              .filter((line) => line.startsWith('data:'))
              .map((line) => line.slice(5).trimStart())
              .join('\n');
            if (data !== '') accept(data);
            boundary = buffer.indexOf('\n\n');
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) throw error;
      }
    })();
    ended.catch(() => undefined);
  }
  return {
    status: response.status,
    messages,
    ended,
    waitFor: async (predicate, timeoutMs = 10_000) => {
      await until(
        () => predicate(messages),
        timeoutMs,
        () =>
          `the listen stream's condition; got ${JSON.stringify(messages).slice(0, 2000)}`,
      );
    },
    updated: () =>
      messages
        .filter(
          (message) => message.method === 'notifications/resources/updated',
        )
        .map((message) => message.params?.uri as string),
    listChanges: () =>
      messages.filter(
        (message) => message.method === 'notifications/resources/list_changed',
      ).length,
    close: () => controller.abort(),
  };
}

/**
 * Open a listen stream on `server` once its feed has delivered what is already committed (so the
 * stream hears only what comes next), and wait for the acknowledgement.
 */
export async function listenFresh(
  server: TestServer,
  notifications: Record<string, unknown>,
): Promise<ListenStream> {
  await server.feed?.poll();
  const stream = await listen(server.url, notifications);
  if (stream.status !== 200)
    throw new Error(`listen answered HTTP ${stream.status}`);
  await stream.waitFor((messages) => messages.length >= 1);
  return stream;
}

/** A TCP port the OS reports free on 127.0.0.1 now, for a database a test starts itself. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Poll `check` every 50 ms until it returns something other than `false` or `undefined`, and resolve
 * to that. Past `timeoutMs` the test fails with an error naming `what` (a function is called then,
 * to describe the state at the time). This is the suite's one wait for a condition: no fixed sleeps.
 */
export async function until<T>(
  check: () => T | false | undefined | Promise<T | false | undefined>,
  timeoutMs: number,
  what: string | (() => string),
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== false && value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The HTTP status of the server's GET /readyz. */
export async function readiness(server: TestServer): Promise<number> {
  const response = await fetch(new URL('/readyz', server.url));
  await response.text();
  return response.status;
}
