// `npm run bench`: pgmcp against baselines measured in the same run, reported as ratios.
// Seeds 1,000,000 stored resources into a bench database (BENCH_DATABASE_URL or TEST_DATABASE_URL's
// server, else an embedded PostgreSQL), then measures HTTP list/read/discover against raw pg and a
// bare node:http server writing the same bytes, and the catalog of a 10,000-table database (bench/catalog.ts). Results:
// bench/results/latest.json, whose tables (bench/report.ts) go into docs/benchmarks.md and README.
// BENCH_ONLY=catalog runs the catalog figures alone. Every request carries a bearer token verified
// as in production (bench/serve.ts): the request-path figures once with HS256 tokens (keys ending
// _hs256) and once with ES256 tokens from a JWKS document (_jwks); live and catalog with HS256.
import { catalogSource } from '../src/resources/index.js';
import { createCursorCodec } from '../src/protocol/index.js';
import http from 'node:http';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import {
  measure,
  request as loadRequest,
  spreadId,
  type LoadCaller,
  type LoadSpec,
  type Run,
  type Workload,
} from './load.js';
import { createApp, createProgress, type App } from '../src/app/index.js';
import {
  createDatabase,
  type DatabaseHandle,
  loadSeed,
  runMigrations,
  seedLoaded,
  startEmbeddedPostgres,
  withAdminClient,
} from '../src/db/index.js';
import { loadConfig } from '../src/config/index.js';
import { createLogger, type Logger } from '../src/log.js';
import { MIGRATIONS_DIRECTORY, SEEDS_DIRECTORY } from '../src/config/index.js';
import { catalogBenchmarks } from './catalog.js';
import { replicaBenchmarks } from './replicas.js';
import { standbyBenchmarks } from './standby.js';
import { legacyBenchmarks } from './legacy.js';
import { liveBenchmarks } from './live.js';
import { readSummary, renderResults, writeBenchDocs } from './report.js';
import { startPeerServer } from './peer-server.js';
import { serve } from './serve.js';
import {
  searchIndexWriteFigures,
  storageFigures,
  writeFigures,
  type WriteFigureOptions,
} from './storage.js';
import {
  startTokenIssuer,
  type TokenIssuer,
  type TokenScheme,
} from './token-issuer.js';
import { toolFigures } from './tools.js';
import { walFigures, type WalFigures } from './wal.js';
import { alternate } from './alternate.js';
import { internalsFigures } from './internals.js';
import { PROJECT_ROOT, SERVER_INFO } from '../src/version.js';

const DURATION_MS = Number(process.env['BENCH_DURATION_MS'] ?? 2000);
const WARMUP_MS = 500;
// Background load moves both sides of a comparison: each alternates baseline and pgmcp this many
// times and reports the median of the per-round ratios. On two shared cores single rounds of the
// same two workloads spread widely (docs/benchmarks.md), so five: a median of three still lands on
// an outlier often.
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const PAGE_SIZE = 100;
// The database the bench seeds on a BENCH_DATABASE_URL / TEST_DATABASE_URL server (one per checkout
// that benchmarks at the same time); a plain identifier.
const BENCH_DATABASE = process.env['BENCH_DATABASE'] ?? 'pgmcp_bench';
if (!/^[a-z_][a-z0-9_]*$/.test(BENCH_DATABASE))
  throw new Error(
    `BENCH_DATABASE must be a lower-case identifier, not "${BENCH_DATABASE}"`,
  );
// A comma-separated list of result keys without the token scheme's suffix (e.g.
// "list_role_10pct_vs_all_p50,read_vs_point_read": each runs with every scheme of BENCH_AUTH),
// or the groups "catalog", "legacy", "live", "replicas", "standby", "storage" and "wal", runs only those; unset runs all. A partial run merges its
// figures into latest.json and notes its date under `partialRuns`.
const ONLY = process.env['BENCH_ONLY']?.split(',').filter((key) => key !== '');
const runs = (key: string): boolean => ONLY === undefined || ONLY.includes(key);
// The request-path figures run once per token scheme; BENCH_AUTH=hs256 or jwks runs one.
const SCHEMES: readonly TokenScheme[] =
  process.env['BENCH_AUTH'] === 'hs256' || process.env['BENCH_AUTH'] === 'jwks'
    ? [process.env['BENCH_AUTH']]
    : ['hs256', 'jwks'];
// The callers: distinct tokens for each of four request roles. bench_reader reads 1 row in 10;
// the others every row (bench_all by the rows' readers, the other two as members of bench_all).
const READER_ROLE = 'bench_reader';
const ALL_ROLE = 'bench_all';
const ROLES = [READER_ROLE, ALL_ROLE, 'bench_analyst', 'bench_support'];
const TOKENS_PER_ROLE = 25;
// The catalog alone needs no 1M-row seed.
const CATALOG_ONLY =
  ONLY !== undefined && ONLY.length === 1 && ONLY[0] === 'catalog';
// The replicas group runs on a database of its own too: alone, nothing else is seeded.
const REPLICAS_ONLY =
  ONLY !== undefined && ONLY.length === 1 && ONLY[0] === 'replicas';
// Nor the WAL change source's cost (bench/wal.ts), on a database of its own.
const WAL_ONLY = ONLY !== undefined && ONLY.length === 1 && ONLY[0] === 'wal';
// Nor reads from a hot standby (bench/standby.ts), on a private primary and standby of their own.
const STANDBY_ONLY =
  ONLY !== undefined && ONLY.length === 1 && ONLY[0] === 'standby';
