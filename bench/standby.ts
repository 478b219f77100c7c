// BENCH_ONLY=standby (issue 36 point 3; docs/benchmarks.md "Method"): reads answered by a hot
// standby against the same reads on the primary. A private primary and a streaming standby
// (test/setup/standby-pair.ts), migrated and seeded on the primary; two built servers
// (`bin/pgmcp.js serve`) on the primary's database, one configured with the standby (config file
// `standbys`, its defaults), one without; resources/read and the query tool's point read through
// each, alternated ABBA; then a read sent as soon as a change notification arrives, on each.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { runMigrations, storeRoleFunctions } from '../src/db/index.js';
import { MIGRATIONS_DIRECTORY } from '../src/config/index.js';
import type { Logger } from '../src/log.js';
import { spawnBuiltServer } from '../test/setup/built-server.js';
import { startStandbyPair } from '../test/setup/standby-pair.js';
import { alternate } from './alternate.js';
import type { LoadCaller, LoadRunner, Run, Workload } from './load.js';
import { percentile } from './notify-latency.js';

export interface StandbyBenchContext {
  readonly logger: Logger;
  /** The HS256 secret and audience the servers verify tokens with. */
  readonly secret: string;
  readonly audience: string;
  /** Every bench role's callers, interleaved (their roles are made on the pair by createRoles). */
  readonly callers: readonly LoadCaller[];
  /** Make the bench roles on a server (cluster-wide, idempotent). */
  readonly createRoles: (admin: pg.Client) => Promise<void>;
  /** The raw point read's statement (one $1: a stored resource's URI), sent through `query`. */
  readonly pointRead: string;
  readonly load: LoadRunner;
  readonly rounds: number;
}

/** One figure: the standby server's runs against the primary-only server's, alternated. */
export interface StandbyComparison {
  /** The primary-only server's median round, and the standby server's. */
  readonly baseline: Run;
  readonly served: Run;
  /** Median of the per-round ratios (standby req/s over primary req/s), and each round's. */
  readonly ratio: number;
  readonly rounds: number[];
  /** Of the standby server's reads in these rounds, the share a standby answered (its metrics). */
  readonly standbyShare: number;
}

/** Milliseconds from a change notification's arrival to the answer of the read it prompted. */
export interface ReadAfterNotify {
  readonly standby: { readonly p50: number; readonly p99: number };
  readonly primary: { readonly p50: number; readonly p99: number };
  /** Samples on each server. */
  readonly samples: number;
  /** Reads that did not return the notified change, on each server: must be 0. */
  readonly stale: { readonly primary: number; readonly standby: number };
  /** The standby server's reads by who answered and why (pgmcp_standby_reads_total). */
  readonly standbyReads: Record<string, number>;
}

const ROWS = 100_000;
const CONCURRENCY = 10;
const NOTIFY_SAMPLES = 20;

/** The group's results: `standby_read`, `standby_query`, `standby_read_after_notify`. */
export async function standbyBenchmarks(
  context: StandbyBenchContext,
): Promise<Record<string, unknown>> {
  const pair = await startStandbyPair();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-bench-standby-'));
  const servers: Server[] = [];
  try {
    await prepare(pair.primaryUrl, context);
    await pair.caughtUp();
    const config = path.join(folder, 'standby.json');
    writeFileSync(
      config,
      JSON.stringify({ standbys: { servers: [{ url: pair.standbyUrl }] } }),
    );
    const primary = await startServer(context, pair.primaryUrl, undefined);
    servers.push(primary);
    const standby = await startServer(context, pair.primaryUrl, config);
    servers.push(standby);
    const results: Record<string, unknown> = {};
    const figures: [string, Workload][] = [
      ['standby_read', { kind: 'read', rows: ROWS }],
      [
        'standby_query',
        { kind: 'tool-query', rows: ROWS, sql: context.pointRead },
      ],
    ];
    for (const [key, workload] of figures) {
      results[key] = await compareServers(context, {
        primary,
        standby,
        workload,
      });
      context.logger.info(`bench: ${key} ${describe(results[key])}`);
    }
    results['standby_read_after_notify'] = await readAfterNotify(context, {
      primary,
      standby,
      primaryUrl: pair.primaryUrl,
    });
    return results;
  } finally {
    await Promise.all(servers.map(stopServer));
    pair.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

function describe(result: unknown): string {
  const { ratio, standbyShare } = result as StandbyComparison;
  return `standby / primary ${ratio.toFixed(2)}, ${(standbyShare * 100).toFixed(1)}% answered by the standby`;
}

/** pgmcp's schema, the bench roles with their stored query functions, ROWS resources. */
async function prepare(
  url: string,
  context: StandbyBenchContext,
): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await runMigrations(admin, MIGRATIONS_DIRECTORY, () => undefined);
    await context.createRoles(admin);
    // The query tool runs on a standby only with the role's functions stored (`pgmcp role grant`).
    for (const role of new Set(context.callers.map((caller) => caller.role)))
      if (role !== undefined) await storeRoleFunctions(admin, role);
    // As seeds/bench/10_resources.sql, fewer: bench_reader reads 1 row in 10, bench_all all.
    await admin.query(
      `insert into pgmcp.resources (uri, name, title, mime_type, text, readers)
       select format('bench:///r/%s', n), format('resource-%s', n), format('Bench resource %s', n),
              'text/markdown', format(E'# Resource %s\n\n%s\n', n, repeat(md5(n::text) || ' ', 8)),
              case when n % 10 = 0 then array['bench_reader', 'bench_all'] else array['bench_all'] end
         from generate_series(1, $1::int) as n`,
      [ROWS],
    );
    await admin.query('vacuum (analyze) pgmcp.resources');
  } finally {
    await admin.end();
  }
}

