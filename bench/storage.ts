// What pgmcp keeps beside pgmcp.resources, and what keeping it costs writers (docs/benchmarks.md
// "Method"): the sizes of pgmcp's own relations against the table's with its indexes, and
// single-row INSERT/UPDATE throughput from one pgbench writer with every trigger on
// pgmcp.resources enabled against none, alternated. Run by bench/run.ts on the 1M-row bench
// database (`BENCH_ONLY=storage`, also `npm run bench:writes`).
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type pg from 'pg';
import { alternate } from './alternate.js';

const run = promisify(execFile);

/** One relation pgmcp keeps, and its size with its indexes and TOAST. */
export interface RelationSize {
  readonly name: string;
  readonly bytes: number;
}

export interface StorageFigures {
  /** pgmcp.resources: heap, TOAST and the indexes its own columns need. */
  readonly table: RelationSize;
  /** Everything else pgmcp keeps: its other tables, and the search index on the table (search_document). */
  readonly beside: readonly RelationSize[];
  /** sum(beside) / table. */
  readonly ratio: number;
  /** Stored resources and readers' keys, for the docs' extrapolation. */
  readonly rows: number;
  readonly readerKeys: number;
}

/** One workload's throughput with every trigger and with none, per round. */
export interface WriteFigures {
  readonly with: number[];
  readonly without: number[];
  /** Median of the per-round with / without ratios. */
  readonly ratio: number;
  readonly rounds: number[];
}

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** Sizes, as PostgreSQL reports them (pg_total_relation_size): deterministic for a given seed. */
export async function storageFigures(
  admin: pg.Client,
): Promise<StorageFigures> {
  const { rows } = await admin.query<{ name: string; bytes: string }>(
    `select c.oid::regclass::text as name,
            (case when c.oid = 'pgmcp.resources'::regclass
                  then pg_total_relation_size(c.oid) - coalesce(s.bytes, 0)
                  else pg_total_relation_size(c.oid) end)::text as bytes
       from pg_class c
       left join lateral (
         select sum(pg_relation_size(i.indexrelid)) as bytes
           from pg_index i
          where i.indrelid = c.oid
            and pg_get_indexdef(i.indexrelid) like '%search_document%') s
         on true
      where c.relnamespace = 'pgmcp'::regnamespace and c.relkind in ('r', 'p')
      union all
     select 'pgmcp.resources search indexes', coalesce(sum(pg_relation_size(i.indexrelid)), 0)::text
       from pg_index i
      where i.indrelid = 'pgmcp.resources'::regclass
        and pg_get_indexdef(i.indexrelid) like '%search_document%'`,
  );
  const sizes = rows.map((row) => ({
    name: row.name,
    bytes: Number(row.bytes),
  }));
  const table = sizes.find((size) => size.name === 'pgmcp.resources') ?? {
    name: 'pgmcp.resources',
    bytes: 0,
  };
  const beside = sizes
    .filter((size) => size !== table && size.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  const counts = await admin.query<{ rows: string; keys: string }>(
    `select (select count(*) from pgmcp.resources)::text as rows,
            (select count(*) from pgmcp.resource_listing)::text as keys`,
  );
  const total = beside.reduce((sum, size) => sum + size.bytes, 0);
  return {
    table,
    beside,
    ratio: total / Math.max(1, table.bytes),
    rows: Number(counts.rows[0]?.rows ?? 0),
    readerKeys: Number(counts.rows[0]?.keys ?? 0),
  };
}

/** The single-row statements, as pgbench scripts; `maxId` bounds the rows they update. */
function workloads(maxId: number): Record<string, string> {
  return {
    // The readers update toggles a role that no one is granted, so the bench roles keep the rows
    // they read.
    priority: `\\set id random(1, ${maxId})\nupdate pgmcp.resources set priority = random() where id = :id;\n`,
    text: `\\set id random(1, ${maxId})\nupdate pgmcp.resources set text = md5(random()::text) where id = :id;\n`,
    readers:
      `\\set id random(1, ${maxId})\nupdate pgmcp.resources set readers = case when 'bench_writes' = any (readers) ` +
      `then array_remove(readers, 'bench_writes') else readers || 'bench_writes'::text end where id = :id;\n`,
    insert:
      `insert into pgmcp.resources (uri, name, text, readers) ` +
      `values ('bench:///writes/' || gen_random_uuid(), 'write', 'x', '{bench_all}');\n`,
  };
}

/** pgbench's transactions per second for one script, one client, `seconds` long. */
async function tps(
  url: string,
  script: string,
  seconds: number,
): Promise<number> {
  const { stdout } = await run('pgbench', [
    '-n',
    '-T',
    String(seconds),
    '-f',
    script,
    url,
  ]);
  const match = /^tps = ([\d.]+)/m.exec(stdout);
  if (match === null) throw new Error(`pgbench printed no tps: ${stdout}`);
  return Number(match[1]);
}

/** What the write figures need: the bench database, its admin client, rounds and their length. */
export interface WriteFigureOptions {
  readonly url: string;
  readonly admin: pg.Client;
  readonly rounds: number;
  readonly seconds: number;
  readonly log: (line: string) => void;
}

/**
 * Each workload `rounds` times: every user trigger on pgmcp.resources disabled and enabled, in
 * ABBA order (pgmcp's triggers: updated_at, change capture, the readers' keys, any later ones).
 * Afterwards the triggers are enabled, the inserted rows deleted and the keys rebuilt
 * (pgmcp.rebuild_resource_listings()), whatever happened.
 */
export async function writeFigures(
  options: WriteFigureOptions,
): Promise<Record<string, WriteFigures>> {
  const { admin } = options;
  const { rows } = await admin.query<{ max: string }>(
    `select max(id)::text as max from pgmcp.resources where uri like 'bench:///r/%'`,
  );
  const directory = await mkdtemp(path.join(os.tmpdir(), 'pgmcp-writes-'));
  const results: Record<string, WriteFigures> = {};
  try {
    for (const [name, script] of Object.entries(
      workloads(Number(rows[0]?.max ?? 1)),
    )) {
      const file = path.join(directory, `${name}.sql`);
      await writeFile(file, script);
      const tpsWith = async (triggers: boolean): Promise<number> => {
        await admin.query(
          `alter table pgmcp.resources ${triggers ? 'enable' : 'disable'} trigger user`,
        );
        return tps(options.url, file, options.seconds);
      };
      const pairs = await alternate(
        options.rounds,
        () => tpsWith(false),
        () => tpsWith(true),
      );
      const without = pairs.map(([none]) => none);
      const withTriggers = pairs.map(([, all]) => all);
      const ratios = pairs.map(([none, all]) => all / none);
      results[name] = {
        with: withTriggers,
        without,
        ratio: median(ratios),
        rounds: ratios,
      };
      options.log(`writes ${name}: ${median(ratios).toFixed(2)}`);
    }
  } finally {
    await admin.query('alter table pgmcp.resources enable trigger user');
    options.log(
      "rebuilding the readers' keys the runs without triggers left stale",
    );
    await admin.query(
      `delete from pgmcp.resources where uri like 'bench:///writes/%'`,
    );
    await admin.query('select pgmcp.rebuild_resource_listings()');
    await admin.query(
      'vacuum (analyze) pgmcp.resources, pgmcp.resource_listing',
    );
    await rm(directory, { recursive: true, force: true });
  }
  return results;
}

/**
 * What the search index (migration 0014's `resources_search`, GIN over pgmcp.search_document)
 * costs single-row writers, measured like the triggers' cost: the `text` update and the insert,
 * from one pgbench writer, with the index against without. Rebuilding a GIN index over 1,000,000
 * documents takes a while, so the index is dropped once for every round without it, then created
 * again (as it was) for every round with it. Afterwards the index exists, the inserted rows are
 * deleted and the table and the readers' keys vacuumed, whatever happened.
 */
export async function searchIndexWriteFigures(
  options: WriteFigureOptions,
): Promise<Record<string, WriteFigures>> {
  const { admin } = options;
  const { rows } = await admin.query<{ max: string; ddl: string }>(
    `select (select max(id)::text from pgmcp.resources where uri like 'bench:///r/%') as max,
            pg_get_indexdef('pgmcp.resources_search'::regclass) as ddl`,
  );
  const ddl = rows[0]?.ddl ?? '';
  const all = workloads(Number(rows[0]?.max ?? 1));
  const scripts = { text: all['text'] ?? '', insert: all['insert'] ?? '' };
  const directory = await mkdtemp(path.join(os.tmpdir(), 'pgmcp-search-'));
  const tpsOf = async (name: string, script: string): Promise<number> => {
    const file = path.join(directory, `${name}.sql`);
    await writeFile(file, script);
    return tps(options.url, file, options.seconds);
  };
  const without: Record<string, number[]> = { text: [], insert: [] };
  const withIndex: Record<string, number[]> = { text: [], insert: [] };
  try {
    await admin.query('drop index pgmcp.resources_search');
    for (let round = 0; round < options.rounds; round += 1)
      for (const [name, script] of Object.entries(scripts))
        without[name]?.push(await tpsOf(name, script));
    options.log('creating the search index again');
    await admin.query(ddl);
    for (let round = 0; round < options.rounds; round += 1)
      for (const [name, script] of Object.entries(scripts))
        withIndex[name]?.push(await tpsOf(name, script));
  } finally {
    await admin.query(
      ddl.replace(/^CREATE INDEX/, 'CREATE INDEX IF NOT EXISTS'),
    );
    await admin.query(
      `delete from pgmcp.resources where uri like 'bench:///writes/%'`,
    );
    // The readers' keys too: the inserts' keys, deleted with their rows, would otherwise stay as
    // dead entries at the end of each reader's range, which the last list page walks through
    // (autovacuum would clear them; the bench database runs without it).
    await admin.query(
      'vacuum (analyze) pgmcp.resources, pgmcp.resource_listing',
    );
    await rm(directory, { recursive: true, force: true });
  }
  return Object.fromEntries(
    Object.keys(scripts).map((name) => {
      const ratios = (withIndex[name] ?? []).map(
        (value, index) => value / (without[name]?.[index] ?? value),
      );
      return [
        name,
        {
          with: withIndex[name] ?? [],
          without: without[name] ?? [],
          ratio: median(ratios),
          rounds: ratios,
        },
      ];
    }),
  );
}
