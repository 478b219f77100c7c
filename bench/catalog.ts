// Catalog benchmarks (docs/benchmarks.md "Method"), run by bench/run.ts: a database of 10,000
// tables in 20 schemas, read as a role granted on all of them. First resources/list page p50, a
// whole-catalog walk through pgmcp against the same keyset query on the pool, one table's
// description p50 and the navigator's p50 and size; the navigator on a 100,000-table copy; what
// an agent's context takes on the demo database and the 10,000 tables, and how much value hints
// add to the demo's descriptions; a role that sees 10 tables as context. Requests carry bearer
// tokens (serve.ts).
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { createApp } from '../src/app/index.js';
import { loadConfig } from '../src/config/index.js';
import {
  createDatabase,
  loadSeed,
  runMigrations,
  seedLoaded,
  type DatabaseHandle,
} from '../src/db/index.js';
import { LIST_CATALOG_PAGE } from '../src/resources/statements/catalog-statements.js';
import type { Logger } from '../src/log.js';
import { catalogUri, databaseUri } from '../src/resources/catalog-uri.js';
import { readCatalog } from '../src/resources/catalog.js';
import { catalogSource } from '../src/resources/index.js';
import { DEFAULT_NAVIGATOR_BYTES } from '../src/resources/navigator.js';
import type { CatalogSource } from '../src/resources/catalog-source.js';
import { MIGRATIONS_DIRECTORY, SEEDS_DIRECTORY } from '../src/config/index.js';
import { alternate } from './alternate.js';
import type { LoadCaller, LoadRunner, Run, Workload } from './load.js';
import { serve } from './serve.js';
import type { TokenIssuer } from './token-issuer.js';
import type { Walk, WalkSpec } from './walk.js';

export interface CatalogBenchContext {
  /** Any database on the bench server, to create the catalog database from (as a superuser). */
  readonly serverUrl: string;
  readonly logger: Logger;
  readonly rounds: number;
  /** An HTTP load on `url` for the bench's duration, in a worker thread (run.ts's `load`). */
  readonly load: LoadRunner;
  /** Signs the requests' tokens (HS256 in run.ts). */
  readonly issuer: TokenIssuer;
  /** Distinct tokens per role. */
  readonly tokensPerRole: number;
}

export interface CatalogBenchOutput {
  readonly results: Record<string, unknown>;
}

const DATABASE = 'pgmcp_bench_catalog';
/** The 100,000-table catalog: a copy of the 10,000 and look-alike tables in schema `wide`. */
const DATABASE_100K = 'pgmcp_bench_catalog_100k';
const SCHEMAS = 20;
const TABLES_PER_SCHEMA = 500;
/** The tables of schemas s01–s20; a catalog of more holds the rest in `wide`. */
const CORE_TABLES = SCHEMAS * TABLES_PER_SCHEMA;
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
 * The catalog of `tables` tables, as one DO block that commits after each schema and each 2,000
 * look-alike tables, so an interrupted run resumes where it stopped. Schemas s01–s20 hold 500
 * tables each (a schema found incomplete is dropped and made again): every table has a primary key
 * and four or five columns; every fifth references the one before it, every second has a comment,
 * every fourth an extra index, every tenth a column comment. Past 10,000, `wide` holds look-alike
 * tables `t_000001` … with the same three columns and no key or index (each index is a file
 * PostgreSQL syncs on creation: they would make the build ten times slower).
 */
function catalogDdl(tables: number): string {
  const lookAlikes = Math.max(0, tables - CORE_TABLES);
  return `do $bench$
  declare
    s text;
    t text;
    made int;
  begin
    for n in 1..${SCHEMAS} loop
      s := format('s%s', lpad(n::text, 2, '0'));
      select count(*) into made from pg_class c join pg_namespace ns on ns.oid = c.relnamespace
        where ns.nspname = s and c.relkind = 'r';
      continue when made = ${TABLES_PER_SCHEMA};
      execute format('drop schema if exists %I cascade', s);
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
      commit;
    end loop;
    if ${lookAlikes} > 0 then
      create schema if not exists wide;
      comment on schema wide is 'Look-alike bench tables.';
      select count(*) into made from pg_class c join pg_namespace ns on ns.oid = c.relnamespace
        where ns.nspname = 'wide' and c.relkind = 'r';
      for i in made + 1..${lookAlikes} loop
        execute format('create table wide.%I (id bigint, amount numeric(12, 2), created_at timestamptz)',
                       't_' || lpad(i::text, 6, '0'));
        if i % 2000 = 0 then commit; end if;
      end loop;
      grant usage on schema wide to ${ROLE};
      grant select on all tables in schema wide to ${ROLE};
    end if;
  end $bench$`;
}

