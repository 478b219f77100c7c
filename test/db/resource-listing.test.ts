// pgmcp.resource_listing (migrations 0008, 0017, 0023): the trigger keeps it equal to what
// pgmcp.resources says after every kind of write and writes nothing for updates that keep a row's
// readers, a list entry is the resource's MCP Resource object as the row is when listed, a request
// role reads only its own readers' keys, and resources/list as a role returns what the table's
// policy allows, no more, in the same pages.
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

// Keys of the listing that differ from what pgmcp.resources says (one key per distinct reader of
// each row), in either direction.
const MISMATCHES = `
  with expected as (
    select distinct u.reader, r.id as resource_id
      from pgmcp.resources r cross join lateral unnest(r.readers) u(reader)),
  actual as (select reader, resource_id from pgmcp.resource_listing)
  select 'listing missing' as side, * from (select * from expected except select * from actual) m
  union all
  select 'listing extra', * from (select * from actual except select * from expected) x`;

async function mismatches(): Promise<unknown[]> {
  return (await sql.query<Record<string, unknown>>(MISMATCHES)).rows;
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

async function currentUser(): Promise<string> {
  const { rows } = await sql.query<{ user: string }>(
    'select current_user as user',
  );
  return rows[0]?.user ?? 'postgres';
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

describe('pgmcp.resource_listing trigger', () => {
  it('holds one key per distinct reader of every stored resource', async () => {
    expect(await mismatches()).toEqual([]);
    const { rows } = await sql.query<{ listing: string }>(
      `select count(*)::text as listing from pgmcp.resource_listing`,
    );
    expect(Number(rows[0]?.listing)).toBeGreaterThan(0);
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
    // Content only: no key changes.
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
    // A large description, and back.
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

  it('writes no key for an update that changes nothing', async () => {
    await insert('same', ['support', 'finance']);
    const versions = `select l.reader, l.xmin::text as version from pgmcp.resource_listing l
      join pgmcp.resources r on r.id = l.resource_id where r.uri = $1
      order by 1`;
    const before = (await sql.query(versions, [`${PREFIX}same`])).rows;
    await sql.query(
      `update pgmcp.resources set name = name, readers = readers where uri = $1`,
      [`${PREFIX}same`],
    );
    expect((await sql.query(versions, [`${PREFIX}same`])).rows).toEqual(before);
  });

  it('moves the keys of a row whose id changes', async () => {
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

  it('keeps a key left behind for a reader the row then gains', async () => {
    // As after writes that skipped the triggers: a key the table does not back.
    await insert('gained', ['support']);
    await sql.query(
      `insert into pgmcp.resource_listing (reader, resource_id)
       select 'finance', id from pgmcp.resources where uri = $1`,
      [`${PREFIX}gained`],
    );
    await sql.query(
      `update pgmcp.resources set readers = array['support', 'finance'] where uri = $1`,
      [`${PREFIX}gained`],
    );
    expect(await mismatches()).toEqual([]);
  });

  it('scans each transition table once per statement and reaches the entries by key, in a session that first wrote one row', async () => {
    // PL/pgSQL keeps a trigger statement's plan from its first call. Planned for one row, a join
    // of the two transition tables became a nested loop that rescanned one of them for each row
    // of the other, quadratic for a later bulk update (migrations 0009, 0010); planned for many,
    // a scan of a whole table that every later single-row write paid. auto_explain
    // reports each trigger statement's plan with the number of times each node ran.
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers)
       select $1 || n, 'bulk', 'x', array['support', 'finance'] from generate_series(1, 3000) n`,
      [`${PREFIX}bulk-`],
    );
    const session = new pg.Client({ connectionString: testDatabaseUrl() });
    await session.connect();
    const plans: string[] = [];
    session.on('notice', (notice) => {
      if (notice.message?.includes('Query Text:') === true)
        plans.push(notice.message);
    });
    try {
      await session.query(`load 'auto_explain'`);
      await session.query(`set auto_explain.log_min_duration = 0;
        set auto_explain.log_analyze = on; set auto_explain.log_timing = off;
        set auto_explain.log_nested_statements = on; set auto_explain.log_level = notice`);
      const bulk = [`${PREFIX}bulk-%`];
      await session.query(
        `update pgmcp.resources set priority = 0.5 where uri = $1`,
        [`${PREFIX}bulk-1`],
      );
      await session.query(
        `update pgmcp.resources set priority = 0.25 where uri like $1`,
        bulk,
      );
      await session.query(
        `update pgmcp.resources set id = default, readers = array['finance'] where uri like $1`,
        bulk,
      );
    } finally {
      await session.end();
    }
    // The capture trigger's statements read the transition tables (one per write here); the
    // listing trigger is row-level (migrations/0017, 0023) and must reach its keys by primary key.
    const triggerPlans = plans.filter((plan) => plan.includes('_rows'));
    expect(triggerPlans.length).toBeGreaterThanOrEqual(3);
    const entryScans = plans.filter((plan) =>
      /Seq Scan on resource_listing/.test(plan),
    );
    expect(entryScans).toEqual([]);
    expect(plans.some((plan) => plan.includes('pgmcp.resource_listing'))).toBe(
      true,
    );
    const rescans = triggerPlans.flatMap((plan) =>
      [
        ...plan.matchAll(
          /(Named Tuplestore Scan|Materialize)[^\n]*loops=(\d+)/g,
        ),
      ]
        .filter((match) => Number(match[2]) > 1)
        .map((match) => plan.slice(0, 600) + ' … ' + match[0]),
    );
    expect(rescans).toEqual([]);
    expect(await mismatches()).toEqual([]);
  });

  it('is rebuilt by pgmcp.rebuild_resource_listings() after writes that skipped the triggers (rolled back here)', async () => {
    await insert('skipped-update', ['support']);
    await insert('skipped-delete', ['finance']);
    await sql.query('begin');
    try {
      await sql.query(`set local session_replication_role = replica`);
      await sql.query(
        `update pgmcp.resources set title = 'changed unseen', readers = '{engineering}' where uri = $1`,
        [`${PREFIX}skipped-update`],
      );
      await sql.query(`delete from pgmcp.resources where uri = $1`, [
        `${PREFIX}skipped-delete`,
      ]);
      await insert('skipped-insert', ['support']);
      await sql.query(`set local session_replication_role = origin`);
      expect((await mismatches()).length).toBeGreaterThanOrEqual(4);
      await sql.query('select pgmcp.rebuild_resource_listings()');
      expect(await mismatches()).toEqual([]);
      // The resources policy is forced again afterwards.
      const { rows } = await sql.query<{ forced: boolean }>(
        `select relforcerowsecurity as forced from pg_class where oid = 'pgmcp.resources'::regclass`,
      );
      expect(rows[0]?.forced).toBe(true);
    } finally {
      await sql.query('rollback');
    }
  });

  it('is emptied with the table by TRUNCATE (rolled back here)', async () => {
    await sql.query('begin');
    try {
      await sql.query('truncate pgmcp.resources');
      const { rows } = await sql.query('select 1 from pgmcp.resource_listing');
      expect(rows).toEqual([]);
    } finally {
      await sql.query('rollback');
    }
  });

  it('shows a request role only the keys of its own member roles', async () => {
    await insert('entry-finance', ['finance']);
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

  it('writes nothing beside the table but the change log for an update that keeps readers and id', async () => {
    await insert('kept-readers', ['support', 'finance']);
    // This session's row writes per table of pgmcp, as counted so far (pending ones included).
    const writes = async (): Promise<Map<string, number>> => {
      const { rows } = await sql.query<{ relname: string; writes: string }>(
        `select relname, (n_tup_ins + n_tup_upd + n_tup_del)::text as writes
           from pg_stat_xact_user_tables where schemaname = 'pgmcp'`,
      );
      return new Map(rows.map((row) => [row.relname, Number(row.writes)]));
    };
    await sql.query('begin');
    try {
      const before = await writes();
      await sql.query(
        `update pgmcp.resources set text = 'longer text', priority = 0.75, title = 'new'
          where uri = $1`,
        [`${PREFIX}kept-readers`],
      );
      const after = await writes();
      const written = [...after]
        .filter(([name, count]) => count > (before.get(name) ?? 0))
        .map(([name]) => name)
        .sort();
      expect(written).toEqual(['changes', 'resources']);
    } finally {
      await sql.query('rollback');
    }
  });
});

describe('pgmcp.list_entry, as resources/list serves it', () => {
  interface Written {
    suffix: string;
    name: string;
    title?: string;
    description?: string;
    mimeType?: string;
    text: string;
    audience?: string[];
    priority?: number;
    updatedAt: string;
    lastModified: string;
  }
  // Escapes JSON needs, characters it must not escape, absent optional fields, float8 values
  // whose shortest exact form has 17 digits or an exponent, and timestamps with 0 to 6 fraction
  // digits in other time zones.
  const written: Written[] = [
    {
      suffix: 'escapes',
      name: 'quote " backslash \\ newline \n tab \t nul-free \u0001 \u001f end',
      title: 'ünï 😀 \u2028 / <script>',
      text: 'x',
      audience: [],
      priority: 0,
      updatedAt: '2026-01-02 03:04:05+00',
      lastModified: '2026-01-02T03:04:05.000Z',
    },
    {
      suffix: 'everything',
      name: 'every field',
      title: 'T',
      description: 'D',
      mimeType: 'text/plain; charset=utf-8',
      text: 'héllo',
      audience: ['user', 'assistant'],
      priority: 0.30000000000000004,
      updatedAt: '2026-01-02 03:04:05.678901+05:30',
      lastModified: '2026-01-01T21:34:05.678Z',
    },
    {
      suffix: 'tiny',
      name: 'tiny priority',
      text: '',
      audience: ['assistant'],
      priority: 1e-5,
      updatedAt: '1999-12-31 23:59:59.9999-08',
      lastModified: '2000-01-01T07:59:59.999Z',
    },
  ];

  it('is the MCP Resource object of the row, whatever the writing session prints floats as', async () => {
    // A writer that prints float8 rounded (extra_float_digits below 1) still gets exact entries.
    const writer = new pg.Client({ connectionString: testDatabaseUrl() });
    await writer.connect();
    try {
      await writer.query('set extra_float_digits = -3');
      for (const row of written)
        await writer.query(
          `insert into pgmcp.resources (uri, name, title, description, mime_type, text, audience,
             priority, updated_at)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [
            `${PREFIX}entry-${row.suffix}`,
            row.name,
            row.title ?? null,
            row.description ?? null,
            row.mimeType ?? null,
            row.text,
            row.audience ?? null,
            row.priority ?? null,
            row.updatedAt,
          ],
        );
    } finally {
      await writer.end();
    }
    const server = await startTestServer({
      principal: { role: await currentUser(), claims: {} },
      pageSize: 1000,
    });
    const { pages } = await walkList(server.url).finally(() => server.close());
    const listed = pages.flatMap(
      (page) => page['resources'] as Record<string, unknown>[],
    );
    for (const row of written) {
      const uri = `${PREFIX}entry-${row.suffix}`;
      const annotations: Record<string, unknown> = {};
      if (row.audience !== undefined) annotations['audience'] = row.audience;
      if (row.priority !== undefined) annotations['priority'] = row.priority;
      annotations['lastModified'] = row.lastModified;
      const expected: Record<string, unknown> = { uri, name: row.name };
      if (row.title !== undefined) expected['title'] = row.title;
      if (row.description !== undefined)
        expected['description'] = row.description;
      if (row.mimeType !== undefined) expected['mimeType'] = row.mimeType;
      expected['size'] = Buffer.byteLength(row.text);
      expected['annotations'] = annotations;
      // Same members in the same order, same values (the priority to the last bit).
      expect(JSON.stringify(listed.find((entry) => entry['uri'] === uri))).toBe(
        JSON.stringify(expected),
      );
    }
  });

  it('serves large entries whole', async () => {
    await insert('large-entry', ['support'], {
      description: `"quoted" ${'l'.repeat(3000)}`,
    });
    const { rows } = await sql.query<{ entry: string }>(
      `select pgmcp.list_entry(r.uri, r.name, r.title, r.description, r.mime_type, r.size,
                               r.audience, r.priority, r.updated_at) as entry
         from pgmcp.resources r where r.uri = $1`,
      [`${PREFIX}large-entry`],
    );
    const server = await startTestServer({
      principal: { role: 'support', claims: {} },
      pageSize: 1000,
    });
    try {
      const { pages } = await walkList(server.url);
      const listed = pages
        .flatMap((page) => page['resources'] as { uri: string }[])
        .find((entry) => entry.uri === `${PREFIX}large-entry`);
      expect(listed).toEqual(JSON.parse(rows[0]?.entry ?? 'null'));
      expect(listed).toMatchObject({
        description: `"quoted" ${'l'.repeat(3000)}`,
      });
    } finally {
      await server.close();
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
  }, 120_000); // thousands of small pages: more than the default 30 s on a loaded host

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

  it("lists no row for a key the table's policy does not back", async () => {
    // A key the table does not back (as after writes that skipped the triggers): the row is read
    // from pgmcp.resources as the role, and its policy drops it (migrations/0023).
    await insert('forged', ['finance']);
    await sql.query(
      `insert into pgmcp.resource_listing (reader, resource_id)
       select 'support', id from pgmcp.resources where uri = $1`,
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
  it("shows a text update's new size and lastModified in the row's place, and moves a row whose readers change between roles' lists", async () => {
    for (const n of [1, 2, 3]) await insert(`moving-${n}`, ['engineering']);
    const listAs = async (
      role: string,
    ): Promise<{ uri: string; size: number; annotations: object }[]> => {
      const server = await startTestServer({
        principal: { role, claims: {} },
        pageSize: 1000,
      });
      const { pages } = await walkList(server.url).finally(() =>
        server.close(),
      );
      return pages
        .flatMap(
          (page) =>
            page['resources'] as {
              uri: string;
              size: number;
              annotations: object;
            }[],
        )
        .filter((entry) => entry.uri.startsWith(`${PREFIX}moving-`));
    };
    const before = await listAs('engineering');
    await sql.query(
      `update pgmcp.resources set text = repeat('z', 42), updated_at = '2030-01-02 03:04:05+00'
        where uri = $1`,
      [`${PREFIX}moving-2`],
    );
    const after = await listAs('engineering');
    expect(after.map((entry) => entry.uri)).toEqual(
      before.map((entry) => entry.uri),
    );
    expect(after[1]).toMatchObject({ uri: `${PREFIX}moving-2`, size: 42 });
    expect(after[1]?.annotations).not.toEqual(before[1]?.annotations);
    await sql.query(
      `update pgmcp.resources set readers = '{finance}' where uri = $1`,
      [`${PREFIX}moving-2`],
    );
    expect((await listAs('engineering')).map((entry) => entry.uri)).toEqual([
      `${PREFIX}moving-1`,
      `${PREFIX}moving-3`,
    ]);
    expect((await listAs('finance')).map((entry) => entry.uri)).toEqual([
      `${PREFIX}moving-2`,
    ]);
  });
});
