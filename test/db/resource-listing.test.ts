// pgmcp.resource_listing (migrations/0008, kept by 0009's trigger): the triggers keep it equal to
// what pgmcp.resources says after every kind of write, a request role reads only its own readers'
// rows from it, and resources/list as a role returns what the table's policy allows, no more, in
// the same pages.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTestServer,
  testDatabaseUrl,
  walkList,
  type TestServer,
} from '../setup/harness.js';

const PREFIX = 'notes:///listing-test/';
let sql: pg.Client;

// Rows of the listing that differ from the entries computed from pgmcp.resources (one per
// distinct reader; a stub when the copied columns exceed 2,000 bytes), in either direction.
const MISMATCHES = `
  with expected as (
    select distinct u.reader, r.id as resource_id, s.stub,
           case when not s.stub then r.uri end as uri, case when not s.stub then r.name end as name,
           case when not s.stub then r.title end as title,
           case when not s.stub then r.description end as description,
           case when not s.stub then r.mime_type end as mime_type, r.size,
           case when not s.stub then r.audience end as audience, r.priority, r.updated_at
      from pgmcp.resources r
      cross join lateral unnest(r.readers) u(reader)
      cross join lateral (select octet_length(r.uri) + octet_length(r.name)
        + coalesce(octet_length(r.title), 0) + coalesce(octet_length(r.description), 0)
        + coalesce(octet_length(r.mime_type), 0) + coalesce(octet_length(r.audience::text), 0)
        > 2000 as stub) s),
  actual as (
    select reader, resource_id, stub, uri, name, title, description, mime_type, size, audience,
           priority, updated_at from pgmcp.resource_listing)
  select 'missing' as side, * from (select * from expected except select * from actual) m
  union all
  select 'extra', * from (select * from actual except select * from expected) x`;

async function mismatches(): Promise<unknown[]> {
  return (await sql.query(MISMATCHES)).rows;
}

async function insert(
  suffix: string,
  readers: string[],
  extra: { description?: string } = {},
): Promise<void> {
  await sql.query(
    `insert into pgmcp.resources (uri, name, description, text, readers) values ($1, $2, $3, 'x', $4)`,
    [`${PREFIX}${suffix}`, suffix, extra.description ?? null, readers],
  );
}

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
});

afterAll(async () => {
  await sql.query(`delete from pgmcp.resources where uri like $1`, [
    `${PREFIX}%`,
  ]);
  await sql.end();
});