/** `name` on the bench server, made if missing (as a copy of `template` when given), migrated. */
async function prepareDatabase(
  serverUrl: string,
  name: string,
  options: { log: (line: string) => void; template?: string },
): Promise<string> {
  const server = new pg.Client({ connectionString: serverUrl });
  await server.connect();
  try {
    const { rowCount } = await server.query(
      'select 1 from pg_database where datname = $1',
      [name],
    );
    if (rowCount === 0) {
      const from =
        options.template === undefined
          ? ''
          : ` template ${pg.escapeIdentifier(options.template)}`;
      await server.query(`create database ${pg.escapeIdentifier(name)}${from}`);
    }
  } finally {
    await server.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await runMigrations(admin, MIGRATIONS_DIRECTORY, options.log);
  } finally {
    await admin.end();
  }
  return url.toString();
}

/** How many tables the bench schemas (s01–s20 and `wide`) hold. */
async function catalogTables(admin: pg.Client): Promise<number> {
  const { rows } = await admin.query<{ tables: number }>(
    `select count(*)::int as tables from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where (n.nspname ~ '^s[0-9]{2}$' or n.nspname = 'wide') and c.relkind = 'r'`,
  );
  return rows[0]?.tables ?? 0;
}

/**
 * The catalog database `name` holding `tables` tables (made once, and resumed if incomplete;
 * `template`, a smaller catalog, is copied first when the database is missing). Returns its URL
 * and how long making it took, in this run or the one that made it (kept as the database's
 * comment), or undefined for a catalog made before the comment was kept.
 */
async function prepareCatalog(
  serverUrl: string,
  spec: {
    name: string;
    tables: number;
    log: (line: string) => void;
    template?: string;
  },
): Promise<{ url: string; buildMs: number | undefined }> {
  const started = performance.now();
  const url = await prepareDatabase(serverUrl, spec.name, spec);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`do $$ begin
        if not exists (select from pg_roles where rolname = '${ROLE}') then create role ${ROLE} nologin; end if;
        if not exists (select from pg_roles where rolname = '${FEW_ROLE}') then create role ${FEW_ROLE} nologin; end if;
      end $$`);
    const incomplete = (await catalogTables(admin)) !== spec.tables;
    if (incomplete) {
      spec.log(`catalog bench: making ${spec.name} (${spec.tables} tables)`);
      await admin.query(catalogDdl(spec.tables));
      // Planner statistics as autovacuum would leave them on a database that has settled.
      await admin.query(
        'analyze pg_catalog.pg_class, pg_catalog.pg_namespace, pg_catalog.pg_description, pg_catalog.pg_constraint, pg_catalog.pg_attribute',
      );
      const ms = Math.round(performance.now() - started);
      await admin.query(
        `comment on database ${pg.escapeIdentifier(spec.name)} is ${pg.escapeLiteral(`pgmcp bench catalog of ${spec.tables} tables, made in ${ms} ms`)}`,
      );
    }
    await admin.query(
      `grant usage on schema s01 to ${FEW_ROLE};
       grant select on ${Array.from({ length: 10 }, (_, index) => `s01.${tableName(index + 1)}`).join(', ')} to ${FEW_ROLE}`,
    );
    const { rows } = await admin.query<{ stored: number; note: string | null }>(
      `select (select count(*)::int from pgmcp.resources) as stored,
              shobj_description(d.oid, 'pg_database') as note
         from pg_database d where d.datname = current_database()`,
    );
    // Stored resources list before the catalog: with none, page one is a catalog page.
    if (rows[0]?.stored !== 0)
      throw new Error(
        `${spec.name} must hold no stored resources (it holds ${rows[0]?.stored})`,
      );
    const note = /made in (\d+) ms/.exec(rows[0]?.note ?? '');
    return { url, buildMs: note === null ? undefined : Number(note[1]) };
  } finally {
    await admin.end();
  }
}

/** The demo dataset's own database, for the context sizes of docs/databases.md (made once). */
const DEMO_DATABASE = 'pgmcp_bench_demo';
/** The demo role that reads every table of schemas shop, support and finance. */
const DEMO_ROLE = 'engineering';

interface Size {
  readonly uri: string;
  readonly bytes: number;
  readonly tokens: number;
}

/** Bytes (and approximate tokens, bytes / 4) of one read's text contents, read as `role`. */
async function contextSize(
  source: CatalogSource,
  uri: string,
  role: string,
): Promise<Size> {
  const contents = await readCatalog([source], uri, {
    principal: { role, claims: {} },
    cancellation: { aborted: false },
    options: { maxEntries: 500 },
  });
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
  const url = await prepareDatabase(serverUrl, DEMO_DATABASE, { log });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    if (!(await seedLoaded(admin, 'demo'))) {
      await loadSeed(
        admin,
        { seedsDirectory: SEEDS_DIRECTORY, dataset: 'demo' },
        () => undefined,
      );
      await admin.query('analyze');
    }
  } finally {
    await admin.end();
  }
  return url;
}

