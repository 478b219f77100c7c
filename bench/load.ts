// Closed-loop HTTP load for the bench: N callers on keep-alive sockets, counting completions.
import net from 'node:net';
import { createCursorCodec } from '../src/protocol/index.js';

export interface Run {
  count: number;
  perSecond: number;
  p50: number;
  p99: number;
}

export type Workload =
  | {
      kind: 'list';
      minId: number;
      maxId: number;
      pageSize: number;
      cursorSecret: string;
    }
  | { kind: 'list-first' }
  | { kind: 'list-after'; afterId: number; cursorSecret: string }
  | { kind: 'discover' }
  | { kind: 'prompts-list' }
  | { kind: 'read'; rows: number }
  | { kind: 'read-uris'; uris: string[] }
  // bench/tools.ts: tools/list; search for one of the caller's rows by two words of its title; the
  // query tool reading one of the caller's rows by primary key (the raw point read's statement).
  | { kind: 'tools-list' }
  | { kind: 'tool-search'; rows: number }
  | { kind: 'tool-query'; rows: number; sql: string };

/** run.ts's `load`: an HTTP load on `url` for the bench's duration, in a worker thread. */
export type LoadRunner = (
  url: string,
  concurrency: number,
  workload: Workload,
  callers: readonly LoadCaller[],
) => Promise<Run>;

/** run.ts's `compare`: two runs alternated for the rounds, `ratioOf` per round, medians. */
export type CompareRuns = (
  baseline: () => Promise<Run>,
  served: () => Promise<Run>,
  ratioOf: (base: Run, ours: Run) => number,
) => Promise<unknown>;

/** Who sends a request: its bearer token, and which stored rows its role reads. */
export interface LoadCaller {
  /** The Authorization header value. */
  readonly authorization: string;
  /** The role reads rows numbered in multiples of this (1: every row). */
  readonly rowStride: number;
  /** The role its token names (the bare safe query server runs as it). */
  readonly role?: string;
  /**
   * A 2025-11-25 session this caller opened with `initialize` (bench/legacy.ts): its requests
   * carry Mcp-Session-Id and MCP-Protocol-Version instead of the 2026-07-28 `_meta`.
   */
  readonly legacySession?: string;
}

export interface LoadSpec {
  url: string;
  concurrency: number;
  durationMs: number;
  warmupMs: number;
  workload: Workload;
  /** Request i is sent by callers[i % callers.length]. */
  callers: readonly LoadCaller[];
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** Run `task` from `concurrency` loops for durationMs after a warm-up; latencies in ms. */
export async function measure(
  concurrency: number,
  durationMs: number,
  warmupMs: number,
  task: (i: number) => Promise<void>,
): Promise<Run> {
  const latencies: number[] = [];
  const phase = async (ms: number, record: boolean): Promise<number> => {
    const end = performance.now() + ms;
    let count = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async (_, worker) => {
        let i = worker;
        while (performance.now() < end) {
          const start = performance.now();
          await task(i);
          if (record) latencies.push(performance.now() - start);
          count += 1;
          i += concurrency;
        }
      }),
    );
    return count;
  };
  await phase(warmupMs, false);
  const started = performance.now();
  const count = await phase(durationMs, true);
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[
      Math.min(latencies.length - 1, Math.floor(latencies.length * q))
    ] ?? 0;
  return { count, perSecond: count / elapsed, p50: at(0.5), p99: at(0.99) };
}

/** Spread keys over the table so pages hit different parts of the index. */
export function spreadId(
  i: number,
  minId: number,
  maxId: number,
  pageSize: number,
): number {
  return minId - 1 + ((i * 7919) % Math.max(1, maxId - minId - pageSize));
}

/** A JSON-RPC request's body and headers, as `caller` sends them. */
export function request(
  caller: LoadCaller,
  method: string,
  params: Record<string, unknown>,
): { body: string; headers: Record<string, string | number> } {
  if (caller.legacySession !== undefined)
    return legacyRequest(caller, caller.legacySession, method, params);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method,
    params: { _meta: META, ...params },
  });
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': method,
    Authorization: caller.authorization,
    'Content-Length': Buffer.byteLength(body),
  };
  if (typeof params['uri'] === 'string') headers['Mcp-Name'] = params['uri'];
  if (method === 'tools/call' && typeof params['name'] === 'string')
    headers['Mcp-Name'] = params['name'];
  return { body, headers };
}

