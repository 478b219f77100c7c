// The WAL change source (issue 36 point 2): exposed tables publish instead of carrying triggers,
// one replica at a time reads the slot into pgmcp.changes, nothing is lost or logged twice across
// a killed reader or a PostgreSQL restart, and the slot's bound drops it and resyncs listeners.
// Own cluster: it needs wal_level = logical, and restarts PostgreSQL.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  useTriggerSource,
  type DatabaseHandle,
  type WalCapture,
} from '../../src/db/index.js';
import type { CollectionConfig } from '../../src/resources/index.js';
import { ensureSlot, slotName } from '../../src/db/wal/capture-slot.js';
import { logTransactions, TableKeys } from '../../src/db/wal/logged-rows.js';
import type { DecodedChange, TupleText } from '../../src/db/wal/pgoutput.js';
import { rowUri } from '../../src/resources/catalog-uri.js';
import {
  listenFresh,
  startTestServer,
  until,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import {
  walResyncs,
  captureDatabase,
  captureEpochIn,
  loggedKeysIn,
  startLogicalCluster,
  startTestWalCapture,
  type LogicalCluster,
} from '../setup/logical-cluster.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const DATABASE = 'pgmcp_wal_test';
const ROLE_A = 'pgmcp_wal_a';
const ROLE_B = 'pgmcp_wal_b';
const COLLECTIONS: CollectionConfig[] = [
  {
    database: undefined,
    schema: 'inv',
    table: 'docs',
    list: true,
    titleColumn: 'body',
  },
  {
    database: undefined,
    schema: 'inv',
    table: 'lines',
    list: false,
    titleColumn: undefined,
  },
];

let cluster: LogicalCluster;
let databaseUrl: string;
let sql: pg.Client;
/** The WAL readers' database, as its superuser. */
let captureDb: DatabaseHandle;
const servers: Record<string, TestServer> = {};
const streams: ListenStream[] = [];
const captures: WalCapture[] = [];
const lines: string[] = [];

const doc = (id: number) =>
  rowUri(DATABASE, { schema: 'inv', table: 'docs' }, [String(id)]);

async function open(
  role: string,
  notifications: Record<string, unknown>,
): Promise<ListenStream> {
  const stream = await listenFresh(servers[role] as TestServer, notifications);
  streams.push(stream);
  return stream;
}

/** A WAL reader on the test database, as its superuser, retrying fast. */
async function capture(slotMaxBytes = 256 * 1024 * 1024): Promise<WalCapture> {
  const started = await startTestWalCapture(captureDb, lines, slotMaxBytes);
  captures.push(started);
  return started;
}

async function stopCapture(target: WalCapture): Promise<void> {
  await target.stop();
  captures.splice(captures.indexOf(target), 1);
}

/** Logged changes of inv.docs by key, in log order. */
const loggedKeys = (): Promise<string[]> => loggedKeysIn(sql, 'inv.docs');

/** The name of the test database's slot (whether or not it exists now). */
async function currentSlot(): Promise<string> {
  const client = await captureDb.connectAdmin();
  try {
    return await slotName(client);
  } finally {
    await client.end();
  }
}

/** The commit position of the last transaction the WAL source logged. */
async function appliedLsn(): Promise<bigint> {
  const { rows } = await sql.query<{ lsn: string }>(
    `select (applied_lsn - '0/0'::pg_lsn)::text as lsn from pgmcp.change_capture`,
  );
  return BigInt(rows[0]?.lsn ?? '0');
}

/** A decoded change of an inv table; each table its own description, as one stream numbers them. */
function walChange(
  table: string,
  kind: DecodedChange['kind'],
  key: TupleText,
  old?: TupleText,
): DecodedChange {
  const description = ['docs', 'lines', 'dropped'].indexOf(table) + 1;
  return {
    description,
    schema: 'inv',
    table,
    kind,
    key,
    ...(old === undefined ? {} : { old }),
  };
}

const captureEpoch = (): Promise<bigint> => captureEpochIn(sql);

async function reconnectSql(): Promise<void> {
  await sql.end().catch(() => undefined);
  sql = new pg.Client({ connectionString: databaseUrl });
  sql.on('error', () => undefined);
  await sql.connect();
}

beforeAll(async () => {
  cluster = await startLogicalCluster();
  databaseUrl = await recreateDatabase(cluster.url, DATABASE);
  await migrateDatabase(databaseUrl, async (admin) => {
    await admin.query(`
      create role ${ROLE_A} nologin;
      create role ${ROLE_B} nologin;
      create schema inv;
      create table inv.docs (id int primary key, owner text not null, body text);
      alter table inv.docs enable row level security;
      create policy docs_own on inv.docs for select using (owner = current_user);
      insert into inv.docs select n, case when n % 2 = 0 then '${ROLE_A}' else '${ROLE_B}' end,
                                  format('doc %s', n) from generate_series(1, 10) as n;
      -- Primary key columns in another order than the table's.
      create table inv.lines (note text, line text, order_id bigint, primary key (order_id, line));
      insert into inv.lines values ('first', 'a,b', 1), ('gone', 'z', 9);
      create table inv.scratch (v text);
      grant usage on schema inv to ${ROLE_A}, ${ROLE_B};
      grant select on inv.docs, inv.lines to ${ROLE_A}, ${ROLE_B};
      select pgmcp.expose_table('inv.docs');
      select pgmcp.expose_table('inv.lines');
    `);
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  sql.on('error', () => undefined);
  await sql.connect();
  captureDb = captureDatabase(databaseUrl);
  // The source first, as a server starts it: the feeds then begin in the slot's epoch.
  await capture();
  for (const role of [ROLE_A, ROLE_B])
    servers[role] = await startTestServer({
      databaseUrl,
      principal: { role, claims: {} },
      collections: COLLECTIONS,
      live: {},
      logLines: lines,
    });
}, 120_000);

afterAll(async () => {
  if (process.env['WAL_DEBUG'] !== undefined) console.log(lines.join('\n'));
  for (const stream of streams) stream.close();
  for (const running of [...captures]) await running.stop();
  for (const server of Object.values(servers)) await server.close();
  await captureDb?.close();
  await sql?.end().catch(() => undefined);
  await cluster?.stop();
});

describe('the wal source', () => {
  it('moves exposed tables from capture triggers to the publication', async () => {
    const { rows } = await sql.query<{ triggers: number; published: string[] }>(
      `select (select count(*)::int from pg_trigger where tgname like 'pgmcp_capture_%'
                 and tgrelid in ('inv.docs'::regclass, 'inv.lines'::regclass)) as triggers,
              array(select tablename::text from pg_publication_tables
                     where pubname = 'pgmcp_changes' order by 1) as published`,
    );
    expect(rows[0]).toEqual({ triggers: 0, published: ['docs', 'lines'] });
    const exposed = await sql.query<{ exposed: boolean }>(
      `select pgmcp.table_exposed('inv.docs') as exposed`,
    );
    expect(exposed.rows[0]?.exposed).toBe(true);
  });

  it('exposes a table by publishing it, and refuses one whose deletions the WAL would not name by key (REPLICA IDENTITY NOTHING, or USING INDEX other than the primary key)', async () => {
    await sql.query(`create table inv.extra (id int primary key, v text)`);
    await sql.query(`select pgmcp.expose_table('inv.extra')`);
    const { rows } = await sql.query<{ triggers: number; published: boolean }>(
      `select (select count(*)::int from pg_trigger where tgname like 'pgmcp_capture_%'
                 and tgrelid = 'inv.extra'::regclass) as triggers,
              exists (select from pg_publication_tables
                       where pubname = 'pgmcp_changes' and tablename = 'extra') as published`,
    );
    expect(rows[0]).toEqual({ triggers: 0, published: true });
    await sql.query(`select pgmcp.unexpose_table('inv.extra')`);
    await sql.query(`alter table inv.extra replica identity nothing`);
    await expect(
      sql.query(`select pgmcp.expose_table('inv.extra')`),
    ).rejects.toMatchObject({ code: '42P16' });
    // An identity index other than the primary key names deleted rows by other columns.
    await sql.query(`alter table inv.extra alter column v set not null`);
    await sql.query(`create unique index extra_v on inv.extra (v)`);
    await sql.query(
      `alter table inv.extra replica identity using index extra_v`,
    );
    await expect(
      sql.query(`select pgmcp.expose_table('inv.extra')`),
    ).rejects.toMatchObject({ code: '42P16' });
    const after = await sql.query<{ exposed: boolean }>(
      `select pgmcp.table_exposed('inv.extra') as exposed`,
    );
    expect(after.rows[0]?.exposed).toBe(false);
    // The primary key's own index names them.
    await sql.query(
      `alter table inv.extra replica identity using index extra_pkey`,
    );
    await sql.query(`select pgmcp.expose_table('inv.extra')`);
    const exposed = await sql.query<{ exposed: boolean }>(
      `select pgmcp.table_exposed('inv.extra') as exposed`,
    );
    expect(exposed.rows[0]?.exposed).toBe(true);
  });

  it('delivers updates, inserts and deletes to the subscribers whose role may see them', async () => {
    const a = await open(ROLE_A, {
      resourcesListChanged: true,
      resourceSubscriptions: [doc(2), doc(4)],
    });
    const b = await open(ROLE_B, { resourceSubscriptions: [doc(3)] });
    await sql.query(
      `update inv.docs set body = body || '!' where id in (2, 3)`,
    );
    await a.waitFor(() => a.updated().includes(doc(2)));
    await b.waitFor(() => b.updated().includes(doc(3)));
    expect(a.updated()).toEqual([doc(2)]);
    expect(b.updated()).toEqual([doc(3)]);
    const listed = a.listChanges();
    await sql.query(`insert into inv.docs values (12, '${ROLE_A}', 'doc 12')`);
    await a.waitFor(() => a.listChanges() > listed);
    // A deletion is heard of where row-level security does not apply (migration 0031).
    const gone = rowUri(DATABASE, { schema: 'inv', table: 'lines' }, [
      '9',
      'z',
    ]);
    const c = await open(ROLE_B, { resourceSubscriptions: [gone] });
    await sql.query(`delete from inv.docs where id = 4`);
    await sql.query(`delete from inv.lines where order_id = 9`);
    await c.waitFor(() => c.updated().includes(gone));
    // B may not read A's rows: none of them reached B.
    expect(b.updated()).toEqual([doc(3)]);
    expect((await loggedKeys()).slice(-4)).toEqual([
      '2:updated',
      '3:updated',
      '12:created',
      '4:deleted',
    ]);
  });

  it('names rows by their primary key in key order, and a changed key as a delete and a create', async () => {
    const row = rowUri(DATABASE, { schema: 'inv', table: 'lines' }, [
      '1',
      'a,b',
    ]);
    const a = await open(ROLE_A, { resourceSubscriptions: [row] });
    await sql.query(`update inv.lines set note = 'second' where order_id = 1`);
    await a.waitFor(() => a.updated().includes(row));
    await sql.query(`update inv.lines set line = 'c' where order_id = 1`);
    await until(
      async () => {
        const { rows } = await sql.query<{ kind: string; key: string[] }>(
          `select kind, array(select jsonb_array_elements_text(detail->'key')) as key
             from pgmcp.changes where relation = 'inv.lines' and kind <> 'schema'
                and detail->'key'->>0 = '1' order by seq`,
        );
        return rows.length >= 3 ? rows : undefined;
      },
      10_000,
      'the key change to be logged',
    ).then((rows) =>
      expect(rows).toEqual([
        { kind: 'updated', key: ['1', 'a,b'] },
        { kind: 'deleted', key: ['1', 'a,b'] },
        { kind: 'created', key: ['1', 'c'] },
      ]),
    );
  });

  it('still delivers schema changes (the DDL event triggers)', async () => {
    const table = `pg://${DATABASE}/inv/docs`;
    const a = await open(ROLE_A, { resourceSubscriptions: [table] });
    await sql.query('alter table inv.docs add column tags text[]');
    await a.waitFor(() => a.updated().includes(table));
  });

  it('replays nothing twice: a commit at or before the last logged one logs nothing', async () => {
    const applied = await appliedLsn();
    expect(applied).toBeGreaterThan(0n);
    const keys = new TableKeys();
    const docs = (id: string) => walChange('docs', 'updated', { id });
    expect(
      (
        await logTransactions(sql, keys, [
          { commitLsn: applied, changes: [docs('2')] },
        ])
      ).logged,
    ).toBe(-1);
    // A batch read again may hold a logged transaction and a new one: only the new one is logged
    // (in a transaction rolled back: a made-up position must not stay the last logged).
    await sql.query('begin');
    try {
      const { logged } = await logTransactions(sql, keys, [
        { commitLsn: applied, changes: [docs('5')] },
        { commitLsn: applied + 16n, changes: [docs('7')] },
      ]);
      expect(logged).toBe(1);
      const { rows: last } = await sql.query<{ key: string }>(
        `select detail->'key'->>0 as key from pgmcp.changes order by seq desc limit 1`,
      );
      expect(last[0]?.key).toBe('7');
    } finally {
      await sql.query('rollback');
    }
  });

  it("logs a batch of several tables with each row named by its own table's key, skipping a table that is gone", async () => {
    const applied = await appliedLsn();
    // In a transaction rolled back: a made-up position must not stay the last logged.
    await sql.query('begin');
    try {
      const { logged } = await logTransactions(sql, new TableKeys(), [
        {
          commitLsn: applied + 16n,
          changes: [
            walChange('lines', 'updated', {
              note: 'n',
              line: 'x',
              order_id: '4',
            }),
            walChange('docs', 'updated', { id: '3' }),
            walChange('dropped', 'updated', { id: '1' }),
            walChange(
              'lines',
              'updated',
              { note: 'n', line: 'y', order_id: '4' },
              { line: 'x', order_id: '4' },
            ),
            walChange('docs', 'deleted', { id: '8' }),
          ],
        },
      ]);
      expect(logged).toBe(5);
      const { rows } = await sql.query<{ change: string }>(
        `select relation || ' ' || kind || ' ' || (detail->'key')::text || ' ' || (detail->>'table')
                  as change
           from pgmcp.changes order by seq desc limit 5`,
      );
      expect(rows.map((row) => row.change).reverse()).toEqual([
        'inv.lines updated ["4", "x"] lines',
        'inv.docs updated ["3"] docs',
        'inv.lines deleted ["4", "x"] lines',
        'inv.lines created ["4", "y"] lines',
        'inv.docs deleted ["8"] docs',
      ]);
    } finally {
      await sql.query('rollback');
    }
  });

  it("names a table's rows by its new key once its primary key is redefined", async () => {
    await sql.query(`
      create table inv.rekeyed (a text, b text, primary key (a, b));
      select pgmcp.expose_table('inv.rekeyed');
      insert into inv.rekeyed values ('1', '2');
    `);
    const logged = () =>
      until(
        async () => {
          const { rows } = await sql.query<{ key: string }>(
            `select (detail->'key')::text as key from pgmcp.changes
              where relation = 'inv.rekeyed' and kind <> 'schema' order by seq`,
          );
          return rows.length > 0 ? rows.map((row) => row.key) : undefined;
        },
        20_000,
        'inv.rekeyed to be logged',
      );
    expect(await logged()).toEqual(['["1", "2"]']);
    await sql.query(`
      alter table inv.rekeyed drop constraint rekeyed_pkey, add primary key (b, a);
      update inv.rekeyed set a = '1';
    `);
    await until(
      async () => ((await logged()).length >= 2 ? true : undefined),
      20_000,
      'the update after the new key to be logged',
    );
    expect(await logged()).toEqual(['["1", "2"]', '["2", "1"]']);
  });

  it('logs a change the WAL does not name by its key (an identity altered after expose) as a new epoch, warns naming the table, and logs later changes row by row', async () => {
    await sql.query(`
      create table inv.renamed (id int primary key, code int not null unique, v text);
      select pgmcp.expose_table('inv.renamed');
      insert into inv.renamed values (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c');
    `);
    const renamedRows = async () => {
      const { rows } = await sql.query<{ logged: number }>(
        `select count(*)::int as logged from pgmcp.changes
          where relation = 'inv.renamed' and kind <> 'schema'`,
      );
      return rows[0]?.logged ?? 0;
    };
    await until(
      async () => ((await renamedRows()) === 3 ? true : undefined),
      20_000,
      'the inserts to be logged',
    );
    const a = await open(ROLE_A, { resourceSubscriptions: [doc(2)] });
    const resyncs = () =>
      lines.filter((line) =>
        /WARN .*a change to inv\.renamed .*cannot be named by its primary key \(REPLICA IDENTITY USING INDEX/.test(
          line,
        ),
      ).length;
    const warned = resyncs();
    let epoch = await captureEpoch();
    let seen = a.updated().length;
    const counted = await walResyncs('unnamed_key');
    // Deletions now carry only the index's column: the primary key decodes as nulls.
    await sql.query(`
      alter table inv.renamed replica identity using index renamed_code_key;
      delete from inv.renamed where id = 1;
    `);
    const heard = async (before: bigint, from: number, what: string) => {
      await until(
        async () => ((await captureEpoch()) > before ? true : undefined),
        20_000,
        what,
      );
      // Every stream is told its resources may have changed, though doc 2 was not in it.
      await a.waitFor(() => a.updated().slice(from).includes(doc(2)));
    };
    const warnedOf = (count: number) =>
      until(
        () => (resyncs() >= count ? true : undefined),
        20_000,
        'the warning',
      );
    await heard(epoch, seen, 'the unnamed deletion to start a new epoch');
    await warnedOf(warned + 1);
    // An update carries no old row while the index's column is unchanged: its old key may be
    // gone unheard of, so it is not named either.
    epoch = await captureEpoch();
    seen = a.updated().length;
    await sql.query(`update inv.renamed set id = 20 where id = 2`);
    await heard(epoch, seen, 'the unnamed update to start a new epoch');
    expect(await renamedRows()).toBe(3);
    // Other tables' changes are still logged row by row.
    const logged = (await loggedKeys()).length;
    await sql.query(`update inv.docs set body = 'named again' where id = 2`);
    await until(
      async () => {
        const keys = (await loggedKeys()).slice(logged);
        return keys.length > 0 ? keys : undefined;
      },
      20_000,
      'the ordinary update to be logged',
    ).then((keys) => expect(keys).toEqual(['2:updated']));
    expect(await captureEpoch()).toBe(epoch + 1n);
    // The table was told of once on this stream, not with each of its batches; both counted.
    expect(resyncs()).toBe(warned + 1);
    expect(await walResyncs('unnamed_key')).toBe(counted + 2);
  });

  it('confirms the slot past writes to tables it does not publish', async () => {
    const [reader] = captures;
    await sql.query(`insert into inv.scratch values ('unpublished')`);
    const { rows } = await sql.query<{ lsn: string }>(
      'select pg_current_wal_lsn()::text as lsn',
    );
    // Nothing to log: the walsender's keepalives, answered while idle, move the slot on.
    await until(
      async () => {
        const { rows: slot } = await sql.query<{ past: boolean }>(
          `select confirmed_flush_lsn >= $2::pg_lsn as past
             from pg_replication_slots where slot_name = $1`,
          [reader?.slot, rows[0]?.lsn],
        );
        return slot[0]?.past === true ? true : undefined;
      },
      20_000,
      'the slot to be confirmed past the unpublished write',
    );
  });

  it('loses nothing and logs nothing twice when the reader is killed mid-stream, and another replica takes over', async () => {
    const [first] = captures;
    const second = await capture();
    expect(first?.consuming).toBe(true);
    expect(second.consuming).toBe(false);
    const before = (await loggedKeys()).length;
    for (let n = 0; n < 40; n += 1) {
      await sql.query(`update inv.docs set body = $1 where id = 2`, [
        `kill ${n}`,
      ]);
      if (n === 20)
        await sql.query(
          `select pg_terminate_backend(active_pid) from pg_replication_slots
            where slot_name = $1 and active_pid is not null`,
          [second.slot],
        );
    }
    await stopCapture(first as WalCapture);
    await until(
      () => second.consuming,
      20_000,
      'the second replica to read the slot',
    );
    const logged = await until(
      async () => {
        const keys = await loggedKeys();
        return keys.length >= before + 40 ? keys : undefined;
      },
      20_000,
      'every update to be logged',
    );
    expect(logged.slice(before)).toEqual(Array(40).fill('2:updated'));
    // The confirmed position follows what was logged: nothing is left to read twice.
    const { rows } = await sql.query<{ caught_up: boolean }>(
      `select confirmed_flush_lsn >= (select applied_lsn from pgmcp.change_capture) as caught_up
         from pg_replication_slots where slot_name = $1`,
      [second.slot],
    );
    expect(rows[0]?.caught_up).toBe(true);
  });

  it('loses nothing across a PostgreSQL restart', async () => {
    const a = await open(ROLE_A, { resourceSubscriptions: [doc(6)] });
    const before = (await loggedKeys()).length;
    for (let n = 0; n < 10; n += 1)
      await sql.query(`update inv.docs set body = $1 where id = 6`, [
        `restart ${n}`,
      ]);
    await cluster.restart();
    await reconnectSql();
    for (let n = 10; n < 20; n += 1)
      await sql.query(`update inv.docs set body = $1 where id = 6`, [
        `restart ${n}`,
      ]);
    const logged = await until(
      async () => {
        const keys = await loggedKeys().catch(() => []);
        return keys.length >= before + 20 ? keys : undefined;
      },
      60_000,
      'every update to be logged after the restart',
    );
    expect(logged.slice(before)).toEqual(Array(20).fill('6:updated'));
    // The stream heard of the updates after the restart too (its feed reconnected).
    const heard = a.updated().filter((uri) => uri === doc(6)).length;
    await sql.query(`update inv.docs set body = 'after' where id = 6`);
    await a.waitFor(
      () => a.updated().filter((uri) => uri === doc(6)).length > heard,
      30_000,
    );
  });

  it('warns past half the slot limit, drops the slot past it, and resyncs every stream', async () => {
    for (const running of [...captures]) await stopCapture(running);
    const a = await open(ROLE_A, { resourceSubscriptions: [doc(8)] });
    // WAL the slot must keep while no reader confirms it: about 4 MB in an unpublished table.
    await sql.query(
      `insert into inv.scratch select repeat(md5(n::text), 32) from generate_series(1, 4000) n`,
    );
    const { rows } = await sql.query<{ retained: string }>(
      `select (pg_current_wal_lsn() - restart_lsn)::bigint::text as retained
         from pg_replication_slots where slot_name like 'pgmcp_%'`,
    );
    const retained = Number(rows[0]?.retained);
    expect(retained).toBeGreaterThan(2 * 1024 * 1024);
    // A limit the slot holds more than half of: a warning, and the slot stays.
    const warned = await capture(Math.floor(retained * 1.5));
    expect(lines.some((line) => /WARN .*over half of/.test(line))).toBe(true);
    await stopCapture(warned);
    const epoch = await sql.query<{ epoch: string }>(
      'select epoch::text from pgmcp.change_capture',
    );
    // A limit below what it holds: dropped, created anew (a new epoch), every stream resynced.
    const heard = a.updated().length;
    await capture(1024 * 1024);
    expect(lines.some((line) => /WARN .*dropped it/.test(line))).toBe(true);
    await until(
      async () => {
        const after = await sql.query<{ epoch: string }>(
          'select epoch::text from pgmcp.change_capture',
        );
        return (
          BigInt(after.rows[0]?.epoch ?? 0) > BigInt(epoch.rows[0]?.epoch ?? 0)
        );
      },
      20_000,
      'a new slot and epoch',
    );
    await a.waitFor(() => a.updated().length > heard, 30_000);
    expect(a.updated().slice(heard)).toContain(doc(8));
    // And the new slot reads changes as before.
    await sql.query(`update inv.docs set body = 'new slot' where id = 8`);
    await a.waitFor(
      () => a.updated().filter((uri) => uri === doc(8)).length >= 2,
      30_000,
    );
  });

  it('keeps a slot whose reader is current though a transaction left open holds more WAL than the bound, and warns', async () => {
    for (const running of [...captures]) await stopCapture(running);
    const slot = await currentSlot();
    const running = await capture(1024 * 1024);
    const holder = new pg.Client({ connectionString: databaseUrl });
    await holder.connect();
    try {
      // A transaction that has written and stays open: decoding must restart at its start.
      await holder.query('begin');
      await holder.query(`insert into inv.scratch values ('held open')`);
      await sql.query(
        `insert into inv.scratch select repeat(md5(n::text), 32) from generate_series(1, 4000) n`,
      );
      // A published change after it: once logged, the reader has confirmed past all of that WAL.
      await sql.query(`update inv.docs set body = 'current' where id = 9`);
      const { rows } = await sql.query<{ lsn: string }>(
        `select pg_current_wal_lsn()::text as lsn`,
      );
      await until(
        async () =>
          (
            await sql.query(
              `select from pg_replication_slots
                where slot_name = $1 and confirmed_flush_lsn >= $2::pg_lsn
                  and pg_current_wal_lsn() - restart_lsn > 1024 * 1024`,
              [slot, rows[0]?.lsn],
            )
          ).rowCount === 1,
        30_000,
        'the reader to confirm past the bulk while the open transaction holds the restart position',
      );
      const epoch = await captureEpoch();
      const from = lines.length;
      await running.watch();
      const told = lines.slice(from);
      expect(
        told.some((line) => /WARN .*though its reader is current/.test(line)),
      ).toBe(true);
      expect(told.some((line) => /dropped it/.test(line))).toBe(false);
      expect(await captureEpoch()).toBe(epoch);
      expect(
        (
          await sql.query(
            'select from pg_replication_slots where slot_name = $1',
            [slot],
          )
        ).rowCount,
      ).toBe(1);
    } finally {
      await holder.query('rollback').catch(() => undefined);
      await holder.end();
    }
  });

  it('starts the epoch of a slot a crashed run created but did not finish, and resyncs every stream', async () => {
    for (const running of [...captures]) await stopCapture(running);
    const a = await open(ROLE_A, { resourceSubscriptions: [doc(10)] });
    const slot = await currentSlot();
    // What a run that crashed right after creating the slot leaves: the mark, then the slot.
    await sql.query('select pg_drop_replication_slot($1)', [slot]);
    await sql.query('select pgmcp.begin_slot_creation()');
    await sql.query(
      `select pg_create_logical_replication_slot($1, 'pgoutput')`,
      [slot],
    );
    const epoch = await captureEpoch();
    const heard = a.updated().length;
    await capture();
    await until(
      async () => (await captureEpoch()) > epoch,
      20_000,
      'the next run to start the epoch',
    );
    await a.waitFor(() => a.updated().length > heard, 30_000);
    expect(a.updated().slice(heard)).toContain(doc(10));
    const { rows } = await sql.query<{ slot_pending: boolean }>(
      'select slot_pending from pgmcp.change_capture',
    );
    expect(rows[0]?.slot_pending).toBe(false);
  }, 120_000);

  it('creates a missing slot once when two replicas start together, with one epoch for it', async () => {
    for (const running of [...captures]) await stopCapture(running);
    const slot = await currentSlot();
    await sql.query(
      'select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = $1',
      [slot],
    );
    const epoch = await captureEpoch();
    const clients = [
      await captureDb.connectAdmin(),
      await captureDb.connectAdmin(),
    ];
    try {
      const created = await Promise.all(
        clients.map((client) => ensureSlot(client, slot)),
      );
      expect(created.filter(Boolean)).toHaveLength(1);
    } finally {
      for (const client of clients) await client.end();
    }
    // One creation, one epoch: none from the replica that found the slot made.
    expect(await captureEpoch()).toBe(epoch + 1n);
  });

  it('switching back to triggers reinstalls them, drops the slot, and resyncs every stream for what only the slot held', async () => {
    for (const running of [...captures]) await stopCapture(running);
    const a = await open(ROLE_A, { resourceSubscriptions: [doc(2)] });
    // Committed under the wal source with no reader: only the slot holds it.
    await sql.query(
      `update inv.docs set body = 'only in the slot' where id = 2`,
    );
    const epoch = await captureEpoch();
    const heard = a.updated().length;
    await useTriggerSource(captureDb, () => undefined);
    expect(await captureEpoch()).toBe(epoch + 1n);
    await a.waitFor(() => a.updated().slice(heard).includes(doc(2)), 30_000);
    const { rows } = await sql.query<{
      triggers: number;
      published: number;
      slots: number;
    }>(
      `select (select count(*)::int from pg_trigger where tgname like 'pgmcp_capture_%'
                 and tgrelid = 'inv.docs'::regclass) as triggers,
              (select count(*)::int from pg_publication_tables where pubname = 'pgmcp_changes') as published,
              (select count(*)::int from pg_replication_slots where slot_name like 'pgmcp_%') as slots`,
    );
    expect(rows[0]).toEqual({ triggers: 3, published: 0, slots: 0 });
  });
});
