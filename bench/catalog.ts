// Catalog benchmarks (docs/benchmarks.md "Method"), run by bench/run.ts: a database of 10,000
// tables in 20 schemas, read as a role granted on all of them. First resources/list page p50, a
// whole-catalog walk through pgmcp against the same keyset query on the pool, and one table's
// description p50; a role that sees 10 tables as context. Requests carry bearer tokens (serve.ts).
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { createApp } from '../src/app/index.js';
import { loadConfig } from '../src/config/index.js';
import {
  createDatabase,
  LIST_CATALOG_PAGE,
  loadSeed,
  runMigrations,
  seedLoaded,
  type DatabaseHandle,
} from '../src/db/index.js';
import type { Logger } from '../src/log.js';
import { catalogUri, databaseUri } from '../src/resources/catalog-uri.js';
import { readCatalog } from '../src/resources/catalog.js';
import { catalogSource } from '../src/resources/index.js';
import { MIGRATIONS_DIRECTORY, SEEDS_DIRECTORY } from '../src/config/index.js';
import type { LoadCaller, Run, Workload } from './load.js';
import { serve } from './serve.js';
import type { TokenIssuer } from './token-issuer.js';
import type { Walk, WalkSpec } from './walk.js';

export interface CatalogBenchContext {
  /** Any database on the bench server, to create the catalog database from (as a superuser). */
  readonly serverUrl: string;
  readonly logger: Logger;
  readonly rounds: number;
  /** An HTTP load on `url` for the bench's duration, in a worker thread (run.ts's `load`). */
  readonly load: (
    url: string,
    concurrency: number,
    workload: Workload,
    callers: readonly LoadCaller[],
  ) => Promise<Run>;
  /** Signs the requests' tokens (HS256 in run.ts). */
  readonly issuer: TokenIssuer;
  /** Distinct tokens per role. */
  readonly tokensPerRole: number;
}

export interface CatalogBenchOutput {
  readonly results: Record<string, unknown>;
}

const DATABASE = 'pgmcp_bench_catalog';
const SCHEMAS = 20;
const TABLES_PER_SCHEMA = 500;
/** The request role: USAGE on every bench schema, SELECT on every bench table. */
const ROLE = 'bench_catalog';
/** A role that sees 10 tables of the 10,000 (USAGE on s01, SELECT on t0001–t0010 there). */
const FEW_ROLE = 'bench_catalog_few';
const PAGE_SIZE = 100;

const schemaName = (index: number): string =>
  `s${String(index).padStart(2, '0')}`;
const tableName = (index: number): string =>
  `t${String(index).padStart(4, '0')}`;

/**
 * One schema of the bench catalog, in one transaction (dropped first, so a half-made schema from
 * an interrupted run is made again). Every table has a primary key and four or five columns; every
 * fifth references the one before it, every second has a comment, every fourth an extra index,
 * every tenth a column comment.
 */
function schemaDdl(schema: string): string {
  const literal = pg.escapeLiteral(schema);
  const identifier = pg.escapeIdentifier(schema);
  return `drop schema if exists ${identifier} cascade;
  do $bench$
  declare
    s text := ${literal};
    t text;
  begin
    execute format('create schema %I', s);
    execute format('comment on schema %I is %L', s, 'Bench schema ' || s || '.');
    for i in 1..${TABLES_PER_SCHEMA} loop
      t := format('t%s', lpad(i::text, 4, '0'));
      execute format(
        'create table %I.%I (id bigint primary key, name text not null, '
        'created_at timestamptz not null default now(), amount numeric(12, 2)%s)',
        s, t,
        case when i % 5 = 0
          then format(', parent_id bigint references %I.%I (id)', s, format('t%s', lpad((i - 1)::text, 4, '0')))
          else '' end);
      if i % 2 = 0 then
        execute format('comment on table %I.%I is %L', s, t, format('Table %s of schema %s.', i, s));
      end if;
      if i % 4 = 0 then execute format('create index on %I.%I (created_at)', s, t); end if;
      if i % 10 = 0 then
        execute format('comment on column %I.%I.name is %L', s, t, 'What the row is called.');
      end if;
    end loop;
    execute format('grant usage on schema %I to ${ROLE}', s);
    execute format('grant select on all tables in schema %I to ${ROLE}', s);
  end $bench$`;
}

