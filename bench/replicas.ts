// Delivery's PostgreSQL cost with one and with three replicas (issue 34 point 3; docs/benchmarks.md
// "Replicas"): built servers (`bin/pgmcp.js serve`) on one database of the bench server, each with
// listen streams for four roles, while a writer updates resources at a fixed rate. The figure is
// the CPU time of the replicas' backends (utime + stime in /proc/<pid>/stat of every backend whose
// application_name says pgmcp, the server being local) per committed change, plus how many
// notifications each stream missed. Every update touches a resource no other update touches, so a
// stream's queue cannot fold two of them: each stream must hear exactly its role's share.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { runMigrations } from '../src/db/index.js';
import { MIGRATIONS_DIRECTORY } from '../src/config/index.js';
import type { Logger } from '../src/log.js';
import { spawnBuiltServer } from '../test/setup/built-server.js';
import { openListenStream } from './listen-stream.js';
import type { TokenIssuer } from './token-issuer.js';

export interface ReplicaBenchContext {
  /** The bench PostgreSQL server (it must run on this machine: its backends' /proc is read). */
  readonly serverUrl: string;
  readonly logger: Logger;
  readonly issuer: TokenIssuer;
}

const DATABASE = 'pgmcp_bench_replicas';
const ROLES = ['bench_r1', 'bench_r2', 'bench_r3', 'bench_r4'];
const RATE = Number(process.env['BENCH_REPLICA_RATE'] ?? 1000);
const SECONDS = Number(process.env['BENCH_REPLICA_SECONDS'] ?? 10);
const CHANGES = RATE * SECONDS;
const WRITERS = 4;
// /proc/<pid>/stat counts CPU time in clock ticks (sysconf(_SC_CLK_TCK), 100 on Linux).
const TICK_MS = 10;

interface Replica {
  readonly child: ChildProcess;
  readonly url: string;
}

interface Stream {
  readonly role: string;
  /** notifications/resources/updated heard so far. */
  heard: number;
  close(): void;
}

/** One run's figures. */
interface RunFigures {
  readonly cpuMsPerChange: number;
  /** The same by connection purpose (application_name's first part). */
  readonly byPurpose: Record<string, number>;
  readonly missed: number;
  readonly extra: number;
}

/** What one replica count measured: the median run's CPU per change and its breakdown, all runs' misses. */
export interface ReplicaFigures extends RunFigures {
  readonly replicas: number;
  readonly runs: number;
}

/** The `replica_delivery` result: shared decisions (1 and 3 replicas) and, for context, unshared. */
export interface ReplicaDelivery {
  readonly workload: string;
  readonly shared: readonly ReplicaFigures[];
  readonly unshared: readonly ReplicaFigures[];
}

/**
 * 1 and 3 replicas with decisions shared, alternated 1, 3, 3, 1, 1, 3 after a warm-up run
 * (background load moves both), then once each with PGMCP_SHARED_DELIVERY=off for context.
 */
export async function replicaBenchmarks(
  context: ReplicaBenchContext,
): Promise<{ results: Record<string, unknown> }> {
  const url = await freshDatabase(context);
  const measured = new Map<string, RunFigures[]>();
  // A first run warms the new database's caches and is left out.
  await measureRun(context, { url, count: 1, shared: 'on' });
  const plan: [number, 'on' | 'off'][] = [
    [1, 'on'],
    [3, 'on'],
    [3, 'on'],
    [1, 'on'],
    [1, 'on'],
    [3, 'on'],
    [1, 'off'],
    [3, 'off'],
  ];
  for (const [count, shared] of plan) {
    const figures = await measureRun(context, { url, count, shared });
    context.logger.info(
      `bench: ${count} replicas, shared delivery ${shared}: ${figures.cpuMsPerChange.toFixed(3)} ms PostgreSQL CPU per change, ${figures.missed} missed, ${figures.extra} extra`,
    );
    const key = `${count}/${shared}`;
    measured.set(key, [...(measured.get(key) ?? []), figures]);
  }
  const summarize = (shared: 'on' | 'off'): ReplicaFigures[] =>
    [1, 3].map((count) =>
      medianFigures(count, measured.get(`${count}/${shared}`) ?? []),
    );
  const delivery: ReplicaDelivery = {
    workload: `${RATE} updates a second for ${SECONDS} s, each its own transaction and resource; ${ROLES.length} roles, one listen stream per role on each replica`,
    shared: summarize('on'),
    unshared: summarize('off'),
  };
  return { results: { replica_delivery: delivery } };
}