describe('pgmcp.resource_listing triggers', () => {
  it('holds one entry per distinct reader of every stored resource', async () => {
    expect(await mismatches()).toEqual([]);
    const { rows } = await sql.query<{ count: string }>(
      `select count(*)::text as count from pgmcp.resource_listing`,
    );
    expect(Number(rows[0]?.count)).toBeGreaterThan(0);
  });

  it('follows inserts, updates of any listed column or of readers, no-op updates and deletes', async () => {
    await insert('a', ['support', 'support', 'finance']);
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers)
       select $1 || n, 'multi', 'x', array['engineering'] from generate_series(1, 3) n`,
      [`${PREFIX}multi-`],
    );
    expect(await mismatches()).toEqual([]);
    await sql.query(
      `update pgmcp.resources set title = 'T', priority = 0.5 where uri = $1`,
      [`${PREFIX}a`],
    );
    expect(await mismatches()).toEqual([]);
    await sql.query(
      `update pgmcp.resources set readers = '{finance,engineering}' where uri = $1`,
      [`${PREFIX}a`],
    );
    expect(await mismatches()).toEqual([]);
    await sql.query(
      `update pgmcp.resources set name = name where uri like $1`,
      [`${PREFIX}multi-%`],
    );
    await sql.query(
      `update pgmcp.resources set readers = '{}' where uri = $1`,
      [`${PREFIX}multi-1`],
    );
    expect(await mismatches()).toEqual([]);
    await sql.query(`delete from pgmcp.resources where uri like $1`, [
      `${PREFIX}multi-%`,
    ]);
    expect(await mismatches()).toEqual([]);
    const { rows } = await sql.query<{ reader: string }>(
      `select reader from pgmcp.resource_listing l join pgmcp.resources r on r.id = l.resource_id
        where r.uri = $1 order by reader`,
      [`${PREFIX}a`],
    );
    expect(rows.map((row) => row.reader)).toEqual(['engineering', 'finance']);
  });

  it('follows updates of content only, of readers kept, gained and lost, and of stubs, in one statement', async () => {
    await insert('c-1', ['support', 'finance']);
    await insert('c-2', ['support']);
    await insert('c-3', ['finance', 'engineering']);
    const like = [`${PREFIX}c-%`];
    // Content only: size and updated_at are listed.
    await sql.query(
      `update pgmcp.resources set text = repeat('y', 300) where uri like $1`,
      like,
    );
    expect(await mismatches()).toEqual([]);
    // One statement: a row keeps its readers, one gains one, one loses one, one is reordered
    // with a duplicate.
    await sql.query(
      `update pgmcp.resources
          set readers = case uri when $2 then array['support', 'admin']
                                 when $3 then array['engineering', 'finance', 'engineering']
                                 else readers end,
              priority = 0.25
        where uri like $1`,
      [...like, `${PREFIX}c-2`, `${PREFIX}c-3`],
    );
    expect(await mismatches()).toEqual([]);
    await sql.query(
      `update pgmcp.resources set readers = array['finance'], title = 'fewer' where uri = $1`,
      [`${PREFIX}c-1`],
    );
    expect(await mismatches()).toEqual([]);
    // Into a stub and out of it.
    await sql.query(
      `update pgmcp.resources set description = repeat('d', 3000) where uri = $1`,
      [`${PREFIX}c-1`],
    );
    expect(await mismatches()).toEqual([]);
    await sql.query(
      `update pgmcp.resources set description = 'short', readers = array['support'] where uri = $1`,
      [`${PREFIX}c-1`],
    );
    expect(await mismatches()).toEqual([]);
  });

  it('writes no entry for an update that changes nothing', async () => {
    await insert('same', ['support', 'finance']);
    const versions = `select l.reader, l.xmin::text as version from pgmcp.resource_listing l
      join pgmcp.resources r on r.id = l.resource_id where r.uri = $1 order by l.reader`;
    const before = (await sql.query(versions, [`${PREFIX}same`])).rows;
    await sql.query(
      `update pgmcp.resources set name = name, readers = readers where uri = $1`,
      [`${PREFIX}same`],
    );
    expect((await sql.query(versions, [`${PREFIX}same`])).rows).toEqual(before);
  });

  it('moves the entries of a row whose id changes', async () => {
    await insert('moved', ['support', 'finance']);
    await sql.query(`update pgmcp.resources set id = default where uri = $1`, [
      `${PREFIX}moved`,
    ]);
    expect(await mismatches()).toEqual([]);
    await sql.query(
      `update pgmcp.resources set id = default, readers = array['engineering'] where uri = $1`,
      [`${PREFIX}moved`],
    );
    expect(await mismatches()).toEqual([]);
  });

  it('overwrites an entry left behind for a reader the row then gains', async () => {
    // As after writes that skipped the triggers: an entry the table does not back.
    await insert('gained', ['support']);
    await sql.query(
      `insert into pgmcp.resource_listing (reader, resource_id, stub, updated_at)
       select 'finance', id, true, now() from pgmcp.resources where uri = $1`,
      [`${PREFIX}gained`],
    );
    await sql.query(
      `update pgmcp.resources set readers = array['support', 'finance'] where uri = $1`,
      [`${PREFIX}gained`],
    );
    expect(await mismatches()).toEqual([]);
  });

  it('updates many rows in linear time in a session that first updated one', async () => {
    // PL/pgSQL keeps a trigger statement's plan from its first call: planned for one row, a
    // nested loop over the transition tables made a later bulk update quadratic (migration 0009).
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers)
       select $1 || n, 'bulk', 'x', array['support', 'finance'] from generate_series(1, 3000) n`,
      [`${PREFIX}bulk-`],
    );
    const session = new pg.Client({ connectionString: testDatabaseUrl() });
    await session.connect();
    try {
      await session.query(
        `update pgmcp.resources set priority = 0.5 where uri = $1`,
        [`${PREFIX}bulk-1`],
      );
      const started = performance.now();
      await session.query(
        `update pgmcp.resources set priority = 0.25 where uri like $1`,
        [`${PREFIX}bulk-%`],
      );
      // About 0.2 s here; the quadratic plans took over 5 s.
      expect(performance.now() - started).toBeLessThan(2000);
    } finally {
      await session.end();
    }
    expect(await mismatches()).toEqual([]);
  });

  it('keeps a stub, without the large columns, for a row too large to copy', async () => {
    await insert('large', ['support'], { description: 'd'.repeat(5000) });
    const { rows } = await sql.query<{
      stub: boolean;
      uri: string | null;
      description: string | null;
    }>(
      `select l.stub, l.uri, l.description from pgmcp.resource_listing l
         join pgmcp.resources r on r.id = l.resource_id where r.uri = $1`,
      [`${PREFIX}large`],
    );
    expect(rows).toEqual([{ stub: true, uri: null, description: null }]);
    expect(await mismatches()).toEqual([]);
  });

  it('is emptied with the table by TRUNCATE (rolled back here)', async () => {
    await sql.query('begin');
    try {
      await sql.query('truncate pgmcp.resources');
      const { rows } = await sql.query(
        'select 1 from pgmcp.resource_listing limit 1',
      );
      expect(rows).toEqual([]);
    } finally {
      await sql.query('rollback');
    }
  });

  it('shows a request role only the entries of its own member roles', async () => {
    await sql.query('begin');
    try {
      await sql.query(`set local role support`);
      const { rows } = await sql.query<{ reader: string }>(
        `select distinct reader from pgmcp.resource_listing order by reader`,
      );
      expect(rows.map((row) => row.reader)).toEqual(['public', 'support']);
      await sql.query(`reset role`);
      const writable = await sql.query<{ allowed: boolean }>(
        `select has_table_privilege('support', 'pgmcp.resource_listing', 'INSERT, UPDATE, DELETE') as allowed`,
      );
      expect(writable.rows[0]?.allowed).toBe(false);
    } finally {
      await sql.query('rollback');
    }
  });
});