/** The catalog database, migrated and holding the 10,000 tables (made once; each schema checked). */
async function prepareCatalogDatabase(
  serverUrl: string,
  log: (line: string) => void,
): Promise<string> {
  const server = new pg.Client({ connectionString: serverUrl });
  await server.connect();
  try {
    const { rowCount } = await server.query(
      'select 1 from pg_database where datname = $1',
      [DATABASE],
    );
    if (rowCount === 0) await server.query(`create database ${DATABASE}`);
  } finally {
    await server.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${DATABASE}`;
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await runMigrations(admin, MIGRATIONS_DIRECTORY, log);
    await admin.query(`do $$ begin
        if not exists (select from pg_roles where rolname = '${ROLE}') then create role ${ROLE} nologin; end if;
        if not exists (select from pg_roles where rolname = '${FEW_ROLE}') then create role ${FEW_ROLE} nologin; end if;
      end $$`);
    let made = 0;
    for (let index = 1; index <= SCHEMAS; index += 1) {
      const schema = schemaName(index);
      const { rows } = await admin.query<{ tables: number }>(
        `select count(*)::int as tables from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = $1 and c.relkind = 'r'`,
        [schema],
      );
      if (rows[0]?.tables === TABLES_PER_SCHEMA) continue;
      log(
        `catalog bench: creating schema ${schema} (${TABLES_PER_SCHEMA} tables)`,
      );
      await admin.query(schemaDdl(schema));
      made += 1;
    }
    await admin.query(
      `grant usage on schema s01 to ${FEW_ROLE};
       grant select on ${Array.from({ length: 10 }, (_, index) => `s01.${tableName(index + 1)}`).join(', ')} to ${FEW_ROLE}`,
    );
    // Planner statistics as autovacuum would leave them on a database that has settled.
    if (made > 0)
      await admin.query(
        'analyze pg_catalog.pg_class, pg_catalog.pg_namespace, pg_catalog.pg_description, pg_catalog.pg_constraint, pg_catalog.pg_attribute',
      );
    const { rows } = await admin.query<{ stored: number }>(
      'select count(*)::int as stored from pgmcp.resources',
    );
    // Stored resources list before the catalog: with none, page one is a catalog page.
    if (rows[0]?.stored !== 0)
      throw new Error(
        `${DATABASE} must hold no stored resources (it holds ${rows[0]?.stored})`,
      );
  } finally {
    await admin.end();
  }
  return url.toString();
}

/** Walk resources/list from first page to last `walks` times, in a worker thread. */
function walkThroughServer(
  url: string,
  walks: number,
  callers: readonly LoadCaller[],
): Promise<Walk[]> {
  const spec: WalkSpec = { url, walks, callers };
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./load-worker.js', import.meta.url), {
      workerData: spec,
    });
    worker.once('message', (result: Walk[]) => resolve(result));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`walk worker exited with ${code}`));
    });
  });
}

/**
 * The baseline walk: the same keyset query pgmcp sends, as a prepared statement on a pool
 * connection switched to the role for the session (what a program logged in as the role would
 * run), page after page until a short page.
 */
async function walkRaw(db: DatabaseHandle): Promise<Walk> {
  const client = await db.pool.connect();
  try {
    await client.query(`set role ${ROLE}`);
    const started = performance.now();
    let after = { schema: '', relation: '' };
    let pages = 0;
    let items = 0;
    for (;;) {
      const { rows } = await client.query<{ schema: string; relation: string }>(
        {
          name: 'bench_raw_catalog_page',
          text: LIST_CATALOG_PAGE.text,
          values: LIST_CATALOG_PAGE.values({
            afterSchema: after.schema,
            afterRelation: after.relation,
            limit: PAGE_SIZE + 1,
            include: null,
            exclude: [],
          }),
        },
      );
      const page = rows.slice(0, PAGE_SIZE);
      pages += 1;
      items += page.length;
      const last = page.at(-1);
      if (rows.length <= PAGE_SIZE || last === undefined) break;
      after = { schema: last.schema, relation: last.relation };
    }
    return { ms: performance.now() - started, pages, items };
  } finally {
    await client.query('reset role');
    client.release();
  }
}

/** The demo dataset's own database, for the context sizes of docs/databases.md (made once). */
const DEMO_DATABASE = 'pgmcp_bench_demo';

/** Bytes (and approximate tokens, bytes / 4) of one read's text contents, read as `role`. */
async function contextSize(
  db: DatabaseHandle,
  uri: string,
  role: string,
): Promise<{ uri: string; bytes: number; tokens: number }> {
  const source = await catalogSource(db);
  const contents = await readCatalog(
    [source],
    uri,
    { role, claims: {} },
    { aborted: false },
    { maxEntries: 500 },
  );
  const bytes = contents.reduce(
    (sum, content) =>
      sum +
      Buffer.byteLength((JSON.parse(content) as { text?: string }).text ?? ''),
    0,
  );
  return { uri, bytes, tokens: Math.round(bytes / 4) };
}

/** The demo database, migrated and seeded (once), on the bench server. */
async function prepareDemoDatabase(
  serverUrl: string,
  log: (line: string) => void,
): Promise<string> {
  const server = new pg.Client({ connectionString: serverUrl });
  await server.connect();
  try {
    const { rowCount } = await server.query(
      'select 1 from pg_database where datname = $1',
      [DEMO_DATABASE],
    );
    if (rowCount === 0) await server.query(`create database ${DEMO_DATABASE}`);
  } finally {
    await server.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${DEMO_DATABASE}`;
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await runMigrations(admin, MIGRATIONS_DIRECTORY, log);
    if (!(await seedLoaded(admin, 'demo'))) {
      await loadSeed(admin, SEEDS_DIRECTORY, 'demo', () => undefined);
      await admin.query('analyze');
    }
  } finally {
    await admin.end();
  }
  return url.toString();
}

