// Upgrading through migrations: a database migrated to 0007 (before resources/list moved to the
// per-reader listing, 0008-0010) and holding the demo's rows, migrated to the latest, answers
// list, templates, read and subscribe as each role exactly as a fresh database with the same rows.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CollectionConfig } from '../../src/resources/index.js';
import { loadSeed, runMigrations } from '../../src/db/index.js';
import {
  MIGRATIONS_DIRECTORY,
  SEEDS_DIRECTORY,
} from '../../src/config/index.js';
import {
  call,
  listenFresh,
  startTestServer,
  testDatabaseUrl,
  walkList,
  type TestServer,
} from '../setup/harness.js';
import { recreateDatabase } from '../setup/recreate-database.js';

/** The last migration the old database had: the one before the listing tables (0008). */
const EARLIER = '0007_catalog_last_modified.sql';
const ROLES = [null, 'support', 'engineering', 'finance', 'admin'] as const;
const COLLECTIONS: CollectionConfig[] = [
  ['shop', 'products', true, 'name'],
  ['shop', 'order_items', false, undefined],
  ['support', 'tickets', true, 'subject'],
  ['finance', 'invoices', false, undefined],
].map(([schema, table, list, titleColumn]) => ({
  database: undefined,
  schema: schema as string,
  table: table as string,
  list: list as boolean,
  titleColumn: titleColumn as string | undefined,
}));
const SAME_TIME = '2026-01-02T03:04:05.678Z';
/**
 * Demo seed files that need objects later than EARLIER (the tickets' search index:
 * pgmcp.search_document, 0014; prompts: 0015); neither database loads them.
 */
const LATER_SEEDS = ['65_search_index.sql', '70_prompts.sql'];

const databases = { upgraded: '', fresh: '' };
let folder: string;

/** Apply `directory`'s migrations to `url`, then run `more` on the same connection. */
async function migrate(
  url: string,
  directory: string,
  more?: (client: pg.Client) => Promise<void>,
): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await runMigrations(client, directory, () => undefined);
    await more?.(client);
  } finally {
    await client.end();
  }
}

/**
 * The demo's rows plus a resource too large for the listing's index (a stub entry), with every
 * timestamp the same in both databases (written before the listing triggers exist, in the old one).
 */
async function seed(client: pg.Client): Promise<void> {
  await loadSeed(
    client,
    { seedsDirectory: path.join(folder, 'seeds'), dataset: 'demo' },
    () => undefined,
  );
  await client.query(
    `insert into pgmcp.resources (uri, name, description, text, readers, audience, priority)
     values ('notes:///handbook/long', 'long', repeat('word ', 1000), 'x', array['support', 'finance'],
             array['user'], 0.25)`,
  );
  await client.query(`
    alter table pgmcp.resources disable trigger resources_touch_updated_at;
    update pgmcp.resources set updated_at = '${SAME_TIME}';
    alter table pgmcp.resources enable trigger resources_touch_updated_at;
    alter table pgmcp.resource_templates disable trigger resource_templates_touch_updated_at;
    update pgmcp.resource_templates set updated_at = '${SAME_TIME}';
    alter table pgmcp.resource_templates enable trigger resource_templates_touch_updated_at;`);
}

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-upgrade-'));
  for (const file of readdirSync(MIGRATIONS_DIRECTORY))
    if (file.endsWith('.sql') && file <= EARLIER)
      copyFileSync(
        path.join(MIGRATIONS_DIRECTORY, file),
        path.join(folder, file),
      );
  const demo = path.join(SEEDS_DIRECTORY, 'demo');
  mkdirSync(path.join(folder, 'seeds', 'demo'), { recursive: true });
  for (const file of readdirSync(demo))
    if (!LATER_SEEDS.includes(file))
      copyFileSync(
        path.join(demo, file),
        path.join(folder, 'seeds', 'demo', file),
      );
  databases.upgraded = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_upgrade_old',
  );
  databases.fresh = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_upgrade_fresh',
  );
  await migrate(databases.upgraded, folder, seed);
  await migrate(databases.upgraded, MIGRATIONS_DIRECTORY);
  await migrate(databases.fresh, MIGRATIONS_DIRECTORY, seed);
  // Schema-change times (catalog lastModified) differ by when each database was built, and row
  // estimates (table descriptions) by whether autovacuum has analyzed a table yet.
  for (const url of Object.values(databases))
    await migrate(url, MIGRATIONS_DIRECTORY, async (client) => {
      await client.query(
        `update pgmcp.catalog_changes set changed_at = '${SAME_TIME}'`,
      );
      await client.query('analyze');
    });
}, 120_000);

afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