/** The same request in a 2025-11-25 session: no `_meta`, the session's headers. */
function legacyRequest(
  caller: LoadCaller,
  session: string,
  method: string,
  params: Record<string, unknown>,
): { body: string; headers: Record<string, string | number> } {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  return {
    body,
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-11-25',
      'Mcp-Session-Id': session,
      Authorization: caller.authorization,
      'Content-Length': Buffer.byteLength(body),
    },
  };
}

type Build = (
  i: number,
  caller: LoadCaller,
) => { body: string; headers: Record<string, string | number> };

function builder(workload: Workload): Build {
  switch (workload.kind) {
    case 'list':
    case 'list-first':
    case 'list-after':
      return listBuilder(workload);
    case 'discover':
      return (_, caller) => request(caller, 'server/discover', {});
    case 'prompts-list':
      return (_, caller) => request(caller, 'prompts/list', {});
    case 'read':
      // Rows the caller's role reads, spread over the table.
      return (i, caller) => {
        const rows = Math.floor(workload.rows / caller.rowStride);
        return request(caller, 'resources/read', {
          uri: `bench:///r/${caller.rowStride * (1 + ((i * 7919) % rows))}`,
        });
      };
    case 'read-uris':
      return (i, caller) =>
        request(caller, 'resources/read', {
          uri: workload.uris[i % workload.uris.length],
        });
    case 'tools-list':
      return (_, caller) => request(caller, 'tools/list', {});
    case 'tool-search':
      return (i, caller) =>
        request(caller, 'tools/call', {
          name: 'search',
          arguments: {
            query: `resource ${callerRow(i, caller, workload.rows)}`,
          },
        });
    case 'tool-query':
      return (i, caller) =>
        request(caller, 'tools/call', {
          name: 'query',
          arguments: {
            sql: workload.sql,
            params: [`bench:///r/${callerRow(i, caller, workload.rows)}`],
          },
        });
  }
}

/** resources/list requests: spread keyset pages, the first page, or the page after one id. */
function listBuilder(
  workload: Extract<Workload, { kind: 'list' | 'list-first' | 'list-after' }>,
): Build {
  switch (workload.kind) {
    case 'list': {
      const cursors = createCursorCodec([workload.cursorSecret]);
      return (i, caller) =>
        request(caller, 'resources/list', {
          cursor: cursors.encode({
            c: 'resources',
            k: [
              String(
                spreadId(i, workload.minId, workload.maxId, workload.pageSize),
              ),
            ],
          }),
        });
    }
    case 'list-first':
      return (_, caller) => request(caller, 'resources/list', {});
    case 'list-after': {
      const cursor = createCursorCodec([workload.cursorSecret]).encode({
        c: 'resources',
        k: [String(workload.afterId)],
      });
      return (_, caller) => request(caller, 'resources/list', { cursor });
    }
  }
}

/** The number of a bench row the caller's role reads, spread over the table. */
function callerRow(i: number, caller: LoadCaller, rows: number): number {
  return (
    caller.rowStride * (1 + ((i * 7919) % Math.floor(rows / caller.rowStride)))
  );
}

/** How a JSON-RPC error response begins: pgmcp puts `error` right after `id`, the peer first. */
const ERROR_PREFIXES = [
  Buffer.from('{"jsonrpc":"2.0","id":1,"error"'),
  Buffer.from('{"error"'),
];

/** Send one request on `connection`; the response body, which must be HTTP 200 and not an error. */
export async function exchangeOk(
  connection: Connection,
  bytes: Buffer,
): Promise<Buffer> {
  const response = await connection.exchange(bytes);
  if (
    response.status !== 200 ||
    ERROR_PREFIXES.some((prefix) =>
      response.body.subarray(0, prefix.length).equals(prefix),
    )
  )
    throw new Error(
      `HTTP ${response.status}: ${response.body.subarray(0, 200).toString()}`,
    );
  return response.body;
}

/** Requests made before a run starts: more than a phase of the fastest measure sends. */
const PREBUILT = 65_536;

