// The WAL bench's latency at the client (bench/wal.ts): a built server (`bin/pgmcp.js serve`) on the
// bench database with PGMCP_CHANGE_SOURCE=wal, one `subscriptions/listen` stream for a row, and
// UPDATEs of that row one after another, each timed from its commit's acknowledgement to the
// stream's notification; then the same server with capture triggers, for context.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { spawnBuiltServer } from '../test/setup/built-server.js';
import { openListenStream } from './listen-stream.js';
import { percentile } from './notify-latency.js';
import { startTokenIssuer, type TokenIssuer } from './token-issuer.js';

const ROLE = 'bench_wal_reader';
const SAMPLES = 200;

/** p50 and p99 in milliseconds, and how many updates were timed. */
export interface ClientLatency {
  readonly p50: number;
  readonly p99: number;
  readonly samples: number;
}

/** Commit → notification at a listen stream, with the wal source and with triggers. */
export async function clientLatency(
  url: string,
  database: string,
): Promise<Record<'wal' | 'triggers', ClientLatency>> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  const issuer = await startTokenIssuer('hs256');
  const directory = await mkdtemp(path.join(os.tmpdir(), 'pgmcp-bench-wal-'));
  const config = path.join(directory, 'pgmcp.config.json');
  try {
    await sql.query(`
      drop role if exists ${ROLE};
      create role ${ROLE} nologin;
      grant usage on schema bench to ${ROLE};
      grant select on bench.items to ${ROLE};
    `);
    await writeFile(
      config,
      JSON.stringify({ collections: [{ schema: 'bench', table: 'items' }] }),
    );
    const measure = (source: 'wal' | 'triggers') =>
      withServer({ url, config, issuer, source }, async (server) => {
        await sourceInUse(sql, source);
        return timeUpdates(sql, { server, issuer, database });
      });
    return { wal: await measure('wal'), triggers: await measure('triggers') };
  } finally {
    await rm(directory, { recursive: true, force: true });
    await issuer.close();
    await sql.end();
  }
}

interface ServerSpec {
  readonly url: string;
  readonly config: string;
  readonly issuer: TokenIssuer;
  readonly source: 'wal' | 'triggers';
}

/** Run `work` against a built server with `spec.source`, stopped afterwards. */
async function withServer<T>(
  spec: ServerSpec,
  work: (server: string) => Promise<T>,
): Promise<T> {
  // It says it serves once the wal source's reader is started.
  const { child, url } = await spawnBuiltServer({
    DATABASE_URL: spec.url,
    PGMCP_CONFIG: spec.config,
    PGMCP_CHANGE_SOURCE: spec.source,
    PGMCP_JWT_SECRET: spec.issuer.secret,
    PGMCP_JWT_AUDIENCE: spec.issuer.audience,
    PGMCP_LOG_FORMAT: 'json',
  });
  try {
    return await work(url);
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

/** Until the server has moved the table to `source` and, for wal, reads its slot. */
async function sourceInUse(
  sql: pg.Client,
  source: 'wal' | 'triggers',
): Promise<void> {
  for (let attempt = 0; attempt < 300; attempt += 1) {
    const { rows } = await sql.query<{ ready: boolean }>(
      `select pgmcp.change_source() = $1
              and ($1 = 'triggers' or exists (
                select from pg_replication_slots
                 where database = current_database() and slot_name like 'pgmcp\\_%' and active)) as ready`,
      [source],
    );
    if (rows[0]?.ready === true) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the server did not start reading changes from ${source}`);
}

/** SAMPLES updates of row 1, one after another, each timed to its notification on the stream. */
async function timeUpdates(
  sql: pg.Client,
  target: { server: string; issuer: TokenIssuer; database: string },
): Promise<ClientLatency> {
  const uri = `pg://${target.database}/bench/items/rows/1`;
  const [caller] = await target.issuer.mint([ROLE], 1);
  const stream = await listen(target.server, caller?.authorization ?? '', uri);
  const latencies: number[] = [];
  try {
    for (let sample = 0; sample < SAMPLES; sample += 1) {
      const heard = stream.next(10_000);
      await sql.query('update bench.items set v = v + 1 where id = 1');
      const committed = performance.now();
      await heard;
      latencies.push(performance.now() - committed);
    }
  } finally {
    stream.close();
  }
  latencies.sort((a, b) => a - b);
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    samples: latencies.length,
  };
}

interface Stream {
  /** Resolves on the stream's next resource notification; rejects after `timeoutMs` without. */
  next(timeoutMs: number): Promise<void>;
  close(): void;
}

/** A listen stream for `uri`, acknowledged; next() resolves on its next resource notification. */
async function listen(
  server: string,
  authorization: string,
  uri: string,
): Promise<Stream> {
  let waiter: (() => void) | undefined;
  const open = await openListenStream(server, {
    authorization,
    uris: [uri],
    onUpdated: () => waiter?.(),
  });
  return {
    next: (timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        // A notification that never comes fails the figure instead of hanging the bench.
        const timer = setTimeout(
          () => reject(new Error(`no notification within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
    close: () => open.close(),
  };
}
