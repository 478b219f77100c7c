// The navigator and schema reads on catalogs of 10,000 and 100,000 relations, in a database this
// file creates and drops: budgets hold and look-alike tables are grouped whatever the size.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const NAME = `${new URL(testDatabaseUrl()).pathname.slice(1)}_large`;
const BUDGET = 16 * 1024;
/** Words for distinct, digit-free table names: 25 × 20 = 500 per schema. */
const FIRST =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee'.split(
    ' ',
  );
const SECOND =
  'accounts bills carts deals entries fees grants holds items jobs keys logs marks notes offers plans quotes rates sales tasks'.split(
    ' ',
  );

let admin: pg.Client;
let url: string;
let server: TestServer;

/** DDL in transactions of 2,000 tables each (one transaction would run out of lock slots). */
async function createTables(body: string): Promise<void> {
  await admin.query(`do $$ declare s text; t text; begin ${body} end $$`);
}

async function read(uri: string) {
  const { result, error } = await call(server.url, 'resources/read', { uri });
  expect(error).toBeUndefined();
  return result?.['contents'] as {
    uri: string;
    mimeType: string;
    text: string;
  }[];
}

beforeAll(async () => {
  url = await recreateDatabase(testDatabaseUrl(), NAME);
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
  // 20 schemas of 500 distinct names; every 50th table references the one before it.
  await createTables(`
    for i in 1..20 loop
      s := format('s%s', lpad(i::text, 2, '0'));
      execute format('create schema %I', s);
      execute format('comment on schema %I is %L', s, 'Schema number ' || i);
      for j in 0..499 loop
        t := format('%s_%s', (array['${FIRST.join("','")}'])[1 + j / 20], (array['${SECOND.join("','")}'])[1 + j % 20]);
        if j % 50 = 1 then
          execute format('create table %I.%I (id int primary key, parent_id int references %I.%I (id))', s, t, s,
                         format('%s_%s', (array['${FIRST.join("','")}'])[1 + (j - 1) / 20], (array['${SECOND.join("','")}'])[1 + (j - 1) % 20]));
        elsif j % 50 = 0 then
          execute format('create table %I.%I (id int primary key, v int)', s, t);
        else
          execute format('create table %I.%I (id int, v int)', s, t);
        end if;
      end loop;
      commit;
    end loop;`);
  server = await startTestServer({ databaseUrl: url });
}, 600_000);

afterAll(async () => {
  await server.close();
  await admin.end();
  const base = new pg.Client({ connectionString: testDatabaseUrl() });
  await base.connect();
  await base.query(`drop database if exists ${NAME} with (force)`);
  await base.end();
});

describe('a catalog of 10,000 and then 100,000 tables', () => {
  it('reads its navigator under the budget, naming what it left out, in Markdown and JSON', async () => {
    const [content] = await read(`pg://${NAME}`);
    expect(content?.mimeType).toBe('text/markdown');
    const text = content?.text ?? '';
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(BUDGET);
    expect(text).toContain(
      'You can see 20 schemas holding 10000 tables and views.',
    );
    // Every schema fits; each shows first its tables with foreign keys (degree 2: referenced and referencing).
    for (let index = 1; index <= 20; index += 1)
      expect(text).toContain(
        `## s${String(index).padStart(2, '0')}: 500 tables and views`,
      );
    expect(text).toMatch(/alpha_bills \(table, key \(id\), 1 foreign key\)/);
    expect(text).toMatch(
      /Left out to stay under 16384 bytes: 0 schemas \(0 tables and views\) and \d+ tables and views of the schemas above\./,
    );
    const [json] = await read(`pg://${NAME}?format=json`);
    expect(Buffer.byteLength(json?.text ?? '')).toBeLessThanOrEqual(BUDGET);
    const facts = JSON.parse(json?.text ?? '{}') as {
      relationCount: number;
      schemas: { name: string; tables: { name: string }[] }[];
      leftOut: { relationsOfShownSchemas: number };
    };
    expect(facts.relationCount).toBe(10_000);
    expect(facts.schemas).toHaveLength(20);
    expect(facts.leftOut.relationsOfShownSchemas).toBe(
      10_000 -
        facts.schemas.reduce((sum, schema) => sum + schema.tables.length, 0),
    );
  });

  it('still reads its navigator under the budget with 90,000 look-alike tables more, grouped as one entry', async () => {
    await createTables(`
      create schema wide;
      for i in 1..90000 loop
        execute format('create table wide.%I (id int, v int)', 't_' || lpad(i::text, 6, '0'));
        if i % 2000 = 0 then commit; end if;
      end loop;`);
    const [content] = await read(`pg://${NAME}`);
    const text = content?.text ?? '';
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(BUDGET);
    expect(text).toContain(
      'You can see 21 schemas holding 100000 tables and views.',
    );
    expect(text).toContain(
      't_000001 and 89999 more like t_###### (# a digit) (table)',
    );
    // A read of the schema: one entry for the 90,000, its first table described.
    const schema = await read(`pg://${NAME}/wide`);
    expect(schema.map((content) => content.uri)).toEqual([
      `pg://${NAME}/wide`,
      `pg://${NAME}/wide/t_000001`,
    ]);
    expect(schema[0]?.text).toContain(
      't_000001 and 89999 more (table; stands for 90000 tables like t_######, all having the same columns (# a digit))',
    );
    expect(schema[0]?.text).not.toContain('More entries');
  }, 600_000);
});