const CURSOR_SECRET = 'bench-cursor-secret-0123456789';

// The baselines: what a program would run against the same pool without pgmcp.
const RAW_KEYSET_PAGE = `select id, uri, name, title, description, mime_type, size, audience, priority, updated_at
  from pgmcp.resources where id > $1 order by id limit $2`;
const RAW_POINT_READ = `select uri, name, mime_type, text, blob, size, audience, priority, updated_at
  from pgmcp.resources where uri = $1`;
// Both as a program would send them: prepared once per pooled connection.
const rawKeysetPage = (afterId: number): pg.QueryConfig => ({
  name: 'bench_raw_keyset_page',
  text: RAW_KEYSET_PAGE,
  values: [afterId, PAGE_SIZE + 1],
});
/** The stored resource the i-th point read asks for, spread over the 1,000,000 rows. */
const pointReadUri = (i: number): string =>
  `bench:///r/${1 + ((i * 7919) % 1_000_000)}`;
const rawPointRead = (uri: string): pg.QueryConfig => ({
  name: 'bench_raw_point_read',
  text: RAW_POINT_READ,
  values: [uri],
});

/** Run an HTTP load in a worker thread (the clients' parsing stays off the server's event loop). */
function load(
  url: string,
  concurrency: number,
  workload: Workload,
  callers: readonly LoadCaller[],
): Promise<Run> {
  const spec: LoadSpec = {
    url,
    concurrency,
    durationMs: DURATION_MS,
    warmupMs: WARMUP_MS,
    workload,
    callers,
  };
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./load-worker.js', import.meta.url), {
      workerData: spec,
    });
    worker.once('message', (run: Run) => resolve(run));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load worker exited with ${code}`));
    });
  });
}

interface Comparison {
  baseline: Run;
  served: Run;
  /** Median over rounds of `ratioOf(baseline, served)`. */
  ratio: number;
  rounds: number[];
}

/** Alternate baseline and pgmcp ROUNDS times (ABBA); medians of each side and of the per-round ratios. */
async function compare(
  baseline: () => Promise<Run>,
  served: () => Promise<Run>,
  ratioOf: (base: Run, ours: Run) => number,
): Promise<Comparison> {
  const pairs = await alternate(ROUNDS, baseline, served);
  const median = <T>(items: T[], key: (item: T) => number): T => {
    const sorted = [...items].sort((a, b) => key(a) - key(b));
    return sorted[Math.floor(sorted.length / 2)] as T;
  };
  const ratios = pairs.map(([base, ours]) => ratioOf(base, ours));
  return {
    baseline: median(
      pairs.map(([base]) => base),
      (run) => run.perSecond,
    ),
    served: median(
      pairs.map(([, ours]) => ours),
      (run) => run.perSecond,
    ),
    ratio: median(ratios, (ratio) => ratio),
    rounds: ratios,
  };
}

/**
 * A node:http server on a free loopback port answering each request with
 * `respond(body, authorization)`.
 */
async function startBareServer(
  respond: (
    body: Buffer,
    authorization: string | undefined,
  ) => Buffer | Promise<Buffer>,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    const write = (answer: Buffer) => {
      response.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Length': answer.length,
      });
      response.end(answer);
    };
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const answer = respond(
        Buffer.concat(chunks),
        request.headers.authorization,
      );
      // A synchronous answer (fixed bytes) is written in the same turn, as a bare server would.
      if (Buffer.isBuffer(answer)) write(answer);
      else
        answer.then(write, (error: unknown) => {
          process.stderr.write(
            `bench: a bare server failed: ${String(error)}\n`,
          );
          response.writeHead(500).end();
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const throughputRatio = (base: Run, ours: Run): number =>
  ours.perSecond / base.perSecond;

async function benchDatabase(
  log: (line: string) => void,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const base =
    process.env['BENCH_DATABASE_URL'] ?? process.env['TEST_DATABASE_URL'];
  if (base !== undefined && base !== '') {
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    const exists = await admin.query(
      `select 1 from pg_database where datname = $1`,
      [BENCH_DATABASE],
    );
    if (exists.rowCount === 0)
      await admin.query(`create database "${BENCH_DATABASE}"`);
    await admin.end();
    const url = new URL(base);
    url.pathname = `/${BENCH_DATABASE}`;
    return { url: url.toString(), stop: () => Promise.resolve() };
  }
  const embedded = await startEmbeddedPostgres({
    stateDirectory: path.join(PROJECT_ROOT, '.pgmcp', 'bench'),
    log,
  });
  return { url: embedded.connectionString, stop: () => embedded.stop() };
}

/** The bench's callers: every token of the four roles, and those of two of them. */
interface Callers {
  /** Every role's tokens, interleaved. */
  readonly mix: readonly LoadCaller[];
  readonly readers: readonly LoadCaller[];
  readonly all: readonly LoadCaller[];
}

async function mintCallers(
  issuer: Awaited<ReturnType<typeof startTokenIssuer>>,
): Promise<Callers> {
  const minted = await issuer.mint(ROLES, TOKENS_PER_ROLE);
  const callersOf = (role?: string): LoadCaller[] =>
    minted
      .filter((caller) => role === undefined || caller.role === role)
      .map((caller) => ({
        authorization: caller.authorization,
        rowStride: caller.role === READER_ROLE ? 10 : 1,
        role: caller.role,
      }));
  return {
    mix: callersOf(),
    readers: callersOf(READER_ROLE),
    all: callersOf(ALL_ROLE),
  };
}

/**
 * The bench roles (cluster-wide, idempotent): bench_reader is in the readers of 1 row in 10,
 * bench_all of every row, and two more roles read what bench_all reads, as its members. A login
 * that is no superuser is granted them, as `pgmcp role grant` would.
 */
async function createBenchRoles(admin: pg.Client): Promise<void> {
  await admin.query(`do $$ begin
      if not exists (select from pg_roles where rolname = 'bench_reader') then create role bench_reader nologin; end if;
      if not exists (select from pg_roles where rolname = 'bench_all') then create role bench_all nologin; end if;
      if not exists (select from pg_roles where rolname = 'bench_analyst') then create role bench_analyst nologin; end if;
      if not exists (select from pg_roles where rolname = 'bench_support') then create role bench_support nologin; end if;
      if not exists (select from pg_auth_members m join pg_roles r on r.oid = m.roleid join pg_roles u on u.oid = m.member
                      where r.rolname = 'bench_all' and u.rolname = 'bench_analyst') then grant bench_all to bench_analyst; end if;
      if not exists (select from pg_auth_members m join pg_roles r on r.oid = m.roleid join pg_roles u on u.oid = m.member
                      where r.rolname = 'bench_all' and u.rolname = 'bench_support') then grant bench_all to bench_support; end if;
      if not (select rolsuper from pg_roles where rolname = current_user) then
        execute format('grant bench_reader, bench_all, bench_analyst, bench_support to %I', current_user);
      end if;
    end $$`);
}

interface RequestFiguresContext extends Callers {
  readonly scheme: TokenScheme;
  readonly db: DatabaseHandle;
  /** The pgmcp endpoint, verifying the scheme's tokens. */
  readonly url: string;
  /** The peer (bench/peer-server.ts) verifying the same tokens, when read_vs_peer runs. */
  readonly peerUrl: string | undefined;
  readonly minId: number;
  readonly maxId: number;
  /** Where each figure goes, under its key and the scheme (list_c10_hs256). */
  readonly results: Record<string, unknown>;
}

/** Keep a figure under its key and the token scheme. */
type RecordFigure = (key: string, result: unknown) => void;

/** resources/list's spread keyset pages over the stored ids, the cursors signed as pgmcp signs them. */
function listWorkload(minId: number, maxId: number): Workload {
  return {
    kind: 'list',
    minId,
    maxId,
    pageSize: PAGE_SIZE,
    cursorSecret: CURSOR_SECRET,
  };
}

/** The request-path figures through pgmcp, with one token scheme. */
async function requestFigures(context: RequestFiguresContext): Promise<void> {
  const { db, url, mix, readers, results } = context;
  const record: RecordFigure = (key, result) => {
    results[`${key}_${context.scheme}`] = result;
  };
  await pageFigures(context, record);
  await sameBytesFigures(context, record);
  await readFigures(context, record);
  await roleFigures(context, record);

  // 7. The tools: search, query, tools/list (bench/tools.ts).
  await toolFigures({
    url,
    mix,
    readers,
    pointRead: RAW_POINT_READ,
    rawPointReads: (concurrency, uri) =>
      measure(concurrency, DURATION_MS, WARMUP_MS, async (i) => {
        await db.pool.query(rawPointRead(uri(i)));
      }),
    load,
    compare,
    startSameBytes: (kind) => startSameBytesServer(url, kind, mix),
    startSafeQuery: () => startSafeQueryServer(db, mix),
    runs,
    record,
  });
}

/** pgmcp (verifying the callers' tokens) against the bare statement server, alternated. */
async function againstBare(
  { db, url, mix }: RequestFiguresContext,
  kind: 'list' | 'read',
  workload: Workload,
): Promise<Comparison> {
  const bare = await startStatementServer(db, kind);
  try {
    return await compare(
      () => load(bare.url, 10, workload, UNCHECKED),
      () => load(url, 10, workload, mix),
      throughputRatio,
    );
  } finally {
    await bare.close();
  }
}

/** Figures 1 and 2: list throughput against the raw keyset query, last page against first. */
async function pageFigures(
  context: RequestFiguresContext,
  record: RecordFigure,
): Promise<void> {
  const { db, minId, maxId, url, mix } = context;
  // 1. resources/list over HTTP vs the raw keyset query on the same pool, at 10 and 50 callers
  //    (the callers' tokens in turn: pages as each role sees them).
  for (const concurrency of [10, 50]) {
    if (!runs(`list_c${concurrency}`)) continue;
    const result = await compare(
      () =>
        measure(concurrency, DURATION_MS, WARMUP_MS, async (i) => {
          await db.pool.query(
            rawKeysetPage(spreadId(i, minId, maxId, PAGE_SIZE)),
          );
        }),
      () => load(url, concurrency, listWorkload(minId, maxId), mix),
      throughputRatio,
    );
    record(`list_c${concurrency}`, result);
  }
  // 1b. Context: the same pages from pgmcp against the bare statement server, 10 callers.
  if (runs('list_c10_vs_bare'))
    record(
      'list_c10_vs_bare',
      await againstBare(context, 'list', listWorkload(minId, maxId)),
    );

  // 2. Last page vs first page latency, one caller.
  if (runs('last_vs_first_page'))
    record(
      'last_vs_first_page',
      await compare(
        () => load(url, 1, { kind: 'list-first' }, mix),
        () =>
          load(
            url,
            1,
            {
              kind: 'list-after',
              afterId: maxId - PAGE_SIZE,
              cursorSecret: CURSOR_SECRET,
            },
            mix,
          ),
        (first, last) => last.p50 / first.p50,
      ),
    );
}

/**
 * Figures 3 and 3b: requests that read no resource row, against a bare node:http server writing the
 * bytes pgmcp answers each caller with (startSameBytesServer).
 */
async function sameBytesFigures(
  context: RequestFiguresContext,
  record: RecordFigure,
): Promise<void> {
  const { url, mix } = context;
  // 3. server/discover; 3b. prompts/list (one keyset page of pgmcp.prompts as the caller's role).
  const figures = [
    ['discover_vs_bare_bytes', 'discover'],
    ['prompts_list_vs_bare_bytes', 'prompts-list'],
  ] as const;
  for (const [key, kind] of figures) {
    if (!runs(key)) continue;
    const bare = await startSameBytesServer(url, kind, mix);
    try {
      record(
        key,
        await compare(
          () => load(bare.url, 10, { kind }, mix),
          () => load(url, 10, { kind }, mix),
          throughputRatio,
        ),
      );
    } finally {
      await bare.close();
    }
  }
}

/**
 * A bare node:http server answering each caller with the very bytes pgmcp answered that caller's
 * first request of `kind` with (asked once, before the figure): what the request costs without
 * the token, MCP and the database, for responses of the same size.
 */
async function startSameBytesServer(
  url: string,
  kind: 'discover' | 'prompts-list' | 'tools-list',
  callers: readonly LoadCaller[],
): Promise<{ url: string; close: () => Promise<void> }> {
  const method = {
    discover: 'server/discover',
    'prompts-list': 'prompts/list',
    'tools-list': 'tools/list',
  }[kind];
  const answers = new Map<string, Buffer>();
  for (const caller of callers) {
    if (answers.has(caller.authorization)) continue;
    const { body, headers } = loadRequest(caller, method, {});
    const response = await fetch(url, {
      method: 'POST',
      headers: Object.fromEntries(
        Object.entries(headers)
          .filter(([name]) => name !== 'Content-Length')
          .map(([name, value]) => [name, String(value)]),
      ),
      body,
    });
    if (!response.ok)
      throw new Error(`${method} answered HTTP ${response.status}`);
    answers.set(
      caller.authorization,
      Buffer.from(await response.arrayBuffer()),
    );
  }
  const first = [...answers.values()][0] ?? Buffer.alloc(0);
  return startBareServer(
    (_body, authorization) => answers.get(authorization ?? '') ?? first,
  );
}

/**
 * A bare node:http server running the query tool's statement the plain safe way, with pg's public
 * API: a READ ONLY transaction with the caller's role set locally, the statement with its
 * parameters, COMMIT, then one audit row through pgmcp.write_audit, as the login. No token
 * verified, no MCP, no statement guard: the baseline for the query figure.
 */
function startSafeQueryServer(
  db: DatabaseHandle,
  callers: readonly LoadCaller[],
): Promise<{ url: string; close: () => Promise<void> }> {
  const roles = new Map(
    callers.map((caller) => [caller.authorization, caller.role ?? null]),
  );
  return startBareServer(async (body, authorization) => {
    const message = JSON.parse(body.toString('utf8')) as {
      id: unknown;
      params: { arguments: { sql: string; params?: string[] } };
    };
    const { sql, params = [] } = message.params.arguments;
    const role = roles.get(authorization ?? '') ?? null;
    const started = performance.now();
    const client = await db.pool.connect();
    let rows: unknown[];
    try {
      await client.query('BEGIN READ ONLY');
      await client.query(
        "select set_config('role', coalesce($1, current_user), true)",
        [role],
      );
      ({ rows } = await client.query({ text: sql, values: params }));
      await client.query('COMMIT');
      // The pool's sessions default to read-only: the audit row is its own read-write transaction.
      await client.query('BEGIN READ WRITE');
      await client.query(
        'select pgmcp.write_audit($1, null, $2, $3, $4, $5, $6, null, null, null)',
        [
          role,
          'query',
          sql,
          params.length,
          rows.length,
          performance.now() - started,
        ],
      );
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    return Buffer.from(
      JSON.stringify({
        jsonrpc: '2.0',
        id: message.id,
        result: {
          content: [{ type: 'text', text: JSON.stringify(rows) }],
          structuredContent: { rows, row_count: rows.length },
        },
      }),
    );
  });
}

/** Figures 4 and 4b: resources/read against the raw point read, and against the SDK's server. */
async function readFigures(
  context: RequestFiguresContext,
  record: RecordFigure,
): Promise<void> {
  const { db, url, mix } = context;
  // 4. resources/read vs the raw point read on the same pool, 10 callers.
  if (runs('read_vs_point_read'))
    record(
      'read_vs_point_read',
      await compare(
        () =>
          measure(10, DURATION_MS, WARMUP_MS, async (i) => {
            await db.pool.query(rawPointRead(pointReadUri(i)));
          }),
        () => load(url, 10, { kind: 'read', rows: 1_000_000 }, mix),
        throughputRatio,
      ),
    );

  // 4a. Context: the same reads from pgmcp against the bare statement server, 10 callers.
  if (runs('read_vs_bare'))
    record(
      'read_vs_bare',
      await againstBare(context, 'read', { kind: 'read', rows: 1_000_000 }),
    );

  // 4b. resources/read vs the official TypeScript SDK's server reading the same rows from the same
  //     database (bench/peer-server.ts), same tokens, same client, 10 callers.
  if (context.peerUrl !== undefined) {
    const peerUrl = context.peerUrl;
    record(
      'read_vs_peer',
      await compare(
        () => load(peerUrl, 10, { kind: 'read', rows: 1_000_000 }, mix),
        () => load(url, 10, { kind: 'read', rows: 1_000_000 }, mix),
        throughputRatio,
      ),
    );
  }
}

/** Figures 5 and 6: resources/list as a role that sees 10% of the rows. */
async function roleFigures(
  context: RequestFiguresContext,
  record: RecordFigure,
): Promise<void> {
  const { db, minId, maxId, url, readers, all } = context;
  const pages = listWorkload(minId, maxId);
  // 5. resources/list as a role that sees 10% of the rows (its tokens in turn) vs the same keyset query under the same
  //    RLS, sent raw as one simple-protocol round trip (begin; set local role; select; commit).
  if (runs('list_role_10pct_vs_raw_rls'))
    record(
      'list_role_10pct_vs_raw_rls',
      await compare(
        () =>
          measure(10, DURATION_MS, WARMUP_MS, async (i) => {
            const after = spreadId(i, minId, maxId, PAGE_SIZE);
            await db.pool.query(
              `begin read only; set local role bench_reader; ${RAW_KEYSET_PAGE.replace('$1', String(after)).replace('$2', String(PAGE_SIZE + 1))}; commit`,
            );
          }),
        () => load(url, 10, pages, readers),
        throughputRatio,
      ),
    );

  // 6. Role-filtered list p50 vs a role that sees everything, both through pgmcp, one caller.
  if (runs('list_role_10pct_vs_all_p50'))
    record(
      'list_role_10pct_vs_all_p50',
      await compare(
        () => load(url, 1, pages, all),
        () => load(url, 1, pages, readers),
        (all, reader) => reader.p50 / all.p50,
      ),
    );
}

/** What the figures share once the bench database is open. */
interface Bench {
  readonly db: DatabaseHandle;
  /** The bench database's URL. */
  readonly databaseUrl: string;
  readonly logger: Logger;
  /** Where every figure goes, under its key. */
  readonly results: Record<string, unknown>;
}

/** The bench, seeded: the stored ids' range, and a logger for pgmcp that discards everything. */
interface SeededBench extends Bench {
  readonly minId: number;
  readonly maxId: number;
  readonly silent: Logger;
}

async function main(): Promise<void> {
  const logger = createLogger();
  const database = await benchDatabase((line) => logger.info(line));
  const results: Record<string, unknown> = {};
  const postgres = await serverFacts(database.url);
  if (CATALOG_ONLY || REPLICAS_ONLY || WAL_ONLY || STANDBY_ONLY) {
    if (CATALOG_ONLY)
      Object.assign(results, await catalogFigures(database.url, logger));
    else if (REPLICAS_ONLY)
      Object.assign(results, await replicaFigures(database.url, logger));
    else if (STANDBY_ONLY) Object.assign(results, await standbyFigures(logger));
    else results['wal_capture'] = await walBench(database.url, logger);
    await database.stop();
    writeSummary(results, postgres);
    return;
  }
  const db = createDatabase({
    connectionString: database.url,
    poolSize: 10,
    statementTimeoutMs: 60_000,
    onError: (m, e) => logger.error(m, e),
  });
  const bench: Bench = { db, databaseUrl: database.url, logger, results };
  const { minId, maxId } = await prepareDatabase(bench);
  const silent = createLogger({
    stream: { write: () => true } as unknown as NodeJS.WritableStream,
  });
  const seeded: SeededBench = { ...bench, minId, maxId, silent };
  await servedFigures(seeded);
  await liveAndLegacyFigures(seeded);
  await db.close();
  // The catalog, on its own database. It runs last in a full run: the heap it leaves behind slows
  // the raw baselines (which allocate a JS object per row) far more than pgmcp.
  if (runs('catalog'))
    Object.assign(results, await catalogFigures(database.url, logger));
  if (runs('replicas'))
    Object.assign(results, await replicaFigures(database.url, logger));
  if (runs('wal'))
    results['wal_capture'] = await walBench(database.url, logger);
  if (runs('standby')) Object.assign(results, await standbyFigures(logger));
  await database.stop();

  writeSummary(results, postgres);
}

/** Delivery's PostgreSQL cost with 1 and 3 replica processes (bench/replicas.ts), on their own database. */
async function replicaFigures(
  serverUrl: string,
  logger: Logger,
): Promise<Record<string, unknown>> {
  const issuer = await startTokenIssuer('hs256');
  try {
    return (await replicaBenchmarks({ serverUrl, logger, issuer })).results;
  } finally {
    await issuer.close();
  }
}

/**
 * Reads from a hot standby against the same reads on the primary (bench/standby.ts), on a private
 * primary and standby pair, with HS256 tokens.
 */
async function standbyFigures(
  logger: Logger,
): Promise<Record<string, unknown>> {
  const issuer = await startTokenIssuer('hs256');
  try {
    return await standbyBenchmarks({
      logger,
      secret: issuer.secret ?? '',
      audience: issuer.audience,
      callers: (await mintCallers(issuer)).mix,
      createRoles: createBenchRoles,
      pointRead: RAW_POINT_READ,
      load,
      rounds: ROUNDS,
    });
  } finally {
    await issuer.close();
  }
}

/** The WAL change source against an inert pgoutput consumer (bench/wal.ts). */
function walBench(serverUrl: string, logger: Logger): Promise<WalFigures> {
  return walFigures(serverUrl, {
    logger,
    durationMs: DURATION_MS,
    rounds: ROUNDS,
  });
}

/** The catalog figures (bench/catalog.ts) on their own database on the server at `serverUrl`. */
async function catalogFigures(
  serverUrl: string,
  logger: Logger,
): Promise<Record<string, unknown>> {
  const issuer = await startTokenIssuer('hs256');
  const catalog = await catalogBenchmarks({
    serverUrl,
    logger,
    rounds: ROUNDS,
    load,
    issuer,
    tokensPerRole: TOKENS_PER_ROLE,
  });
  await issuer.close();
  return catalog.results;
}

/**
 * The bench database migrated, seeded (once), vacuumed, with the bench roles; then the storage
 * figures, which need it so. The range of the stored resources' ids.
 */
async function prepareDatabase(
  bench: Bench,
): Promise<{ minId: number; maxId: number }> {
  const { logger } = bench;
  const admin = await bench.db.connectAdmin();
  await runMigrations(admin, MIGRATIONS_DIRECTORY, (line) => logger.info(line));
  if (!(await seedLoaded(admin, 'bench'))) {
    logger.info('seeding 1,000,000 resources (once per bench database)');
    await loadSeed(
      admin,
      { seedsDirectory: SEEDS_DIRECTORY, dataset: 'bench' },
      createProgress('seed bench'),
    );
    await admin.query('analyze pgmcp.resources');
  }
  // Autovacuum keeps the visibility map of a live table current; servers with it off (CI
  // settings) never would, and index-only scans, such as a request role's list walk
  // (pgmcp.resource_listing), would read the heap instead. Vacuum what the bench reads, as
  // autovacuum would after the seed and the live bench's updates of the previous run.
  await admin.query('vacuum (analyze) pgmcp.resources, pgmcp.resource_listing');
  await createBenchRoles(admin);
  const { rows } = await admin.query<{
    min: string;
    max: string;
    count: string;
  }>(
    `select min(id)::text as min, max(id)::text as max, count(*)::text as count from pgmcp.resources`,
  );
  await storageGroup(bench, admin);
  await admin.end();
  const stats = rows[0] ?? { min: '1', max: '1', count: '0' };
  logger.info(`bench database holds ${stats.count} resources`);
  return { minId: Number(stats.min), maxId: Number(stats.max) };
}

/**
 * 0. What pgmcp keeps beside the table, then what keeping it costs single-row writers
 *    (bench/storage.ts). The writes end with the readers' keys rebuilt and vacuumed.
 */
async function storageGroup(bench: Bench, admin: pg.Client): Promise<void> {
  const { results, logger } = bench;
  const writeOptions: WriteFigureOptions = {
    url: bench.databaseUrl,
    admin,
    rounds: ROUNDS,
    seconds: Math.max(1, Math.round(DURATION_MS / 1000)),
    log: (line) => logger.info(line),
  };
  if (runs('storage')) {
    results['storage'] = await storageFigures(admin);
    results['writes_all_triggers'] = await writeFigures(writeOptions);
  }
  // 0b. What the search index adds to single-row writes (bench/storage.ts).
  if (runs('storage') || runs('writes_search_index'))
    results['writes_search_index'] =
      await searchIndexWriteFigures(writeOptions);
}

/** pgmcp's app on `db`, as `pgmcp serve` makes it over the bench database. */
async function benchApp(db: DatabaseHandle, silent: Logger): Promise<App> {
  return createApp({
    sources: [await catalogSource(db)],
    db,
    cursorSecrets: [CURSOR_SECRET],
    pageSize: PAGE_SIZE,
    maxDirectoryEntries: 500,
    live: loadConfig({}, {}).live,
    logger: silent,
  });
}

/** The same app on a handle of its own that drives no driver internals, for the internals figures. */
interface PublicApiApp {
  readonly db: DatabaseHandle;
  readonly app: App;
}

/** pgmcp's app with its change feed running: the HTTP ceiling, then each token scheme's figures. */
async function servedFigures(bench: SeededBench): Promise<void> {
  const { db, results } = bench;
  const app = await benchApp(db, bench.silent);
  // As `pgmcp serve` runs it: the change feed keeps what the server may keep in memory current.
  const feed = await app.startChangePath();
  const offDb = runs('internals')
    ? createDatabase({
        connectionString: bench.databaseUrl,
        poolSize: 10,
        statementTimeoutMs: 60_000,
        onError: (m, e) => bench.logger.error(m, e),
        driverPatches: 'off',
      })
    : undefined;
  const off =
    offDb === undefined
      ? undefined
      : { db: offDb, app: await benchApp(offDb, bench.silent) };
  const offFeed = await off?.app.startChangePath();
  // Context, not a target: the same-size page from a bare node:http server (fixed bytes, no
  // database, no JSON work) is the ceiling any Node server reaches with this client.
  if (runs('list_http_ceiling'))
    results['list_http_ceiling'] = await httpCeiling(db);
  await ceilingFigures(db, bench, results);
  for (const scheme of SCHEMES)
    await schemeFigures(bench, { app, off }, scheme);
  await offFeed?.stop();
  await offDb?.close();
  await feed.stop();
}

/** A bare node:http server answering a first page's bytes, loaded as list-first is. */
async function httpCeiling(
  db: DatabaseHandle,
): Promise<{ ceiling: Run; bytes: number }> {
  const { rows: sample } = await db.pool.query<{ json: string }>(
    `select json_agg(json_build_object('uri', uri, 'name', name, 'title', title, 'description', description,
       'mimeType', mime_type, 'size', size, 'annotations', json_build_object('audience', audience, 'priority', priority,
       'lastModified', updated_at)))::text as json from (select * from pgmcp.resources order by id limit $1) r`,
    [PAGE_SIZE],
  );
  const page = Buffer.from(
    `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","resources":${sample[0]?.json ?? '[]'},"ttlMs":60000,"cacheScope":"public"}}`,
  );
  const bare = await startBareServer(() => page);
  const ceiling = await load(bare.url, 10, { kind: 'list-first' }, [
    { authorization: 'Bearer unchecked', rowStride: 1 },
  ]);
  await bare.close();
  return { ceiling, bytes: page.length };
}