/**
 * The bytes of request `i` of a workload, sent by caller i % callers. The first PREBUILT are
 * serialized before the run, like wrk's, so that building JSON and signing cursors is not billed
 * to the server; any later ones as they are needed. Every call sees the same requests in the same
 * order as before (keys spread over the table by spreadId), only made earlier.
 */
function requestBytes(url: URL, spec: LoadSpec): (i: number) => Buffer {
  const build = builder(spec.workload);
  const { callers } = spec;
  if (callers.length === 0) throw new Error('a load needs callers');
  const serialize = (i: number): Buffer => {
    const { body, headers } = build(
      i,
      callers[i % callers.length] as LoadCaller,
    );
    return serializeRequest(url, body, headers);
  };
  const kind = spec.workload.kind;
  // One request per caller when the workload sends the same request each time.
  const fixed =
    kind === 'list-first' ||
    kind === 'list-after' ||
    kind === 'discover' ||
    kind === 'tools-list';
  const made = Array.from(
    { length: fixed ? callers.length : PREBUILT },
    (_, i) => serialize(i),
  );
  return fixed
    ? (i) => made[i % made.length] as Buffer
    : (i) => made[i] ?? serialize(i);
}

/**
 * Drive `spec.url` with the workload over raw keep-alive sockets, one request in flight per
 * socket, like wrk: requests are pre-serialized bytes and responses are framed by Content-Length,
 * so the load generator spends little CPU of its own. Every response must be HTTP 200 and not a
 * JSON-RPC error; one in 50 is also parsed in full.
 */
export async function runLoad(spec: LoadSpec): Promise<Run> {
  const url = new URL(spec.url);
  const bytes = requestBytes(url, spec);
  const connections: Connection[] = [];
  for (let index = 0; index < spec.concurrency; index += 1)
    connections.push(await connect(url));
  let checked = 0;
  try {
    return await measure(
      spec.concurrency,
      spec.durationMs,
      spec.warmupMs,
      async (i) => {
        const connection = connections[i % spec.concurrency] as Connection;
        const body = await exchangeOk(connection, bytes(i));
        if (checked++ % 50 === 0) JSON.parse(body.toString('utf8'));
      },
    );
  } finally {
    for (const connection of connections) connection.close();
  }
}

/** One HTTP/1.1 keep-alive POST, as bytes. */
export function serializeRequest(
  url: URL,
  body: string,
  headers: Record<string, string | number>,
): Buffer {
  let head = `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: keep-alive\r\n`;
  for (const [name, value] of Object.entries(headers))
    head += `${name}: ${value}\r\n`;
  return Buffer.concat([Buffer.from(`${head}\r\n`), Buffer.from(body)]);
}

/** A keep-alive socket with one request in flight at a time. */
export interface Connection {
  exchange(request: Buffer): Promise<{ status: number; body: Buffer }>;
  close(): void;
}

export function connect(url: URL): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    let buffered: Buffer = Buffer.alloc(0);
    let pending:
      | {
          resolve: (value: { status: number; body: Buffer }) => void;
          reject: (error: Error) => void;
        }
      | undefined;
    const tryComplete = (): void => {
      if (pending === undefined) return;
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = buffered.subarray(0, end).toString('latin1');
      const length = Number(
        /content-length:\s*(\d+)/i.exec(head)?.[1] ?? 'NaN',
      );
      if (!Number.isFinite(length)) {
        pending.reject(
          new Error(`response without Content-Length: ${head.slice(0, 200)}`),
        );
        return;
      }
      if (buffered.length < end + 4 + length) return;
      const status = Number(head.slice(9, 12));
      // Bodies stay bytes: decoding every 30 KB page would bill the client's work to the server.
      const body = buffered.subarray(end + 4, end + 4 + length);
      buffered = buffered.subarray(end + 4 + length);
      const done = pending;
      pending = undefined;
      done.resolve({ status, body });
    };
    socket.on('data', (chunk: Buffer) => {
      buffered =
        buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      tryComplete();
    });
    socket.on('error', (error) => {
      if (pending !== undefined) pending.reject(error);
      else reject(error);
    });
    socket.once('connect', () =>
      resolve({
        exchange(request) {
          return new Promise((resolveExchange, rejectExchange) => {
            pending = { resolve: resolveExchange, reject: rejectExchange };
            socket.write(request);
          });
        },
        close: () => socket.destroy(),
      }),
    );
  });
}
