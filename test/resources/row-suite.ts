// Row collections: rows of configured tables as pg://{database}/{schema}/{table}/rows/{key}, read as
// the caller's role (GRANTs, column privileges, RLS), listed after the catalog, completed, and
// live: row changes of exposed tables and schema changes reach the subscribers allowed to see them.
// Run once per change source (rows.test.ts: capture triggers; rows-wal.test.ts: the WAL, on a
// private logical cluster). Own database: it runs DDL and writes that other files must not see.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CollectionConfig } from '../../src/resources/index.js';
import { rowUri } from '../../src/resources/catalog-uri.js';
import {
  call,
  listenFresh,
  startTestServer,
  testDatabaseUrl,
  walkList,
  type ListenStream,
  type TestServer,
  until,
} from '../setup/harness.js';
import {
  createDatabase,
  startWalCapture,
  type ChangeSourceKind,
  type DatabaseHandle,
  type WalCapture,
} from '../../src/db/index.js';
import {
  startLogicalCluster,
  type LogicalCluster,
} from '../setup/logical-cluster.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const ROLE_A = 'pgmcp_rows_a';
const ROLE_B = 'pgmcp_rows_b';
const ODD_SCHEMA = 'Odd.Schema ü';
const ODD_TABLE = 'line "items"';
const DATABASE = 'pgmcp_rows_test';

const COLLECTIONS: CollectionConfig[] = [
  {
    database: undefined,
    schema: ODD_SCHEMA,
    table: ODD_TABLE,
    list: true,
    titleColumn: undefined,
  },
  {
    database: undefined,
    schema: 'inv',
    table: 'docs',
    list: true,
    titleColumn: 'body',
  },
  // Served but not listed.
  {
    database: undefined,
    schema: 'inv',
    table: 'quiet',
    list: false,
    titleColumn: undefined,
  },
];