/**
 * A bare node:http server that answers each resources/list or resources/read request with the raw
 * statement's rows (the keyset page after the cursor's id, or the point read of the URI), as
 * JSON.stringify gives them: no token, no MCP. The plain way to answer them from Node.
 */
function startStatementServer(
  db: DatabaseHandle,
  kind: 'list' | 'read',
): Promise<{ url: string; close: () => Promise<void> }> {
  const cursors = createCursorCodec([CURSOR_SECRET]);
  const answer = async (params: Record<string, unknown>): Promise<object> => {
    if (kind === 'read') {
      const { rows } = await db.pool.query(rawPointRead(String(params['uri'])));
      return { contents: rows };
    }
    const after = Number(cursors.decode(String(params['cursor'])).k[0]);
    const { rows } = await db.pool.query(rawKeysetPage(after));
    return { resources: rows.slice(0, PAGE_SIZE) };
  };
  return startBareServer(async (body) => {
    const message = JSON.parse(body.toString('utf8')) as {
      id: unknown;
      params: Record<string, unknown>;
    };
    const result = await answer(message.params);
    return Buffer.from(
      JSON.stringify({ jsonrpc: '2.0', id: message.id, result }),
    );
  });
}

/** The one caller of a bare server: it checks no token, and reads every row. */
const UNCHECKED: readonly LoadCaller[] = [
  { authorization: 'Bearer unchecked', rowStride: 1 },
];

