// search over the rows of collections with searchable columns: as the caller's role, so a row that
// row-level security or a missing GRANT hides never shows as a result, a snippet or in the count of
// how many more matched; each result's id is the row's resource URI, which fetch reads.
// Own database: this file runs DDL that other files must not see.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CollectionConfig } from '../../src/resources/index.js';
import { rowUri } from '../../src/resources/catalog-uri.js';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const ROLE_A = 'pgmcp_search_rows_a';
const ROLE_B = 'pgmcp_search_rows_b';
const ROLE_NONE = 'pgmcp_search_rows_none';
const DATABASE = 'pgmcp_search_rows_test';

const COLLECTIONS: CollectionConfig[] = [
  {
    database: undefined,
    schema: 'desk',
    table: 'cases',
    list: false,
    titleColumn: 'subject',
    searchable: ['subject', 'body'],
  },
];

let databaseUrl: string;
let sql: pg.Client;
const servers: TestServer[] = [];

interface Answer {
  results: {
    id: string;
    title: string;
    url: string;
    snippet: string;
    kind: string;
  }[];
  more: number;
}

async function serverAs(role: string, searchLimit = 20): Promise<TestServer> {
  const server = await startTestServer({
    databaseUrl,
    principal: { role, claims: {} },
    collections: COLLECTIONS,
    catalogScope: { include: null, exclude: ['public'] },
    tools: { searchLimit },
  });
  servers.push(server);
  return server;
}

async function search(server: TestServer, query: string) {
  const { result, error } = await call(server.url, 'tools/call', {
    name: 'search',
    arguments: { query },
  });
  expect(error).toBeUndefined();
  expect(result?.['isError']).toBeUndefined();
  return {
    structured: result?.['structuredContent'] as Answer,
    text: JSON.stringify(result),
  };
}

/** The URIs of the cases `owner` owns whose subject holds `word` (seed facts, as the superuser). */
async function casesOf(owner: string, word: string): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>(
    `select id::text from desk.cases where owner = $1 and subject ilike '%' || $2 || '%' order by id`,
    [owner, word],
  );
  return rows.map((row) =>
    rowUri(DATABASE, { schema: 'desk', table: 'cases' }, [row.id]),
  );
}

beforeAll(async () => {
  databaseUrl = await recreateDatabase(testDatabaseUrl(), DATABASE);
  await migrateDatabase(databaseUrl, async (admin) => {
    for (const role of [ROLE_A, ROLE_B, ROLE_NONE])
      await admin.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
    await admin.query(`
      create schema desk;
      create table desk.cases (id int primary key, owner text not null, subject text not null, body text);
      alter table desk.cases enable row level security;
      create policy cases_own on desk.cases for select using (owner = current_user);
      insert into desk.cases values
        (1, '${ROLE_A}', 'Zirconia crown cracked', 'The zirconia crown cracked after a week.'),
        (2, '${ROLE_A}', 'Zirconia shade wrong', 'Shade A2 ordered, A3 delivered.'),
        (3, '${ROLE_A}', 'Zirconia invoice', 'Billing question.'),
        (4, '${ROLE_B}', 'Zirconia bridge', 'Turquoise packaging damaged.'),
        (5, '${ROLE_B}', 'Zirconia implant', 'Turquoise label missing.'),
        (6, '${ROLE_B}', 'Zirconia veneer', 'Turquoise box.'),
        (7, '${ROLE_B}', 'Zirconia inlay', 'Turquoise courier late.'),
        (8, '${ROLE_B}', 'Zirconia onlay', 'Turquoise return.');
      grant usage on schema desk to ${ROLE_A}, ${ROLE_B}, ${ROLE_NONE};
      grant select on desk.cases to ${ROLE_A}, ${ROLE_B};
    `);
    // The index docs/tools.md tells operators to create.
    const { rows } = await admin.query<{ ddl: string }>(
      `select pgmcp.row_search_index('desk.cases', array['subject', 'body']) as ddl`,
    );
    await admin.query((rows[0] as { ddl: string }).ddl);
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
});

afterAll(async () => {
  for (const server of servers) await server.close();
  await sql?.end();
});

describe('search over searchable rows', () => {
  it('finds the rows the role can read, each with its row URI as id and a highlighted snippet', async () => {
    const a = await serverAs(ROLE_A);
    const b = await serverAs(ROLE_B);
    const forA = await search(a, 'zirconia');
    expect(forA.structured.results.map((found) => found.id).sort()).toEqual(
      await casesOf(ROLE_A, 'zirconia'),
    );
    for (const found of forA.structured.results) {
      expect(found.kind).toBe('row');
      expect(found.url).toBe(found.id);
      expect(found.snippet).toContain('**Zirconia**');
    }
    expect(forA.structured.more).toBe(0);
    const forB = await search(b, 'zirconia');
    expect(forB.structured.results.map((found) => found.id).sort()).toEqual(
      await casesOf(ROLE_B, 'zirconia'),
    );
  });

  it('never shows a hidden row, nor a snippet of it, nor counts it in how many more matched', async () => {
    const a = await serverAs(ROLE_A, 2);
    const found = await search(a, 'zirconia');
    // Three of A's rows match (five of B's too): two shown, one more.
    expect(found.structured.results).toHaveLength(2);
    expect(found.structured.more).toBe(1);
    const hidden = await search(a, 'turquoise');
    expect(hidden.structured).toEqual({ results: [], more: 0 });
    expect(hidden.text.toLowerCase()).not.toContain('turquoise packaging');
    // A role without SELECT on the table: nothing, and no error.
    const none = await serverAs(ROLE_NONE);
    expect((await search(none, 'zirconia')).structured).toEqual({
      results: [],
      more: 0,
    });
  });

  it('answers with ids fetch reads as the same role', async () => {
    const a = await serverAs(ROLE_A);
    const [first] = (await search(a, '"shade wrong"')).structured.results;
    expect(first?.id).toBe(
      rowUri(DATABASE, { schema: 'desk', table: 'cases' }, ['2']),
    );
    const { result } = await call(a.url, 'tools/call', {
      name: 'fetch',
      arguments: { id: first?.id },
    });
    expect(result?.['isError']).toBeUndefined();
    expect(JSON.stringify(result)).toContain('A3 delivered');
  });

  it('ranks rows together with stored resources the role can read', async () => {
    await sql.query(
      `insert into pgmcp.resources (uri, name, title, text, readers)
       values ('notes:///desk/zirconia-guide', 'zirconia-guide', 'Zirconia guide', 'zirconia care', '{${ROLE_A}}'),
              ('notes:///desk/zirconia-secret', 'zirconia-secret', 'Zirconia secret', 'zirconia', '{${ROLE_B}}')`,
    );
    const a = await serverAs(ROLE_A);
    const found = await search(a, 'zirconia');
    const ids = found.structured.results.map((result) => result.id);
    expect(ids).toContain('notes:///desk/zirconia-guide');
    expect(ids).not.toContain('notes:///desk/zirconia-secret');
    expect(ids.filter((id) => id.includes('/rows/'))).toHaveLength(3);
    expect(found.structured.more).toBe(0);
  });
});
