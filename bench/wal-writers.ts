// The WAL bench's writers (bench/wal.ts), in a process of their own as a user's writers are other
// applications: pgbench with a custom script when it is installed, else this file run as a child
// Node process. Either way the bench process, which runs the capture, shares no event loop with them.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** The writers' program, and their committed updates a second. */
export interface Written {
  readonly writer: 'pgbench' | 'node';
  readonly perSecond: number;
}

/** What every round runs: `clients` connections updating one of `rows` rows at a time. */
export interface WriteSpec {
  readonly url: string;
  readonly clients: number;
  readonly rows: number;
  readonly seconds: number;
}

/** Single-row updates of bench.items for `seconds`, by pgbench if installed, else by child Node. */
export async function writeElsewhere(spec: WriteSpec): Promise<Written> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'pgmcp-bench-wal-'));
  const script = path.join(directory, 'update.sql');
  await writeFile(
    script,
    `\\set id random(1, ${spec.rows})\nupdate bench.items set v = v + 1 where id = :id;\n`,
  );
  try {
    const { stdout } = await run('pgbench', [
      '-n',
      '-M',
      'prepared',
      '-c',
      String(spec.clients),
      '-j',
      String(Math.min(spec.clients, 2)),
      '-T',
      String(spec.seconds),
      '-f',
      script,
      spec.url,
    ]);
    const match = /^tps = ([\d.]+)/m.exec(stdout);
    if (match === null) throw new Error(`pgbench printed no tps: ${stdout}`);
    return { writer: 'pgbench', perSecond: Number(match[1]) };
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
    const { stdout } = await run(process.execPath, [
      fileURLToPath(import.meta.url),
      JSON.stringify(spec),
    ]);
    return { writer: 'node', perSecond: Number(stdout.trim()) };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/** The child Node process: the same updates as pgbench's script; prints updates a second. */
async function writeHere(spec: WriteSpec): Promise<number> {
  const clients = await Promise.all(
    Array.from({ length: spec.clients }, async () => {
      const client = new pg.Client({ connectionString: spec.url });
      await client.connect();
      return client;
    }),
  );
  const started = performance.now();
  const deadline = started + spec.seconds * 1000;
  let committed = 0;
  try {
    await Promise.all(
      clients.map(async (client) => {
        while (performance.now() < deadline) {
          await client.query({
            name: 'bench_wal_update',
            text: 'update bench.items set v = v + 1 where id = $1',
            values: [1 + Math.floor(Math.random() * spec.rows)],
          });
          committed += 1;
        }
      }),
    );
    return committed / ((performance.now() - started) / 1000);
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const spec = JSON.parse(process.argv[2] ?? '{}') as WriteSpec;
  process.stdout.write(`${await writeHere(spec)}\n`);
}