/**
 * Context for the list, read and query figures: the bare statement server (startStatementServer)
 * alternated with the raw statement on the pool, 10 callers. What is left of the raw statement once
 * a request crosses HTTP with this client and its rows become JSON (docs/benchmarks.md, Method).
 */
async function ceilingFigures(
  db: DatabaseHandle,
  { minId, maxId }: { minId: number; maxId: number },
  results: Record<string, unknown>,
): Promise<void> {
  const ceilings = {
    list: {
      key: 'list_ceiling_vs_raw',
      raw: (i: number) =>
        db.pool.query(rawKeysetPage(spreadId(i, minId, maxId, PAGE_SIZE))),
      workload: listWorkload(minId, maxId),
    },
    read: {
      key: 'read_ceiling_vs_raw',
      raw: (i: number) => db.pool.query(rawPointRead(pointReadUri(i))),
      workload: { kind: 'read', rows: 1_000_000 } as const,
    },
  };
  for (const [kind, { key, raw, workload }] of Object.entries(ceilings)) {
    if (!runs(key)) continue;
    const bare = await startStatementServer(db, kind as 'list' | 'read');
    try {
      results[key] = await compare(
        () =>
          measure(10, DURATION_MS, WARMUP_MS, async (i) => {
            await raw(i);
          }),
        () => load(bare.url, 10, workload, UNCHECKED),
        throughputRatio,
      );
    } finally {
      await bare.close();
    }
  }
}