function medianFigures(replicas: number, runs: RunFigures[]): ReplicaFigures {
  const sorted = [...runs].sort((a, b) => a.cpuMsPerChange - b.cpuMsPerChange);
  const middle = sorted[Math.floor((sorted.length - 1) / 2)];
  return {
    replicas,
    runs: runs.length,
    cpuMsPerChange: round(middle?.cpuMsPerChange ?? 0),
    byPurpose: middle?.byPurpose ?? {},
    missed: runs.reduce((sum, run) => sum + run.missed, 0),
    extra: runs.reduce((sum, run) => sum + run.extra, 0),
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** The bench database, recreated and migrated, with the four roles and one resource per change. */
async function freshDatabase(context: ReplicaBenchContext): Promise<string> {
  const server = new pg.Client({ connectionString: context.serverUrl });
  await server.connect();
  try {
    await server.query(`drop database if exists ${DATABASE} with (force)`);
    await server.query(`create database ${DATABASE}`);
    for (const role of ROLES)
      await server.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
  } finally {
    await server.end();
  }
  const url = new URL(context.serverUrl);
  url.pathname = `/${DATABASE}`;
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await runMigrations(admin, MIGRATIONS_DIRECTORY, () => undefined);
  } finally {
    await admin.end();
  }
  return url.toString();
}

/** The two roles that read resource `index` (each role reads half of them). */
function readersOf(index: number): string[] {
  return [
    ROLES[index % ROLES.length] as string,
    ROLES[(index + 1) % ROLES.length] as string,
  ];
}

async function measureRun(
  context: ReplicaBenchContext,
  run: { url: string; count: number; shared: 'on' | 'off' },
): Promise<RunFigures> {
  const sql = new pg.Client({
    connectionString: run.url,
    application_name: 'bench-writer',
  });
  await sql.connect();
  const uris = await resetResources(sql);
  const replicas = await Promise.all(
    Array.from({ length: run.count }, () =>
      startReplica(context, run.url, run.shared),
    ),
  );
  const streams: Stream[] = [];
  try {
    for (const replica of replicas)
      for (const role of ROLES)
        streams.push(await openStream(context, { replica, role, uris }));
    // Let every replica list its roles and the leader read them.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const cpu = await cpuOfReplicas(sql);
    await writeAtRate(run.url, uris);
    const expected = (role: string): number =>
      uris.filter((_, index) => readersOf(index).includes(role)).length;
    await waitFor(
      () => streams.every((stream) => stream.heard >= expected(stream.role)),
      30_000,
    );
    const spent = await cpu.stop();
    let missed = 0;
    let extra = 0;
    for (const stream of streams) {
      const want = expected(stream.role);
      if (stream.heard < want) missed += want - stream.heard;
      if (stream.heard > want) extra += stream.heard - want;
    }
    const byPurpose: Record<string, number> = {};
    for (const [purpose, ms] of spent.byPurpose)
      byPurpose[purpose] = round(ms / CHANGES);
    return { cpuMsPerChange: spent.ms / CHANGES, byPurpose, missed, extra };
  } finally {
    for (const stream of streams) stream.close();
    await Promise.all(replicas.map(stopReplica));
    await sql.end();
  }
}

/** CHANGES fresh resources (the last run's removed), their URIs in update order. */
async function resetResources(sql: pg.Client): Promise<string[]> {
  await sql.query('truncate pgmcp.resources, pgmcp.changes');
  const { rows } = await sql.query<{ uri: string }>(
    `insert into pgmcp.resources (uri, name, text, readers)
     select format('bench:///replicas/%s', n), format('r%s', n), 'v0',
            array[format('bench_r%s', n % 4 + 1), format('bench_r%s', (n + 1) % 4 + 1)]
       from generate_series(0, $1::int - 1) as n
      order by n
     returning uri`,
    [CHANGES],
  );
  // readersOf(index) names the same roles as the insert for n = index.
  return rows.map((row) => row.uri);
}

async function startReplica(
  context: ReplicaBenchContext,
  url: string,
  shared: 'on' | 'off',
): Promise<Replica> {
  const { child, url: endpoint } = await spawnBuiltServer({
    DATABASE_URL: url,
    PGMCP_JWT_SECRET: context.issuer.secret,
    PGMCP_JWT_AUDIENCE: context.issuer.audience,
    PGMCP_MAX_SUBSCRIPTION_URIS: String(CHANGES),
    PGMCP_MAX_BODY_BYTES: String(16 * 1024 * 1024),
    PGMCP_SHARED_DELIVERY: shared,
    PGMCP_LOG_FORMAT: 'json',
  });
  return { child, url: endpoint };
}

async function stopReplica(replica: Replica): Promise<void> {
  const exited = new Promise((resolve) => replica.child.once('exit', resolve));
  replica.child.kill('SIGTERM');
  await exited;
}

/** A listen stream as `role` on `replica` for every URI, counting what it hears. */
async function openStream(
  context: ReplicaBenchContext,
  { replica, role, uris }: { replica: Replica; role: string; uris: string[] },
): Promise<Stream> {
  const [caller] = await context.issuer.mint([role], 1);
  const stream: Stream = { role, heard: 0, close: () => undefined };
  try {
    const open = await openListenStream(replica.url, {
      authorization: caller?.authorization ?? '',
      uris,
      onUpdated: () => {
        stream.heard += 1;
      },
    });
    stream.close = () => open.close();
  } catch (error) {
    throw new Error(
      `listen as ${role} was not acknowledged (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  return stream;
}

/** Update every resource once, RATE a second, each in its own transaction, on WRITERS connections. */
async function writeAtRate(url: string, uris: string[]): Promise<void> {
  const writers = await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      const client = new pg.Client({
        connectionString: url,
        application_name: 'bench-writer',
      });
      await client.connect();
      return client;
    }),
  );
  const started = performance.now();
  let next = 0;
  await Promise.all(
    writers.map(async (client) => {
      for (;;) {
        const index = next++;
        const uri = uris[index];
        if (uri === undefined) return;
        const due = started + (index * 1000) / RATE;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await client.query(
          `update pgmcp.resources set text = 'v1' where uri = $1`,
          [uri],
        );
      }
    }),
  );
  await Promise.all(writers.map((client) => client.end()));
}

/**
 * CPU time of the replicas' backends from now until stop(): sampled every 200 ms, so backends that
 * come and go in between count what they spent while seen.
 */
async function cpuOfReplicas(sql: pg.Client): Promise<{
  stop(): Promise<{ ms: number; byPurpose: Map<string, number> }>;
}> {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  let initial = true;
  const purposes = new Map<number, string>();
  const sample = async (): Promise<void> => {
    const { rows } = await sql.query<{ pid: number; purpose: string }>(
      `select pid, split_part(application_name, '/', 1) as purpose from pg_stat_activity
        where datname = current_database() and application_name like 'pgmcp%'`,
    );
    for (const { pid, purpose } of rows) {
      purposes.set(pid, purpose);
      const ticks = backendTicks(pid);
      if (ticks === undefined) continue;
      // A backend first seen now started after the first sample: all its time is in the window.
      if (!first.has(pid)) first.set(pid, initial ? ticks : 0);
      last.set(pid, ticks);
    }
    initial = false;
  };
  await sample();
  let sampling = Promise.resolve();
  const timer = setInterval(() => {
    sampling = sampling.then(sample, sample);
  }, 200);
  return {
    async stop() {
      clearInterval(timer);
      await sampling;
      await sample();
      let ticks = 0;
      const byPurpose = new Map<string, number>();
      for (const [pid, end] of last) {
        const spent = end - (first.get(pid) ?? 0);
        ticks += spent;
        const purpose = purposes.get(pid) ?? '?';
        byPurpose.set(purpose, (byPurpose.get(purpose) ?? 0) + spent * TICK_MS);
      }
      return { ms: ticks * TICK_MS, byPurpose };
    },
  };
}

/** utime + stime of process `pid` in clock ticks, or undefined when it is gone. */
function backendTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check() && performance.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
}