/** A built server: its MCP endpoint and its metrics. */
interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  readonly metricsUrl: string;
}

/** `bin/pgmcp.js serve` on the primary's database, with the standby's config file or none. */
async function startServer(
  context: StandbyBenchContext,
  databaseUrl: string,
  config: string | undefined,
): Promise<Server> {
  const { child, url, adminUrl } = await spawnBuiltServer(
    {
      DATABASE_URL: databaseUrl,
      PGMCP_JWT_SECRET: context.secret,
      PGMCP_JWT_AUDIENCE: context.audience,
      PGMCP_ADMIN_PORT: '0',
      PGMCP_LOG_FORMAT: 'json',
    },
    { args: config === undefined ? [] : ['--config', config] },
  );
  return { child, url, metricsUrl: `${adminUrl ?? ''}/metrics` };
}

async function stopServer(server: Server): Promise<void> {
  if (server.child.exitCode !== null) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await exited;
}

/** pgmcp_standby_reads_total by `server/reason` (e.g. "standby/caught_up"). */
async function standbyReads(server: Server): Promise<Map<string, number>> {
  const text = await (await fetch(server.metricsUrl)).text();
  const counts = new Map<string, number>();
  const line =
    /^pgmcp_standby_reads_total\{([^}]*)\} (\d+(?:\.\d+)?(?:e\+\d+)?)$/gm;
  for (const [, labels = '', value] of text.matchAll(line)) {
    const server = /server="([^"]*)"/.exec(labels)?.[1] ?? '?';
    const reason = /reason="([^"]*)"/.exec(labels)?.[1] ?? '?';
    counts.set(`${server}/${reason}`, Number(value));
  }
  return counts;
}

/** What the counters grew by since `before`. */
function grown(
  before: Map<string, number>,
  after: Map<string, number>,
): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [key, value] of after) {
    const by = value - (before.get(key) ?? 0);
    if (by > 0) delta[key] = by;
  }
  return delta;
}

/** The share of the counted reads a standby answered. */
function shareOnStandby(reads: Record<string, number>): number {
  const all = Object.values(reads).reduce((sum, count) => sum + count, 0);
  const onStandby = Object.entries(reads)
    .filter(([key]) => key.startsWith('standby/'))
    .reduce((sum, [, count]) => sum + count, 0);
  return all === 0 ? 0 : onStandby / all;
}

/** The workload on the primary-only server and on the standby server, ABBA, 10 callers. */
async function compareServers(
  context: StandbyBenchContext,
  sides: { primary: Server; standby: Server; workload: Workload },
): Promise<StandbyComparison> {
  const { primary, standby, workload } = sides;
  const run = (server: Server) =>
    context.load(server.url, CONCURRENCY, workload, context.callers);
  const before = await standbyReads(standby);
  const pairs = await alternate(
    context.rounds,
    () => run(primary),
    () => run(standby),
  );
  const reads = grown(before, await standbyReads(standby));
  const standbyShare = shareOnStandby(reads);
  // A figure of reads the primary answered would be no standby figure: a broken setup, not a result.
  if (standbyShare === 0)
    throw new Error(
      `no read went to the standby: ${JSON.stringify(reads)} (${workload.kind})`,
    );
  const medianRun = (runs: Run[]): Run =>
    [...runs].sort((a, b) => a.perSecond - b.perSecond)[
      Math.floor(runs.length / 2)
    ] as Run;
  const rounds = pairs.map(([base, ours]) => ours.perSecond / base.perSecond);
  return {
    baseline: medianRun(pairs.map(([base]) => base)),
    served: medianRun(pairs.map(([, ours]) => ours)),
    ratio:
      [...rounds].sort((a, b) => a - b)[Math.floor(rounds.length / 2)] ?? 0,
    rounds,
    standbyShare,
  };
}

/**
 * NOTIFY_SAMPLES updates on each server per round, ABBA: a listen stream subscribed to the updated
 * resource hears the notification, and a resources/read sent at once must return the update.
 */
