// changes_since shows no key of a row the caller could not see (issue 32 point 10): a deleted row
// of a table under row-level security is not reported, while a deletion in a table without it is.
// Own database: it exposes its own tables.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowUri } from '../../src/resources/catalog-uri.js';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const DATABASE = 'pgmcp_hidden_changes_test';
const OWNER = 'pgmcp_hidden_owner';
const OTHER = 'pgmcp_hidden_other';
let sql: pg.Client;
let server: TestServer;

beforeAll(async () => {
  const databaseUrl = await recreateDatabase(testDatabaseUrl(), DATABASE);
  await migrateDatabase(databaseUrl, async (admin) => {
    for (const role of [OWNER, OTHER])
      await admin.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
    await admin.query(`
      create schema hid;
      create table hid.tickets (id int primary key, owner text not null);
      alter table hid.tickets enable row level security;
      create policy tickets_own on hid.tickets for select using (owner = current_user);
      create table hid.notes (id int primary key);
      grant usage on schema hid to ${OWNER}, ${OTHER};
      grant select on hid.tickets, hid.notes to ${OWNER}, ${OTHER};
      select pgmcp.expose_table('hid.tickets');
      select pgmcp.expose_table('hid.notes');
    `);
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  server = await startTestServer({
    databaseUrl,
    principal: { role: OTHER, claims: {} },
    collections: ['tickets', 'notes'].map((table) => ({
      database: undefined,
      schema: 'hid',
      table,
      list: true,
      titleColumn: undefined,
    })),
  });
});

afterAll(async () => {
  await server?.close();
  await sql?.end();
});

interface Pulled {
  changes: { uri: string; kind: string }[];
  next: string;
  more: boolean;
}

async function pull(uri: string): Promise<Pulled> {
  const { result, error } = await call(server.url, 'resources/read', { uri });
  expect(error).toBeUndefined();
  const [content] = result?.['contents'] as { text: string }[];
  return JSON.parse(content?.text ?? '{}') as Pulled;
}

describe('changes_since', () => {
  it("does not show the key of a deleted row the caller's row-level security hid", async () => {
    const { next } = await pull(`pg://${DATABASE}?changes_since=`);
    await sql.query(`insert into hid.tickets values (5, '${OWNER}');
      insert into hid.notes values (7)`);
    await sql.query('delete from hid.tickets where id = 5');
    await sql.query('delete from hid.notes where id = 7');
    const changes: Pulled['changes'] = [];
    let page = await pull(next);
    changes.push(...page.changes);
    while (page.more) {
      page = await pull(page.next);
      changes.push(...page.changes);
    }
    expect(changes).toContainEqual({
      uri: rowUri(DATABASE, { schema: 'hid', table: 'notes' }, ['7']),
      kind: 'deleted',
    });
    expect(changes.map((change) => change.uri)).not.toContain(
      rowUri(DATABASE, { schema: 'hid', table: 'tickets' }, ['5']),
    );
  });
});