/** The row suite, with exposed tables' changes captured by `source`. */
export function rowSuite(source: ChangeSourceKind): void {
  let cluster: LogicalCluster | undefined;
  let captureDb: DatabaseHandle | undefined;
  let capture: WalCapture | undefined;
  let databaseUrl: string;
  let sql: pg.Client;
  const servers: Record<string, TestServer> = {};
  const streams: ListenStream[] = [];

  /** A server for this file's database as `role`: its collections, 4 items a page, live. */
  function serverAs(role: string): Promise<TestServer> {
    return startTestServer({
      databaseUrl,
      principal: { role, claims: {} },
      collections: COLLECTIONS,
      catalogScope: { include: null, exclude: ['public'] },
      pageSize: 4,
      live: {},
    });
  }

  /** Every resource a full resources/list walk returns, as the role. */
  async function resourcesOf(
    role: string,
  ): Promise<{ uri: string; name: string; title?: string }[]> {
    const { pages } = await walkList((servers[role] as TestServer).url);
    return pages.flatMap(
      (page) => page['resources'] as { uri: string; name: string }[],
    );
  }

  async function read(role: string, uri: string) {
    return call((servers[role] as TestServer).url, 'resources/read', { uri });
  }

  function text(result: Record<string, unknown> | undefined): unknown {
    const contents = result?.['contents'] as { text: string; uri: string }[];
    expect(contents).toHaveLength(1);
    return JSON.parse(contents[0]?.text ?? 'null');
  }

  async function open(
    role: string,
    notifications: Record<string, unknown>,
  ): Promise<ListenStream> {
    const stream = await listenFresh(
      servers[role] as TestServer,
      notifications,
    );
    streams.push(stream);
    return stream;
  }

  beforeAll(async () => {
    if (source === 'wal') cluster = await startLogicalCluster();
    databaseUrl = await recreateDatabase(
      cluster?.url ?? testDatabaseUrl(),
      DATABASE,
    );
    await migrateDatabase(databaseUrl, async (admin) => {
      for (const role of [ROLE_A, ROLE_B])
        await admin.query(
          `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
        );
      await admin.query(`
      create schema "Odd.Schema ü";
      create table "Odd.Schema ü"."line ""items""" (
        order_id bigint, "line,no" text, qty int, payload bytea, note json,
        primary key (order_id, "line,no"));
      insert into "Odd.Schema ü"."line ""items""" values
        (1, 'a,b', 2, '\\x00ff10', '{"gift": true}'),
        (1, 'c', 1, null, null),
        (2, 'a,b', 5, null, '[1,2]');
      create schema inv;
      create table inv.docs (id int primary key, owner text not null, body text, secret text);
      alter table inv.docs enable row level security;
      create policy docs_own on inv.docs for select using (owner = current_user);
      insert into inv.docs select n, case when n % 2 = 0 then '${ROLE_A}' else '${ROLE_B}' end,
                                  format('doc %s', n), 'hidden' from generate_series(1, 10) as n;
      create table inv.quiet (id int primary key, v text);
      insert into inv.quiet values (1, 'one');
      create table inv.unlisted (id int primary key);
      grant usage on schema "Odd.Schema ü", inv to ${ROLE_A}, ${ROLE_B};
      grant select on "Odd.Schema ü"."line ""items""" to ${ROLE_A};
      grant select (id, owner, body) on inv.docs to ${ROLE_A}, ${ROLE_B};
      grant select on inv.quiet to ${ROLE_A}, ${ROLE_B};
      select pgmcp.expose_table('"Odd.Schema ü"."line ""items"""');
      select pgmcp.expose_table('inv.docs');
      select pgmcp.expose_table('inv.quiet');
    `);
    });
    sql = new pg.Client({ connectionString: databaseUrl });
    await sql.connect();
    if (source === 'wal') {
      // As a server starts it: the source (its tables moved to the publication) before the feeds.
      captureDb = createDatabase({
        connectionString: databaseUrl,
        poolSize: 1,
        statementTimeoutMs: 10_000,
        onError: () => undefined,
      });
      capture = await startWalCapture({
        db: captureDb,
        name: 'main',
        slotMaxBytes: 256 * 1024 * 1024,
        log: () => undefined,
        warn: () => undefined,
        retryMs: 200,
      });
    }
    for (const role of [ROLE_A, ROLE_B]) servers[role] = await serverAs(role);
  }, 120_000);

  afterAll(async () => {
    for (const stream of streams) stream.close();
    for (const server of Object.values(servers)) await server.close();
    await capture?.stop();
    await captureDb?.close();
    await sql?.end();
    await cluster?.stop();
  });

  describe('row resources', () => {
    it('read a row by a composite key whose names and values need encoding, as JSON with bytea in base64', async () => {
      const uri = rowUri(DATABASE, { schema: ODD_SCHEMA, table: ODD_TABLE }, [
        '1',
        'a,b',
      ]);
      expect(uri).toBe(
        `pg://${DATABASE}/Odd.Schema%20%C3%BC/line%20%22items%22/rows/1,a%2Cb`,
      );
      const { result, error } = await read(ROLE_A, uri);
      expect(error).toBeUndefined();
      const contents = result?.['contents'] as {
        uri: string;
        mimeType: string;
      }[];
      expect(contents[0]).toMatchObject({ uri, mimeType: 'application/json' });
      expect(text(result)).toEqual({
        order_id: 1,
        'line,no': 'a,b',
        qty: 2,
        payload: 'AP8Q',
        note: { gift: true },
      });
    });

    it('apply the table’s own GRANTs, column privileges and row-level security', async () => {
      // B holds no privilege on the odd table: the row reads like one that does not exist.
      const odd = rowUri(DATABASE, { schema: ODD_SCHEMA, table: ODD_TABLE }, [
        '1',
        'c',
      ]);
      const denied = await read(ROLE_B, odd);
      const missing = await read(
        ROLE_A,
        rowUri(DATABASE, { schema: ODD_SCHEMA, table: ODD_TABLE }, ['9', 'c']),
      );
      expect(denied.error).toMatchObject({ code: -32602 });
      expect(denied.error?.message).toBe(missing.error?.message);
      // RLS: A owns even ids; the column it may not select is left out.
      const own = await read(
        ROLE_A,
        rowUri(DATABASE, { schema: 'inv', table: 'docs' }, ['2']),
      );
      expect(text(own.result)).toEqual({
        id: 2,
        owner: ROLE_A,
        body: 'doc 2',
      });
      const other = await read(
        ROLE_A,
        rowUri(DATABASE, { schema: 'inv', table: 'docs' }, ['3']),
      );
      expect(other.error).toMatchObject({ code: -32602 });
      expect(other.error?.message).toBe(missing.error?.message);
    });

    it('exist only for configured collections', async () => {
      // inv.unlisted exists (and the login could read it), but no collection names it.
      await sql.query('insert into inv.unlisted values (1)');
      const { error } = await read(
        ROLE_A,
        rowUri(DATABASE, { schema: 'inv', table: 'unlisted' }, ['1']),
      );
      expect(error).toMatchObject({ code: -32602 });
    });

    it('answer bad and hostile keys with -32602, changing nothing', async () => {
      const docs = `pg://${DATABASE}/inv/docs/rows/`;
      const cases = [
        `${docs}x`, // not an integer
        `${docs}1%3B%20drop%20table%20inv.docs`, // "1; drop table inv.docs"
        `${docs}%22%3B%20drop%20table%20inv.docs%3B%20--`, // '"; drop table inv.docs; --'
        `${docs}%00`, // NUL
        `${docs}..`,
        `${docs}2,2`, // one value too many
        `${docs}`, // empty
        `${docs}%E0%A4%A`, // a broken escape
        `pg://${DATABASE}/inv/docs%22%3B%20drop%20table%20inv.docs/rows/1`,
        `pg://${DATABASE}/inv/../inv/docs/rows/2`,
      ];
      for (const uri of cases) {
        const { error, result } = await read(ROLE_A, uri);
        expect(result, uri).toBeUndefined();
        expect(error?.code, uri).toBe(-32602);
        expect(error?.message ?? '', uri).not.toMatch(/select|drop|inv\.docs/i);
      }
      const { rows } = await sql.query<{ n: number }>(
        'select count(*)::int as n from inv.docs',
      );
      expect(rows[0]?.n).toBe(10);
    });

    it('are listed after the catalog, each once, in key order, as the role may see them', async () => {
      const seen = await resourcesOf(ROLE_A);
      const rows = seen.filter((resource) => resource.uri.includes('/rows/'));
      expect(rows.map((resource) => resource.uri)).toEqual([
        rowUri(DATABASE, { schema: ODD_SCHEMA, table: ODD_TABLE }, [
          '1',
          'a,b',
        ]),
        rowUri(DATABASE, { schema: ODD_SCHEMA, table: ODD_TABLE }, ['1', 'c']),
        rowUri(DATABASE, { schema: ODD_SCHEMA, table: ODD_TABLE }, [
          '2',
          'a,b',
        ]),
        ...[2, 4, 6, 8, 10].map((id) =>
          rowUri(DATABASE, { schema: 'inv', table: 'docs' }, [String(id)]),
        ),
      ]);
      expect(
        rows.find((resource) => resource.uri.endsWith('/docs/rows/4')),
      ).toEqual({
        uri: rowUri(DATABASE, { schema: 'inv', table: 'docs' }, ['4']),
        name: 'inv.docs/4',
        title: 'doc 4',
        mimeType: 'application/json',
      });
      // The catalog comes first; the excluded schema is not in it.
      const firstRow = seen.findIndex((resource) =>
        resource.uri.includes('/rows/'),
      );
      expect(
        seen
          .slice(firstRow)
          .every((resource) => resource.uri.includes('/rows/')),
      ).toBe(true);
      expect(seen.map((resource) => resource.uri)).toContain(
        `pg://${DATABASE}/inv/docs`,
      );
      expect(
        seen.some((resource) =>
          resource.uri.startsWith(`pg://${DATABASE}/public`),
        ),
      ).toBe(false);
      const other = await resourcesOf(ROLE_B);
      expect(
        other
          .filter((resource) => resource.uri.includes('/rows/'))
          .map((resource) => resource.uri),
      ).toEqual(
        [1, 3, 5, 7, 9].map((id) =>
          rowUri(DATABASE, { schema: 'inv', table: 'docs' }, [String(id)]),
        ),
      );
    });

    it('complete the row template’s variables from the config and the rows the role can see', async () => {
      const complete = (name: string, value: string, args: object = {}) =>
        call((servers[ROLE_B] as TestServer).url, 'completion/complete', {
          ref: {
            type: 'ref/resource',
            uri: 'pg://{database}/{schema}/{table}/rows/{key}',
          },
          argument: { name, value },
          context: { arguments: args },
        });
      expect(
        (await complete('database', 'pgmcp_r')).result?.['completion'],
      ).toEqual({
        values: [DATABASE],
        total: 1,
        hasMore: false,
      });
      expect(
        (await complete('table', '', { schema: 'inv' })).result?.['completion'],
      ).toMatchObject({ values: ['docs', 'quiet'] });
      expect(
        (await complete('key', '', { schema: 'inv', table: 'docs' })).result?.[
          'completion'
        ],
      ).toEqual({
        values: ['1', '3', '5', '7', '9'],
        total: 5,
        hasMore: false,
      });
    });
    it('treat injection attempts in completion arguments as names that match nothing', async () => {
      const hostile = [
        `'; drop table inv.docs; --`,
        `"; drop table inv.docs; --`,
        '\u0000',
        '..',
        '%',
        '_',
      ];
      for (const uri of [
        'pg://{database}/{schema}/{table}',
        'pg://{database}/{schema}/{table}/rows/{key}',
      ])
        for (const value of hostile) {
          for (const [name, args] of [
            ['schema', {}],
            ['table', { schema: value }],
            ['key', { schema: 'inv', table: value }],
          ] as const) {
            if (name === 'key' && !uri.endsWith('{key}')) continue;
            const { result, error } = await call(
              (servers[ROLE_A] as TestServer).url,
              'completion/complete',
              {
                ref: { type: 'ref/resource', uri },
                argument: { name, value: name === 'schema' ? value : '' },
                context: { arguments: args },
              },
            );
            if (error !== undefined) {
              expect(error.code, `${uri} ${name} ${value}`).toBe(-32602);
              continue;
            }
            expect(result?.['completion'], `${uri} ${name} ${value}`).toEqual({
              values: [],
              total: 0,
              hasMore: false,
            });
          }
        }
      const { rows } = await sql.query<{ n: number }>(
        'select count(*)::int as n from inv.docs',
      );
      expect(rows[0]?.n).toBeGreaterThanOrEqual(10);
    });
  });

  describe('live rows and schema', () => {
    it(`are captured by ${source}`, async () => {
      const { rows } = await sql.query<{ triggers: number; published: number }>(
        `select (select count(*)::int from pg_trigger where tgname like 'pgmcp_capture_%') as triggers,
                (select count(*)::int from pg_publication_tables where pubname = 'pgmcp_changes') as published`,
      );
      expect(rows[0]).toEqual(
        source === 'wal'
          ? { triggers: 0, published: 3 }
          : { triggers: 9, published: 0 },
      );
    });

    it('a row update reaches its subscribers whose role can read it, and no one else', async () => {
      const mine = rowUri(DATABASE, { schema: 'inv', table: 'docs' }, ['2']);
      const theirs = rowUri(DATABASE, { schema: 'inv', table: 'docs' }, ['3']);
      const a = await open(ROLE_A, { resourceSubscriptions: [mine, theirs] });
      // Only what A can read is honored.
      expect(
        (a.messages[0]?.params as { notifications: Record<string, unknown> })
          .notifications,
      ).toEqual({ resourceSubscriptions: [mine] });
      const b = await open(ROLE_B, { resourceSubscriptions: [theirs] });
      await sql.query(
        `update inv.docs set body = body || '!' where id in (2, 3)`,
      );
      await a.waitFor(() => a.updated().includes(mine));
      await b.waitFor(() => b.updated().includes(theirs));
      expect(a.updated()).toEqual([mine]);
      expect(b.updated()).toEqual([theirs]);
      // A composite-key row, named exactly as resources/read names it.
      const odd = rowUri(DATABASE, { schema: ODD_SCHEMA, table: ODD_TABLE }, [
        '2',
        'a,b',
      ]);
      const c = await open(ROLE_A, { resourceSubscriptions: [odd] });
      await sql.query(
        `update "Odd.Schema ü"."line ""items""" set qty = qty + 1 where order_id = 2`,
      );
      await c.waitFor(() => c.updated().includes(odd));
    });

    it('inserts into a listed collection change the list; into an unlisted one, only the row', async () => {
      const quietRow = rowUri(DATABASE, { schema: 'inv', table: 'quiet' }, [
        '1',
      ]);
      const stream = await open(ROLE_A, {
        resourcesListChanged: true,
        resourceSubscriptions: [quietRow],
      });
      await sql.query(`update inv.quiet set v = 'uno' where id = 1`);
      await stream.waitFor(() => stream.updated().includes(quietRow));
      expect(stream.listChanges()).toBe(0);
      await sql.query(
        `insert into inv.docs values (12, '${ROLE_A}', 'doc 12', null)`,
      );
      await stream.waitFor(() => stream.listChanges() >= 1);
    });

    it('DDL updates the table’s and schema’s catalog URIs and the list, and the description follows', async () => {
      const table = `pg://${DATABASE}/inv/docs`;
      const schema = `pg://${DATABASE}/inv`;
      const a = await open(ROLE_A, {
        resourcesListChanged: true,
        resourceSubscriptions: [table, `${table}?format=json`, schema],
      });
      await sql.query(`alter table inv.docs add column tags text[]`);
      await sql.query(`grant select (tags) on inv.docs to ${ROLE_A}`);
      await a.waitFor(
        () =>
          a.updated().includes(table) &&
          a.updated().includes(`${table}?format=json`) &&
          a.updated().includes(schema) &&
          a.listChanges() >= 1,
      );
      const { result } = await read(ROLE_A, table);
      expect((result?.['contents'] as { text: string }[])[0]?.text).toMatch(
        /\ntags text\[\](\n| -- )/,
      );
      // B cannot see the odd table: a change to it is not heard of on B's list stream. Sentinels
      // on a row of an unlisted collection bracket it: all before the second arrived before it.
      const sentinel = rowUri(DATABASE, { schema: 'inv', table: 'quiet' }, [
        '1',
      ]);
      const b = await open(ROLE_B, {
        resourcesListChanged: true,
        resourceSubscriptions: [sentinel],
      });
      const touch = async (times: number) => {
        await sql.query(`update inv.quiet set v = v || '.' where id = 1`);
        await b.waitFor(
          () => b.updated().filter((uri) => uri === sentinel).length >= times,
        );
      };
      await touch(1);
      const baseline = b.listChanges();
      await sql.query(
        `comment on table "Odd.Schema ü"."line ""items""" is 'Order lines.'`,
      );
      await touch(2);
      expect(b.listChanges()).toBe(baseline);
      // A, who can see it, hears of it.
      const heard = a.listChanges();
      await sql.query(
        `comment on table "Odd.Schema ü"."line ""items""" is 'Order lines!'`,
      );
      await a.waitFor(() => a.listChanges() > heard);
    });

    it('unexpose stops capture; expose refuses a table without a primary key', async () => {
      await sql.query(`select pgmcp.unexpose_table('inv.quiet')`);
      const lastSeq =
        'select coalesce(max(seq), 0)::text as seq from pgmcp.changes';
      const before = await sql.query<{ seq: string }>(lastSeq);
      await sql.query(`update inv.quiet set v = 'one again' where id = 1`);
      // A write to a table still exposed, after it: once that is logged (the WAL source logs
      // asynchronously, in commit order), the quiet table's would have been too.
      await sql.query(`update inv.docs set body = body || '.' where id = 1`);
      const logged = await until(
        async () => {
          const { rows } = await sql.query<{ relation: string }>(
            'select relation from pgmcp.changes where seq > $1::bigint order by seq',
            [before.rows[0]?.seq],
          );
          return rows.some((row) => row.relation === 'inv.docs')
            ? rows.map((row) => row.relation)
            : undefined;
        },
        20_000,
        "the exposed table's update to be logged",
      );
      expect(logged).not.toContain('inv.quiet');
      await sql.query('create table inv.keyless (v text)');
      await expect(
        sql.query(`select pgmcp.expose_table('inv.keyless')`),
      ).rejects.toMatchObject({ code: '42P16' });
    });
  });

  describe('catalog descriptions of every relation kind', () => {
    it('describe partitioned tables, materialized views, domains, enum arrays and arrays', async () => {
      await sql.query(`
      create domain inv.positive as int check (value > 0);
      create type inv.mood as enum ('ok', 'meh');
      create table inv.events (id int, at date not null, moods inv.mood[], qty inv.positive, tags text[])
        partition by range (at);
      create table inv.events_2026 partition of inv.events for values from ('2026-01-01') to ('2027-01-01');
      create materialized view inv.event_counts as select at, count(*) as n from inv.events group by at;
      grant select on inv.events, inv.event_counts to ${ROLE_A};
    `);
      const events = await read(
        ROLE_A,
        `pg://${DATABASE}/inv/events?format=json`,
      );
      expect(text(events.result)).toMatchObject({
        kind: 'partitioned table',
        columns: [
          { name: 'id', type: 'integer', nullable: true, enumValues: null },
          { name: 'at', type: 'date', nullable: false },
          { name: 'moods', type: 'inv.mood[]', enumValues: ['ok', 'meh'] },
          { name: 'qty', type: 'inv.positive', enumValues: null },
          { name: 'tags', type: 'text[]', enumValues: null },
        ],
      });
      const counts = await read(ROLE_A, `pg://${DATABASE}/inv/event_counts`);
      expect(
        (counts.result?.['contents'] as { text: string }[])[0]?.text,
      ).toContain('# inv.event_counts (materialized view)');
      // B holds no privilege on either: both read like missing relations.
      for (const uri of [
        `pg://${DATABASE}/inv/events`,
        `pg://${DATABASE}/inv/event_counts`,
      ])
        expect((await read(ROLE_B, uri)).error).toMatchObject({ code: -32602 });
    });
  });

  describe('catalog lastModified', () => {
    it('is when pgmcp last saw a schema change to the relation, and moves with the next one', async () => {
      const entry = async () => {
        const resources = await resourcesOf(ROLE_A);
        return resources.find(
          (resource) => resource.uri === `pg://${DATABASE}/inv/quiet`,
        ) as { annotations?: { lastModified: string } } | undefined;
      };
      const before = (await entry())?.annotations?.lastModified;
      expect(before).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      await sql.query(`comment on table inv.quiet is 'Quiet rows.'`);
      const after = (await entry())?.annotations?.lastModified;
      expect(Date.parse(after ?? '')).toBeGreaterThan(Date.parse(before ?? ''));
    });
  });

  describe('the page that ends the stored resources', () => {
    it('has a next cursor exactly when the catalog has entries for the role, also after a GRANT', async () => {
      const role = 'pgmcp_rows_c';
      await sql.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
      // Exactly one page (4) of stored resources, and nothing else this role may see.
      await sql.query(
        `insert into pgmcp.resources (uri, name, text, readers)
       select format('notes:///lookahead/n%s', n), format('n%s', n), 'x', array['${role}']
         from generate_series(1, 4) as n`,
      );
      const server = await serverAs(role);
      try {
        const first = async () => {
          const { result } = await call(server.url, 'resources/list');
          expect(result?.['resources']).toHaveLength(4);
          return result?.['nextCursor'];
        };
        expect(await first()).toBeUndefined();
        // Asked twice: the second answer comes from what the first learned, and agrees.
        expect(await first()).toBeUndefined();
        await sql.query(`grant usage on schema inv to ${role}`);
        await server.feed?.poll();
        const cursor = await first();
        expect(typeof cursor).toBe('string');
        const { result } = await call(server.url, 'resources/list', { cursor });
        expect(result?.['resources']).toEqual([
          expect.objectContaining({ uri: `pg://${DATABASE}/inv` }),
        ]);
        expect(result).not.toHaveProperty('nextCursor');
      } finally {
        await server.close();
        await sql.query(`revoke usage on schema inv from ${role}`);
      }
    });
  });
}
