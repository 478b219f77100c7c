// Closed-loop HTTP load for the bench: N callers on keep-alive sockets, counting completions.
import http from 'node:http';
import { createCursorCodec } from '../src/protocol/index.js';

export interface Run {
  count: number;
  perSecond: number;
  p50: number;
  p99: number;
}

export type Workload =
  | { kind: 'list'; minId: number; maxId: number; pageSize: number; cursorSecret: string }
  | { kind: 'list-first' }
  | { kind: 'list-after'; afterId: number; cursorSecret: string }
  | { kind: 'discover' }
  | { kind: 'read'; rows: number };

export interface LoadSpec {
  url: string;
  concurrency: number;
  durationMs: number;
  warmupMs: number;
  workload: Workload;
}

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** Run `task` from `concurrency` loops for durationMs after a warm-up; latencies in ms. */
export async function measure(concurrency: number, durationMs: number, warmupMs: number, task: (i: number) => Promise<void>): Promise<Run> {
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
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
  return { count, perSecond: count / elapsed, p50: at(0.5), p99: at(0.99) };
}

/** Spread keys over the table so pages hit different parts of the index. */
export function spreadId(i: number, minId: number, maxId: number, pageSize: number): number {
  return minId - 1 + ((i * 7919) % Math.max(1, maxId - minId - pageSize));
}

function request(method: string, params: Record<string, unknown>): { body: string; headers: Record<string, string | number> } {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { _meta: META, ...params } });
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': method,
    'Content-Length': Buffer.byteLength(body),
  };
  if (typeof params['uri'] === 'string') headers['Mcp-Name'] = params['uri'];
  return { body, headers };
}

function builder(workload: Workload): (i: number) => { body: string; headers: Record<string, string | number> } {
  switch (workload.kind) {
    case 'list': {
      const cursors = createCursorCodec([workload.cursorSecret]);
      return (i) => request('resources/list', { cursor: cursors.encode({ c: 'resources', k: [String(spreadId(i, workload.minId, workload.maxId, workload.pageSize))] }) });
    }
    case 'list-first': {
      const fixed = request('resources/list', {});
      return () => fixed;
    }
    case 'list-after': {
      const fixed = request('resources/list', { cursor: createCursorCodec([workload.cursorSecret]).encode({ c: 'resources', k: [String(workload.afterId)] }) });
      return () => fixed;
    }
    case 'discover': {
      const fixed = request('server/discover', {});
      return () => fixed;
    }
    case 'read':
      return (i) => request('resources/read', { uri: `bench:///r/${1 + ((i * 7919) % workload.rows)}` });
  }
}

/** Drive `spec.url` with the workload; every answer must be HTTP 200 without a JSON-RPC error. */
export async function runLoad(spec: LoadSpec): Promise<Run> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
  const url = new URL(spec.url);
  const build = builder(spec.workload);
  try {
    return await measure(spec.concurrency, spec.durationMs, spec.warmupMs, (i) => {
      const { body, headers } = build(i);
      return new Promise<void>((resolve, reject) => {
        const outgoing = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (response.statusCode !== 200 || text.startsWith('{"jsonrpc":"2.0","id":1,"error"')) reject(new Error(`HTTP ${response.statusCode}: ${text.slice(0, 200)}`));
            else {
              JSON.parse(text);
              resolve();
            }
          });
        });
        outgoing.on('error', reject);
        outgoing.end(body);
      });
    });
  } finally {
    agent.destroy();
  }
}