/** The request-path figures with `scheme`'s tokens: pgmcp (and the peer) served, verifying them. */
async function schemeFigures(
  bench: SeededBench,
  { app, off }: { app: App; off: PublicApiApp | undefined },
  scheme: TokenScheme,
): Promise<void> {
  const { db } = bench;
  const issuer = await startTokenIssuer(scheme);
  const callers = await mintCallers(issuer);
  const server = await serve({
    dispatcher: app.dispatcher,
    issuer,
    db,
    logger: bench.silent,
  });
  const peer = runs('read_vs_peer')
    ? await startPeerServer({
        connectionString: bench.databaseUrl,
        issuer,
        poolSize: 10,
      })
    : undefined;
  try {
    await requestFigures({
      scheme,
      db,
      url: server.url,
      peerUrl: peer?.url,
      minId: bench.minId,
      maxId: bench.maxId,
      results: bench.results,
      ...callers,
    });
    if (off !== undefined)
      await publicApiFigures(bench, { off, issuer, url: server.url }, callers);
  } finally {
    await peer?.close();
    await server.close();
    await issuer.close();
  }
}

/**
 * The driver internals' figures (bench/internals.ts): pgmcp with them on (`url`) against the same
 * app on a handle with them off, served with the same token issuer, alternated.
 */