describe('resources/list as a request role', () => {
  const servers: TestServer[] = [];
  afterAll(async () => {
    for (const server of servers) await server.close();
  });

  it('walks small pages across readers shared by several member roles with no repeats or gaps', async () => {
    await insert('shared-1', ['support', 'engineering']);
    await insert('shared-2', ['engineering', 'finance', 'public']);
    await insert('shared-3', ['finance']);
    await insert('large-admin', ['admin'], { description: 'e'.repeat(5000) });
    const server = await startTestServer({
      principal: { role: 'admin', claims: {} },
      pageSize: 3,
    });
    servers.push(server);
    const expected = await sql.query<{ uri: string }>(
      `select uri from pgmcp.resources
        where readers && array['admin', 'support', 'engineering', 'finance', 'public']
        order by id`,
    );
    const { uris } = await walkList(server.url);
    expect(uris.filter((uri) => !uri.startsWith('pg://'))).toEqual(
      expected.rows.map((row) => row.uri),
    );
    expect(uris).toContain(`${PREFIX}large-admin`);
  });

  it('returns every row, readers or not, to a role that RLS does not apply to', async () => {
    await insert('no-readers', []);
    const { rows } = await sql.query<{ user: string }>(
      'select current_user as user',
    );
    const server = await startTestServer({
      principal: { role: rows[0]?.user ?? 'postgres', claims: {} },
    });
    servers.push(server);
    const expected = await sql.query<{ uri: string }>(
      'select uri from pgmcp.resources order by id',
    );
    const { uris } = await walkList(server.url);
    expect(uris.filter((uri) => !uri.startsWith('pg://'))).toEqual(
      expected.rows.map((row) => row.uri),
    );
    expect(uris).toContain(`${PREFIX}no-readers`);
  });

  it('reads stub entries from pgmcp.resources under its policy', async () => {
    // A stub entry the table does not back (as after writes that skipped the triggers): the row
    // is read from pgmcp.resources as the role, and its policy drops it. (Full entries are served
    // from the listing, which only its owner's triggers write: migrations/0008.)
    await insert('forged', ['finance']);
    await sql.query(
      `insert into pgmcp.resource_listing (reader, resource_id, stub, updated_at)
       select 'support', id, true, now() from pgmcp.resources where uri = $1`,
      [`${PREFIX}forged`],
    );
    try {
      const server = await startTestServer({
        principal: { role: 'support', claims: {} },
      });
      servers.push(server);
      const { uris } = await walkList(server.url);
      expect(uris).not.toContain(`${PREFIX}forged`);
    } finally {
      await sql.query(
        `delete from pgmcp.resource_listing where reader = 'support'
           and resource_id = (select id from pgmcp.resources where uri = $1)`,
        [`${PREFIX}forged`],
      );
    }
  });
});
