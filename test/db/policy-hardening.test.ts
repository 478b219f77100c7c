// Migration 0025: the owner's policy holds only for the owner itself, member_roles() ignores the
// caller's search_path, and the readers' keys follow readers however an UPDATE changed them.
// Migration 0028: pgmcp's SECURITY DEFINER functions search the session's temporary schema last.
// Everything happens in one transaction that is rolled back, each test in its own savepoint.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  afterAll,
  afterEach,
  beforeAll,
  beforeEach,
  describe,
  expect,
  it,
} from 'vitest';
import { testDatabaseUrl } from '../setup/harness.js';

let sql: pg.Client;
const prefix = `pgmcp_ph_${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query('begin');
  await sql.query(`create role ${prefix}_reader nologin`);
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers) values
       ($1, 'mine', 'x', array[$3]), ($2, 'theirs', 'x', array['${prefix}_nobody'])`,
    [`test:///${prefix}/mine`, `test:///${prefix}/theirs`, `${prefix}_reader`],
  );
});

// Each test undoes its own grants, functions and triggers.
beforeEach(async () => {
  await sql.query('savepoint each_test');
});

afterEach(async () => {
  await sql.query('rollback to savepoint each_test');
});

afterAll(async () => {
  await sql.query('rollback');
  await sql.end();
});

/** The test rows `role` sees, by name. */
async function visibleTo(role: string): Promise<string[]> {
  await sql.query(`set local role ${role}`);
  try {
    const { rows } = await sql.query<{ name: string }>(
      `select name from pgmcp.resources where uri like $1 order by name`,
      [`test:///${prefix}/%`],
    );
    return rows.map((row) => row.name);
  } finally {
    await sql.query('reset role');
  }
}

describe('migration 0025', () => {
  it("gives a role granted the migrating role none of the owner's rows", async () => {
    // The policy names the role that ran the migrations; the test database's is the current one.
    const { rows } = await sql.query<{ owner: string }>(
      `select tableowner as owner from pg_tables where schemaname = 'pgmcp' and tablename = 'resources'`,
    );
    await sql.query(
      `grant ${pg.escapeIdentifier(rows[0]?.owner ?? '')} to ${prefix}_reader`,
    );
    expect(await visibleTo(`${prefix}_reader`)).toEqual(['mine']);
  });

  it('keeps member_roles() to pg_catalog whatever search_path the caller sets', async () => {
    await sql.query(`create schema ${prefix}_evil`);
    await sql.query(
      `create function ${prefix}_evil.pg_get_userbyid(oid) returns name language sql
         as $$ select '${prefix}_nobody'::name $$`,
    );
    await sql.query(`grant usage on schema ${prefix}_evil to public`);
    await sql.query(`set local search_path = ${prefix}_evil, pg_catalog`);
    try {
      expect(await visibleTo(`${prefix}_reader`)).toEqual(['mine']);
    } finally {
      await sql.query('reset search_path');
    }
  });

  it("moves a row's keys when a BEFORE trigger changes its readers", async () => {
    await sql.query(`create function ${prefix}_readers() returns trigger language plpgsql as $$
      begin new.readers := array[new.title]; return new; end $$`);
    await sql.query(`create trigger ${prefix}_readers before update on pgmcp.resources
      for each row when (new.uri like 'test:///${prefix}/%') execute function ${prefix}_readers()`);
    // The statement names title only; the trigger makes the reader.
    await sql.query(`update pgmcp.resources set title = $1 where uri = $2`, [
      `${prefix}_reader`,
      `test:///${prefix}/theirs`,
    ]);
    const { rows } = await sql.query<{ reader: string }>(
      `select l.reader from pgmcp.resource_listing l join pgmcp.resources r on r.id = l.resource_id
        where r.uri = $1`,
      [`test:///${prefix}/theirs`],
    );
    expect(rows.map((row) => row.reader)).toEqual([`${prefix}_reader`]);
  });
});

describe('migration 0028', () => {
  it("runs no writer's temporary type inside the capture trigger", async () => {
    // A temporary domain named text whose CHECK calls the writer's own function: with pg_temp
    // searched first, the capture trigger's ::text cast ran it as the trigger function's owner.
    await sql.query(`create function pg_temp.${prefix}_evil(value text) returns boolean
      language plpgsql as $$ begin raise exception 'ran as %', current_user; end $$`);
    await sql.query(
      `create domain pg_temp.text as pg_catalog.text check (pg_temp.${prefix}_evil(value))`,
    );
    await sql.query(
      `update pgmcp.resources set priority = 0.25 where uri = $1`,
      [`test:///${prefix}/mine`],
    );
    const { rows } = await sql.query<{ uri: string }>(
      `select uri from pgmcp.changes where uri = $1 and kind = 'updated'`,
      [`test:///${prefix}/mine`],
    );
    expect(rows).toHaveLength(1);
  });

  it('gives every SECURITY DEFINER function of pgmcp a search_path that ends with pg_temp', async () => {
    const { rows } = await sql.query<{ fn: string; path: string | null }>(
      `select p.oid::regprocedure::text as fn,
              (select substr(s, length('search_path=') + 1) from unnest(p.proconfig) s
                where s like 'search_path=%') as path
         from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'pgmcp' and p.prosecdef`,
    );
    expect(rows.length).toBeGreaterThan(10);
    expect(
      rows.filter((row) => !/(^|, )pg_temp$/.test(row.path ?? '')),
    ).toEqual([]);
  });
});