async function publicApiFigures(
  bench: SeededBench,
  served: { off: PublicApiApp; issuer: TokenIssuer; url: string },
  callers: Callers,
): Promise<void> {
  const { off, issuer } = served;
  const offServer = await serve({
    dispatcher: off.app.dispatcher,
    issuer,
    db: off.db,
    logger: bench.silent,
  });
  try {
    await internalsFigures({
      onUrl: served.url,
      offUrl: offServer.url,
      callers: callers.mix,
      rounds: ROUNDS,
      load,
      workloads: {
        read: { kind: 'read', rows: 1_000_000 },
        list: listWorkload(bench.minId, bench.maxId),
        query: { kind: 'tool-query', rows: 1_000_000, sql: RAW_POINT_READ },
      },
      record: (key, result) => {
        bench.results[`${key}_${issuer.scheme}`] = result;
      },
    });
  } finally {
    await offServer.close();
  }
}

/** The live and legacy groups, with HS256 tokens. */
async function liveAndLegacyFigures(bench: SeededBench): Promise<void> {
  const issuer = await startTokenIssuer('hs256');
  const callers = await mintCallers(issuer);
  // 7. Live updates (bench/live.ts): latency, fan-out, memory per stream, write cost.
  if (runs('live')) await liveGroup(bench, issuer, callers);
  // 8. The 2025-11-25 era (bench/legacy.ts): requests in open sessions against modern ones,
  //    subscribers' latency, memory per idle session.
  if (runs('legacy')) await legacyGroup(bench, issuer, callers);
  await issuer.close();
}