/**
 * What an agent's context takes: the navigator, one schema read and one table description, on the
 * demo database (as engineering, which sees all of it) and on the 10,000-table catalog.
 */
async function contextSizes(
  serverUrl: string,
  catalog: DatabaseHandle,
  log: (line: string) => void,
): Promise<Record<string, unknown>> {
  const demoUrl = await prepareDemoDatabase(serverUrl, log);
  const demo = createDatabase({
    connectionString: demoUrl,
    poolSize: 2,
    statementTimeoutMs: 60_000,
    onError: (message) => log(message),
  });
  try {
    return {
      demo: {
        navigator: await contextSize(
          demo,
          databaseUri(DEMO_DATABASE),
          'engineering',
        ),
        schema: await contextSize(
          demo,
          catalogUri(DEMO_DATABASE, 'shop'),
          'engineering',
        ),
        table: await contextSize(
          demo,
          catalogUri(DEMO_DATABASE, 'shop', 'orders'),
          'engineering',
        ),
      },
      catalog_10k: {
        navigator: await contextSize(catalog, databaseUri(DATABASE), ROLE),
        schema: await contextSize(
          catalog,
          catalogUri(DATABASE, schemaName(1)),
          ROLE,
        ),
        table: await contextSize(
          catalog,
          catalogUri(DATABASE, schemaName(1), tableName(5)),
          ROLE,
        ),
      },
    };
  } finally {
    await demo.close();
  }
}

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

