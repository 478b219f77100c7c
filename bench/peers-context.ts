// What two peer servers put in an agent's context for the same tables as the catalog bench's context
// sizes (docs/benchmarks.md "Peers"): the archived reference server @modelcontextprotocol/server-postgres
// and DBHub (@bytebase/dbhub), each installed by npm outside this repository (PEERS_DIR, default
// /tmp/peers) and spoken to over stdio. Prints one line per answer: bytes and about bytes / 4 tokens.
//
//   node dist/bench/peers-context.js <database-url> <schema> <table>
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

interface Peer {
  readonly name: string;
  readonly package: string;
  readonly args: (url: string) => string[];
  /** The requests whose text answers are measured, by what they stand for. */
  readonly asks: (
    url: string,
    schema: string,
    table: string,
  ) => [string, string, Record<string, unknown>][];
}

const tool = (
  name: string,
  args: Record<string, unknown>,
): Record<string, unknown> => ({ name, arguments: args });

const PEERS: Peer[] = [
  {
    name: 'reference server',
    package: '@modelcontextprotocol/server-postgres',
    args: (url) => [url],
    asks: (url, _schema, table) => {
      const base = new URL(url);
      base.protocol = 'postgres:';
      base.password = '';
      return [
        ['tools (`tools/list`)', 'tools/list', {}],
        [
          'listing (`resources/list`, schema public only)',
          'resources/list',
          {},
        ],
        [
          'table (`resources/read` of `<table>/schema`)',
          'resources/read',
          { uri: new URL(`${table}/schema`, base).href },
        ],
      ];
    },
  },
  {
    name: 'DBHub',
    package: '@bytebase/dbhub',
    args: (url) => ['--transport', 'stdio', '--dsn', url],
    asks: (_url, schema, table) => [
      ['tools (`tools/list`)', 'tools/list', {}],
      [
        'schemas (`search_objects` schema, summary)',
        'tools/call',
        tool('search_objects', {
          object_type: 'schema',
          detail_level: 'summary',
        }),
      ],
      [
        'tables of the schema (`search_objects` table, summary)',
        'tools/call',
        tool('search_objects', {
          object_type: 'table',
          schema,
          detail_level: 'summary',
        }),
      ],
      [
        'table (`search_objects` table, full)',
        'tools/call',
        tool('search_objects', {
          object_type: 'table',
          schema,
          pattern: table,
          detail_level: 'full',
        }),
      ],
    ],
  },
];

/** A JSON-RPC client over a child's stdio (one request in flight at a time). */
function rpc(
  child: ChildProcessWithoutNullStreams,
): (method: string, params: Record<string, unknown>) => Promise<unknown> {
  let nextId = 1;
  const waiting = new Map<number, (message: Record<string, unknown>) => void>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (!line.startsWith('{')) return;
    const message = JSON.parse(line) as Record<string, unknown>;
    const resolve = waiting.get(message['id'] as number);
    if (resolve !== undefined) resolve(message);
  });
  return (method, params) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, (message) => {
        waiting.delete(id);
        if (message['error'] !== undefined)
          reject(new Error(JSON.stringify(message['error'])));
        else resolve(message['result']);
      });
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`,
      );
    });
}

/** Bytes of an answer's text: resource contents, tool content, or the JSON of a list. */
function textBytes(result: unknown): number {
  const answer = result as {
    contents?: { text?: string }[];
    content?: { text?: string }[];
  };
  const parts = answer.contents ?? answer.content;
  if (parts === undefined) return Buffer.byteLength(JSON.stringify(result));
  return parts.reduce(
    (sum, part) => sum + Buffer.byteLength(part.text ?? ''),
    0,
  );
}

async function measure(
  peer: Peer,
  directory: string,
  target: { url: string; schema: string; table: string },
): Promise<void> {
  const root = path.join(directory, 'node_modules', peer.package);
  const manifest = JSON.parse(
    readFileSync(path.join(root, 'package.json'), 'utf8'),
  ) as { version: string; bin: string | Record<string, string> };
  const bin =
    typeof manifest.bin === 'string'
      ? manifest.bin
      : (Object.values(manifest.bin)[0] ?? 'dist/index.js');
  const child = spawn(process.execPath, [
    path.join(root, bin),
    ...peer.args(target.url),
  ]);
  child.stderr.resume();
  const call = rpc(child);
  try {
    await call('initialize', {
      protocolVersion: '2024-11-05',
      capabilities: {},
      clientInfo: { name: 'pgmcp-peers-context', version: '0' },
    });
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`,
    );
    for (const [what, method, params] of peer.asks(
      target.url,
      target.schema,
      target.table,
    )) {
      const bytes = textBytes(await call(method, params));
      process.stdout.write(
        `${peer.package}@${manifest.version}\t${what}\t${bytes} B\t~${Math.round(bytes / 4)} tokens\n`,
      );
    }
  } finally {
    child.kill();
  }
}

const [url, schema, table] = process.argv.slice(2);
if (url === undefined || schema === undefined || table === undefined)
  throw new Error('usage: peers-context <database-url> <schema> <table>');
const directory = process.env['PEERS_DIR'] ?? '/tmp/peers';
for (const peer of PEERS)
  await measure(peer, directory, { url, schema, table });