async function liveGroup(
  bench: SeededBench,
  issuer: TokenIssuer,
  { mix, all }: Callers,
): Promise<void> {
  const { db, silent } = bench;
  const live = await withAdminClient(db, (admin) =>
    liveBenchmarks({
      db,
      admin,
      logger: bench.logger,
      durationMs: DURATION_MS,
      rounds: ROUNDS,
      readLoad: (target) =>
        load(target, 10, { kind: 'read', rows: 1_000_000 }, mix),
      readWarmupMs: WARMUP_MS,
      serve: (dispatcher) => serve({ dispatcher, issuer, db, logger: silent }),
      authorizations: all.map((caller) => caller.authorization),
    }),
  );
  Object.assign(bench.results, live.results);
}

async function legacyGroup(
  bench: SeededBench,
  issuer: TokenIssuer,
  { mix, all }: Callers,
): Promise<void> {
  const { db, silent } = bench;
  Object.assign(
    bench.results,
    await withAdminClient(db, (admin) =>
      legacyBenchmarks({
        db,
        admin,
        logger: bench.logger,
        databaseUrl: bench.databaseUrl,
        load,
        compare,
        serve: (dispatcher, legacy) =>
          serve({ dispatcher, issuer, db, logger: silent, legacy }),
        listWorkload: listWorkload(bench.minId, bench.maxId),
        cursorSecret: CURSOR_SECRET,
        mix,
        all,
      }),
    ),
  );
}