export async function catalogBenchmarks(
  context: CatalogBenchContext,
): Promise<CatalogBenchOutput> {
  const { logger, rounds } = context;
  const url = await prepareCatalogDatabase(context.serverUrl, (line) =>
    logger.info(line),
  );
  const db = createDatabase({
    connectionString: url,
    poolSize: 10,
    statementTimeoutMs: 60_000,
    onError: (message, error) => logger.error(message, error),
  });
  const silent = { ...logger, info: () => undefined, warn: () => undefined };
  const app = createApp({
    sources: [await catalogSource(db)],
    db,
    cursorSecrets: ['bench-catalog-cursor-secret-0123456789'],
    pageSize: PAGE_SIZE,
    maxDirectoryEntries: 500,
    live: loadConfig({}, {}).live,
    logger: silent,
  });
  const server = await serve({
    dispatcher: app.dispatcher,
    issuer: context.issuer,
    db,
    logger: silent,
  });
  const callersOf = async (role: string): Promise<LoadCaller[]> =>
    (await context.issuer.mint([role], context.tokensPerRole)).map(
      (caller) => ({ authorization: caller.authorization, rowStride: 1 }),
    );
  const callers = await callersOf(ROLE);
  const fewCallers = await callersOf(FEW_ROLE);
  const results: Record<string, unknown> = {};
  // Tables spread over every schema and through each one's names.
  const uris = Array.from({ length: 1000 }, (_, index) =>
    catalogUri(
      DATABASE,
      schemaName(1 + (index % SCHEMAS)),
      tableName(1 + ((index * 7) % TABLES_PER_SCHEMA)),
    ),
  );
  /** ROUNDS one-caller loads; the median round's p50. */
  const p50Of = async (
    workload: Workload,
    as: readonly LoadCaller[] = callers,
  ) => {
    const runs: Run[] = [];
    for (let round = 0; round < rounds; round += 1)
      runs.push(await context.load(server.url, 1, workload, as));
    return { p50: median(runs.map((run) => run.p50)), runs };
  };

  try {
    // 1. The first resources/list page (no stored resources: the catalog from its first entry).
    const firstPage = await p50Of({ kind: 'list-first' });
    results['catalog_first_page'] = firstPage;

    // 2. The whole catalog, page after page, through pgmcp and raw on the pool, alternated.
    await walkRaw(db);
    await walkThroughServer(server.url, 1, callers);
    const pairs: { raw: Walk; served: Walk }[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const raw = await walkRaw(db);
      const [served] = await walkThroughServer(server.url, 1, callers);
      if (served === undefined || served.items !== raw.items)
        throw new Error(
          `the walks disagree: ${served?.items} items through pgmcp, ${raw.items} raw`,
        );
      pairs.push({ raw, served });
    }
    const ratios = pairs.map(({ raw, served }) => raw.ms / served.ms);
    const walkRatio = median(ratios);
    const { items, pages } = pairs[0]?.served ?? { items: 0, pages: 0 };
    results['catalog_walk'] = { items, pages, pairs, ratio: walkRatio, ratios };

    // 3. One table's description (Markdown), tables spread over the catalog.
    const read = await p50Of({ kind: 'read-uris', uris });
    results['catalog_read'] = read;

    // 4. The navigator of the 10,000 tables (pg://{database}), as the role that sees them all.
    const navigator = await p50Of({
      kind: 'read-uris',
      uris: [databaseUri(DATABASE)],
    });
    results['catalog_navigator'] = navigator;

    // 5. Bytes and approximate tokens an agent's context takes, demo database and this catalog.
    results['catalog_context_sizes'] = await contextSizes(
      context.serverUrl,
      db,
      (line) => logger.info(line),
    );

    // Context: a role that sees 10 tables, so the page checks privileges on the whole catalog.
    const fewFirst = await p50Of({ kind: 'list-first' }, fewCallers);
    results['catalog_few_first_page'] = fewFirst;
  } finally {
    await server.close();
    await db.close();
  }
  return { results };
}