/** An answer with the database's own name (the pg:// authority) and analyze times replaced, to compare across the two. */
function portable(answer: unknown, url: string): unknown {
  const name = new URL(url).pathname.slice(1);
  // When ANALYZE last ran differs by when each database was built: the descriptions say when.
  return JSON.parse(
    JSON.stringify(answer)
      .replaceAll(name, '{database}')
      .replace(/last analyzed [0-9T:-]+Z/g, 'last analyzed {time}')
      .replace(/(\\?"lastAnalyzed\\?":\\?")[0-9T:-]+Z/g, '$1{time}'),
  );
}

async function serve(url: string, role: string | null): Promise<TestServer> {
  return startTestServer({
    databaseUrl: url,
    principal: { role, claims: {} },
    catalogScope: { include: null, exclude: ['public'] },
    collections: COLLECTIONS,
    live: {},
  });
}

async function templates(url: string): Promise<unknown[]> {
  const entries: unknown[] = [];
  let cursor: string | undefined;
  do {
    const { result, error } = await call(
      url,
      'resources/templates/list',
      cursor === undefined ? {} : { cursor },
    );
    if (result === undefined) throw new Error(JSON.stringify(error));
    entries.push(...(result['resourceTemplates'] as unknown[]));
    cursor = result['nextCursor'] as string | undefined;
  } while (cursor !== undefined);
  // Templates list in insertion order: a later migration's templates follow the seeds' on an
  // upgraded database and precede them on a fresh one. The same set is what must hold.
  return entries.sort((a, b) =>
    JSON.stringify(a) < JSON.stringify(b) ? -1 : 1,
  );
}

/** Every resource the login lists, one in 25, plus ones no demo role reads and one that is missing. */
async function sampleUris(url: string): Promise<string[]> {
  const server = await serve(url, null);
  try {
    const { uris } = await walkList(server.url);
    return [
      ...uris.filter((_, index) => index % 25 === 0),
      'notes:///handbook/long',
      'notes:///nowhere/missing',
    ];
  } finally {
    await server.close();
  }
}

/** What `role` is told by each method on the database at `url`. */
async function answers(
  url: string,
  role: string | null,
  uris: string[],
): Promise<Record<string, unknown>> {
  const server = await serve(url, role);
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const { pages } = await walkList(server.url);
    const listed = pages.flatMap((page) => page['resources'] as unknown[]);
    const reads: unknown[] = [];
    for (const uri of uris) {
      const { result, error } = await call(server.url, 'resources/read', {
        uri,
      });
      reads.push(result ?? { code: error?.code, key: error?.data?.['code'] });
    }
    const stream = await listenFresh(server, {
      resourcesListChanged: true,
      resourceSubscriptions: uris,
    });
    const acknowledged = stream.messages[0]?.params?.['notifications'] as {
      resourceSubscriptions: string[];
    };
    const stored = acknowledged.resourceSubscriptions.filter((uri) =>
      /^(notes|file):/.test(uri),
    );
    await sql.query(
      `update pgmcp.resources set text = text || '.' where uri = any($1)`,
      [stored],
    );
    await stream.waitFor(() =>
      stored.every((uri) => stream.updated().includes(uri)),
    );
    stream.close();
    // Both databases take the same writes; their times must stay the same for the next role.
    await sql.query(
      'alter table pgmcp.resources disable trigger resources_touch_updated_at',
    );
    await sql.query(
      `update pgmcp.resources set updated_at = $2 where uri = any($1)`,
      [stored, SAME_TIME],
    );
    await sql.query(
      'alter table pgmcp.resources enable trigger resources_touch_updated_at',
    );
    return {
      listed,
      templates: await templates(server.url),
      reads,
      acknowledged,
      updated: [...new Set(stream.updated())].sort(),
    };
  } finally {
    await sql.end();
    await server.close();
  }
}

describe(`a database migrated from ${EARLIER} to the latest`, () => {
  it.each(ROLES)(
    'lists, reads and subscribes as %s exactly as a fresh database with the same rows',
    async (role) => {
      const uris = portable(
        await sampleUris(databases.fresh),
        databases.fresh,
      ) as string[];
      const on = (url: string) =>
        uris.map((uri) =>
          uri.replace('{database}', new URL(url).pathname.slice(1)),
        );
      const fresh = portable(
        await answers(databases.fresh, role, on(databases.fresh)),
        databases.fresh,
      ) as Record<string, unknown[]>;
      const upgraded = portable(
        await answers(databases.upgraded, role, on(databases.upgraded)),
        databases.upgraded,
      );
      expect(fresh['listed']?.length).toBeGreaterThan(0);
      for (const key of Object.keys(fresh))
        expect((upgraded as Record<string, unknown>)[key], key).toEqual(
          fresh[key],
        );
      expect(upgraded).toEqual(fresh);
    },
    120_000,
  );
});