/** The server's version and the settings the figures depend on (the docs' caption). */
async function serverFacts(url: string): Promise<Record<string, string>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<Record<string, string>>(
      `select current_setting('server_version') as version,
              current_setting('shared_buffers') as "sharedBuffers",
              current_setting('autovacuum') as autovacuum`,
    );
    return rows[0] ?? {};
  } finally {
    await client.end();
  }
}

/**
 * Write bench/results/latest.json, then its tables into docs/benchmarks.md and README. A
 * BENCH_ONLY run keeps the other figures of the last full run in the file and notes its own date
 * under `partialRuns`.
 */
function writeSummary(
  results: Record<string, unknown>,
  postgres: Record<string, string>,
): void {
  const directory = path.join(PROJECT_ROOT, 'bench', 'results');
  const file = path.join(directory, 'latest.json');
  const run = {
    version: SERVER_INFO.version,
    date: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      model: os.cpus()[0]?.model,
      node: process.version,
    },
    postgres,
    durationMs: DURATION_MS,
    rounds: ROUNDS,
    order: 'abba',
    callers:
      `Every request carries its own bearer token, verified as in production: ${ROLES.length * TOKENS_PER_ROLE} ` +
      `tokens over ${ROLES.length} roles (${TOKENS_PER_ROLE} for a figure as one role); request-path figures ` +
      `with ${SCHEMES.map((scheme) => (scheme === 'hs256' ? 'HS256 tokens' : 'ES256 tokens from a JWKS')).join(' and with ')}, ` +
      'live and catalog figures with HS256 tokens.',
  };
  let summary: Record<string, unknown> = { ...run, results };
  if (ONLY !== undefined && existsSync(file)) {
    const last = JSON.parse(readFileSync(file, 'utf8')) as {
      results?: Record<string, unknown>;
      partialRuns?: Record<string, unknown>;
    };
    summary = {
      ...last,
      results: { ...last.results, ...results },
      partialRuns: { ...last.partialRuns, [ONLY.join(',')]: run },
    };
  }
  mkdirSync(directory, { recursive: true });
  writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`);
  const written = readSummary(file);
  writeBenchDocs(written, PROJECT_ROOT);
  process.stdout.write(`\n${renderResults(written)}\n`);
  process.stdout.write(
    `\nwritten to bench/results/latest.json, docs/benchmarks.md and README.md\n`,
  );
}

await main();