async function readAfterNotify(
  context: StandbyBenchContext,
  sides: { primary: Server; standby: Server; primaryUrl: string },
): Promise<ReadAfterNotify> {
  const writer = new pg.Client({ connectionString: sides.primaryUrl });
  await writer.connect();
  const caller = context.callers.find((one) => one.rowStride === 1);
  if (caller === undefined) throw new Error('no caller reads every row');
  const latencies = { primary: [] as number[], standby: [] as number[] };
  const stale = { primary: 0, standby: 0 };
  let sample = 0;
  const before = await standbyReads(sides.standby);
  try {
    const samples = async (side: 'primary' | 'standby') => {
      for (let n = 0; n < NOTIFY_SAMPLES; n += 1) {
        sample += 1;
        const uri = `bench:///r/${1 + ((sample * 7919) % ROWS)}`;
        const read = await notifiedRead(sides[side].url, {
          caller,
          uri,
          log: (line) => context.logger.info(`${line} (${side} server)`),
          update: (text) =>
            writer.query(
              'update pgmcp.resources set text = $2 where uri = $1',
              [uri, text],
            ),
        });
        latencies[side].push(read.ms);
        if (!read.fresh) stale[side] += 1;
      }
    };
    await alternate(
      context.rounds,
      () => samples('primary'),
      () => samples('standby'),
    );
  } finally {
    await writer.end();
  }
  const figures = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
  };
  return {
    standby: figures(latencies.standby),
    primary: figures(latencies.primary),
    samples: latencies.standby.length,
    stale,
    standbyReads: grown(before, await standbyReads(sides.standby)),
  };
}

/**
 * Listen on `url` for `uri`, update it, and once its notification arrives read it: the time from
 * the notification to the read's answer, and whether the answer has the update.
 */
async function notifiedRead(
  url: string,
  options: {
    caller: LoadCaller;
    uri: string;
    update: (text: string) => Promise<unknown>;
    log: (line: string) => void;
  },
): Promise<{ ms: number; fresh: boolean }> {
  const { caller, uri } = options;
  const stream = await listen(url, caller, uri);
  try {
    const text = `notified ${Math.random().toString(36).slice(2)}`;
    await options.update(text);
    await within(stream.updated, 30_000, `the notification for ${uri}`);
    const heard = performance.now();
    const response = await fetch(url, {
      method: 'POST',
      headers: headersOf(caller, 'resources/read', uri),
      body: JSON.stringify(rpc('resources/read', { uri })),
    });
    const body = (await response.json()) as {
      result?: { contents?: { text?: string }[] };
    };
    const ms = performance.now() - heard;
    const fresh = body.result?.contents?.[0]?.text === text;
    if (!fresh)
      options.log(
        `bench: a read after the notification for ${uri} answered ${JSON.stringify(body).slice(0, 300)}`,
      );
    return { ms, fresh };
  } finally {
    stream.close();
  }
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

function rpc(method: string, params: Record<string, unknown>): object {
  return {
    jsonrpc: '2.0',
    id: 1,
    method,
    params: { _meta: META, ...params },
  };
}

function headersOf(
  caller: LoadCaller,
  method: string,
  name?: string,
): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: caller.authorization,
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': method,
    ...(name === undefined ? {} : { 'Mcp-Name': name }),
  };
}

/** A listen stream for `uri`, acknowledged; `updated` settles on its first update notification. */
async function listen(
  url: string,
  caller: LoadCaller,
  uri: string,
): Promise<{ updated: Promise<void>; close(): void }> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: headersOf(caller, 'subscriptions/listen'),
    body: JSON.stringify(
      rpc('subscriptions/listen', {
        notifications: { resourceSubscriptions: [uri] },
      }),
    ),
    signal: controller.signal,
  });
  if (response.status !== 200 || response.body === null)
    throw new Error(`listen answered ${response.status}`);
  const events = sseEvents(response.body as AsyncIterable<Uint8Array>);
  const next = async (wanted: string): Promise<void> => {
    for (;;) {
      const { value, done } = await events.next();
      if (done === true)
        throw new Error(`the listen stream ended before ${wanted}`);
      if (value.includes(wanted)) return;
    }
  };
  await next('subscriptions/acknowledged');
  const updated = next('notifications/resources/updated');
  // Closing aborts the stream; a read of it still pending then fails, which nobody awaits.
  updated.catch(() => undefined);
  return { updated, close: () => controller.abort() };
}

/** The events of an SSE body, as their raw text. */
async function* sseEvents(
  body: AsyncIterable<Uint8Array>,
): AsyncGenerator<string, void> {
  const decoder = new TextDecoder();
  let tail = '';
  for await (const chunk of body) {
    const parts = (tail + decoder.decode(chunk, { stream: true })).split(
      '\n\n',
    );
    tail = parts.pop() ?? '';
    yield* parts;
  }
}

/** `promise`, or an error naming `what` once `ms` have passed: a lost notification ends the bench. */
async function within<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not arrive in ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
