// Catalog benchmarks (docs/benchmarks.md "Method"), run by bench/run.ts: a database of 10,000
// tables in 20 schemas, read as a role granted on all of them. First resources/list page p50, a
// whole-catalog walk through pgmcp against the same keyset query on the pool, and one table's
// description p50; the login's figures as context.
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { createApp } from '../src/app.js';
import { LOGIN_PRINCIPAL, type Principal } from '../src/auth/index.js';
import { loadConfig } from '../src/config/index.js';
import {
  createDatabase,
  LIST_CATALOG_PAGE,
  runMigrations,
  type DatabaseHandle,
} from '../src/db/index.js';
import type { Logger } from '../src/log.js';
import { catalogUri } from '../src/resources/catalog-uri.js';
import { catalogSource } from '../src/resources/index.js';
import { MIGRATIONS_DIRECTORY } from '../src/config/index.js';
import type { Run, Workload } from './load.js';
import { serveAs } from './serve.js';
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
  ) => Promise<Run>;
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
function walkThroughServer(url: string, walks: number): Promise<Walk[]> {
  const spec: WalkSpec = { url, walks };
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
  const role: Principal = { role: ROLE, claims: {} };
  const server = await serveAs(app.dispatcher, role);
  const loginServer = await serveAs(app.dispatcher, LOGIN_PRINCIPAL);
  const fewServer = await serveAs(app.dispatcher, {
    role: FEW_ROLE,
    claims: {},
  });
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
  const p50Of = async (target: string, workload: Workload) => {
    const runs: Run[] = [];
    for (let round = 0; round < rounds; round += 1)
      runs.push(await context.load(target, 1, workload));
    return { p50: median(runs.map((run) => run.p50)), runs };
  };

  try {
    // 1. The first resources/list page (no stored resources: the catalog from its first entry).
    const firstPage = await p50Of(server.url, { kind: 'list-first' });
    results['catalog_first_page'] = firstPage;

    // 2. The whole catalog, page after page, through pgmcp and raw on the pool, alternated.
    await walkRaw(db);
    await walkThroughServer(server.url, 1);
    const pairs: { raw: Walk; served: Walk }[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const raw = await walkRaw(db);
      const [served] = await walkThroughServer(server.url, 1);
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
    const read = await p50Of(server.url, { kind: 'read-uris', uris });
    results['catalog_read'] = read;

    // Context: the same as the login (a superuser here, so every privilege check is trivial).
    const loginFirst = await p50Of(loginServer.url, { kind: 'list-first' });
    const loginRead = await p50Of(loginServer.url, { kind: 'read-uris', uris });
    results['catalog_login'] = { firstPage: loginFirst, read: loginRead };
    // Context: a role that sees 10 tables, so the page checks privileges on the whole catalog.
    const fewFirst = await p50Of(fewServer.url, { kind: 'list-first' });
    results['catalog_few_first_page'] = fewFirst;
  } finally {
    await fewServer.close();
    await loginServer.close();
    await server.close();
    await db.close();
  }
  return { results };
}