/** What an agent's context takes in one database: the navigator, one schema read, one description. */
async function sizesOf(
  source: CatalogSource,
  role: string,
  at: { database: string; schema: string; table: string },
): Promise<Record<string, Size>> {
  return {
    navigator: await contextSize(source, databaseUri(at.database), role),
    schema: await contextSize(
      source,
      catalogUri({ database: at.database, schema: at.schema }),
      role,
    ),
    table: await contextSize(
      source,
      catalogUri({
        database: at.database,
        schema: at.schema,
        relation: at.table,
      }),
      role,
    ),
  };
}

/**
 * Each demo table's description (Markdown) with value hints (the default) and with them switched
 * off in the config (catalog.valueHints false), as the demo role that reads them all; the ratio is
 * the largest.
 */
async function hintsGrowth(db: DatabaseHandle): Promise<{
  tables: { uri: string; with: number; without: number }[];
  ratio: number;
}> {
  const withHints = await catalogSource(db);
  const withoutHints = await catalogSource(db, {
    scope: { include: null, exclude: [], valueHints: false },
  });
  const { rows } = await db.pool.query<{ schema: string; name: string }>(
    `select n.nspname as schema, c.relname as name from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('shop', 'support', 'finance') and c.relkind in ('r', 'p', 'v', 'm')
      order by 1, 2`,
  );
  const tables = [];
  for (const { schema, name } of rows) {
    const uri = catalogUri({ database: DEMO_DATABASE, schema, relation: name });
    tables.push({
      uri,
      with: (await contextSize(withHints, uri, DEMO_ROLE)).bytes,
      without: (await contextSize(withoutHints, uri, DEMO_ROLE)).bytes,
    });
  }
  const ratio = Math.max(
    ...tables.map((table) => table.with / Math.max(1, table.without)),
  );
  return { tables, ratio };
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

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** pgmcp serving one database over HTTP with bearer tokens, and how to measure it. */
interface Served {
  readonly db: DatabaseHandle;
  readonly source: CatalogSource;
  readonly url: string;
  /** Tokens of `role` (context.tokensPerRole of them). */
  callers(role: string): Promise<LoadCaller[]>;
  /** `rounds` one-caller loads; the median round's p50. */
  p50Of(
    workload: Workload,
    as: readonly LoadCaller[],
  ): Promise<{ p50: number; runs: Run[] }>;
}

/** Run `body` against pgmcp serving the database at `url`, then close both. */
async function withServer<TResult>(
  context: CatalogBenchContext,
  url: string,
  body: (served: Served) => Promise<TResult>,
): Promise<TResult> {
  const { logger } = context;
  const db = createDatabase({
    connectionString: url,
    poolSize: 10,
    statementTimeoutMs: 60_000,
    onError: (message, error) => logger.error(message, error),
  });
  const silent = { ...logger, info: () => undefined, warn: () => undefined };
  const source = await catalogSource(db);
  const app = createApp({
    sources: [source],
    db,
    cursorSecrets: ['bench-catalog-cursor-secret-0123456789'],
    pageSize: PAGE_SIZE,
    maxDirectoryEntries: 500,
    live: loadConfig({}, {}).live,
    logger: silent,
  });
  // As `pgmcp serve` runs it: the change feed keeps what the server may keep in memory current.
  const feed = await app.startChangePath();
  const server = await serve({
    dispatcher: app.dispatcher,
    issuer: context.issuer,
    db,
    logger: silent,
  });
  const served: Served = {
    db,
    source,
    url: server.url,
    callers: async (role) =>
      (await context.issuer.mint([role], context.tokensPerRole)).map(
        (caller) => ({ authorization: caller.authorization, rowStride: 1 }),
      ),
    p50Of: async (workload, as) => {
      const runs: Run[] = [];
      for (let round = 0; round < context.rounds; round += 1)
        runs.push(await context.load(server.url, 1, workload, as));
      return { p50: median(runs.map((run) => run.p50)), runs };
    },
  };
  try {
    return await body(served);
  } finally {
    await server.close();
    await feed.stop();
    await db.close();
  }
}

/** The whole catalog, page after page, through pgmcp and raw on the pool, alternated ABBA. */
async function walkFigures(
  served: Served,
  callers: readonly LoadCaller[],
  rounds: number,
): Promise<Record<string, unknown>> {
  await walkRaw(served.db);
  await walkThroughServer(served.url, 1, callers);
  const pairs: { raw: Walk; served: Walk }[] = [];
  const walks = await alternate(
    rounds,
    () => walkRaw(served.db),
    async () => (await walkThroughServer(served.url, 1, callers))[0],
  );
  for (const [raw, through] of walks) {
    if (through === undefined || through.items !== raw.items)
      throw new Error(
        `the walks disagree: ${through?.items} items through pgmcp, ${raw.items} raw`,
      );
    pairs.push({ raw, served: through });
  }
  const ratios = pairs.map((pair) => pair.raw.ms / pair.served.ms);
  const { items, pages } = pairs[0]?.served ?? { items: 0, pages: 0 };
  return { items, pages, pairs, ratio: median(ratios), ratios };
}

/** The navigator's read p50 and its size against its budget, as the role that sees every table. */
async function navigatorFigures(
  served: Served,
  database: string,
  callers: readonly LoadCaller[],
): Promise<Record<string, unknown>> {
  const read = await served.p50Of(
    { kind: 'read-uris', uris: [databaseUri(database)] },
    callers,
  );
  const { bytes } = await contextSize(
    served.source,
    databaseUri(database),
    ROLE,
  );
  return { ...read, bytes, budget: DEFAULT_NAVIGATOR_BYTES };
}

/** The 10,000-table catalog's figures (first page, walk, description, navigator, few tables). */
async function catalogFigures(
  served: Served,
  rounds: number,
): Promise<Record<string, unknown>> {
  const callers = await served.callers(ROLE);
  // Tables spread over every schema and through each one's names.
  const uris = Array.from({ length: 1000 }, (_, index) =>
    catalogUri({
      database: DATABASE,
      schema: schemaName(1 + (index % SCHEMAS)),
      relation: tableName(1 + ((index * 7) % TABLES_PER_SCHEMA)),
    }),
  );
  return {
    // The first resources/list page (no stored resources: the catalog from its first entry).
    catalog_first_page: await served.p50Of({ kind: 'list-first' }, callers),
    catalog_walk: await walkFigures(served, callers, rounds),
    // One table's description (Markdown), tables spread over the catalog.
    catalog_read: await served.p50Of({ kind: 'read-uris', uris }, callers),
    catalog_navigator: await navigatorFigures(served, DATABASE, callers),
    // Context: a role that sees 10 tables, so the page checks privileges on the whole catalog.
    catalog_few_first_page: await served.p50Of(
      { kind: 'list-first' },
      await served.callers(FEW_ROLE),
    ),
  };
}

/** The demo's orders table, whose description the sizes compare. */
const ORDERS_URI = catalogUri({
  database: DEMO_DATABASE,
  schema: 'shop',
  relation: 'orders',
});

export async function catalogBenchmarks(
  context: CatalogBenchContext,
): Promise<CatalogBenchOutput> {
  const log = (line: string) => context.logger.info(line);
  const catalog = await prepareCatalog(context.serverUrl, {
    name: DATABASE,
    tables: CORE_TABLES,
    log,
  });
  // Copied from the 10,000 before any connection to it is open (a template must have none).
  const large = await prepareCatalog(context.serverUrl, {
    name: DATABASE_100K,
    tables: 100_000,
    log,
    template: DATABASE,
  });
  const demoUrl = await prepareDemoDatabase(context.serverUrl, log);
  const results: Record<string, unknown> = {};
  const sizes: Record<string, unknown> = {};
  await withServer(context, catalog.url, async (served) => {
    Object.assign(results, await catalogFigures(served, context.rounds));
    sizes['catalog_10k'] = await sizesOf(served.source, ROLE, {
      database: DATABASE,
      schema: schemaName(1),
      table: tableName(5),
    });
  });
  await withServer(context, large.url, async (served) => {
    results['catalog_navigator_100k'] = {
      ...(await navigatorFigures(
        served,
        DATABASE_100K,
        await served.callers(ROLE),
      )),
      tables: 100_000,
      buildMs: large.buildMs,
    };
  });
  await withServer(context, demoUrl, async (served) => {
    sizes['demo'] = await sizesOf(served.source, DEMO_ROLE, {
      database: DEMO_DATABASE,
      schema: 'shop',
      table: 'orders',
    });
    results['catalog_hints_growth'] = await hintsGrowth(served.db);
    // One description with its value hints (from pg_stats) through pgmcp, as the demo role.
    results['catalog_hints_read'] = await served.p50Of(
      {
        kind: 'read-uris',
        uris: [ORDERS_URI],
      },
      await served.callers(DEMO_ROLE),
    );
  });
  // Bytes and approximate tokens an agent's context takes, demo database and the 10,000.
  results['catalog_context_sizes'] = sizes;
  return { results };
}
