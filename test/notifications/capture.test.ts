// Change capture in SQL (migrations/0004): what the triggers log for each kind of write, what
// they notify, and what they leave alone.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testDatabaseUrl } from '../setup/harness.js';
import { match } from '../setup/matchers.js';

let sql: pg.Client;
let listener: pg.Client;
const payloads: string[] = [];

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  listener = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await listener.connect();
  listener.on('notification', (message) => {
    if (message.channel === 'pgmcp_changes')
      payloads.push(message.payload ?? '');
  });
  await listener.query('listen pgmcp_changes');
});

afterAll(async () => {
  await sql.query(
    `delete from pgmcp.resources where uri like 'notes:///capture-%'`,
  );
  await listener.end();
  await sql.end();
});

async function logged(prefix: string) {
  const { rows } = await sql.query<{
    uri: string;
    kind: string;
    readers_before: string[] | null;
    readers_after: string[] | null;
  }>(
    `select uri, kind, readers_before, readers_after from pgmcp.changes
      where uri like $1 order by seq`,
    [`${prefix}%`],
  );
  return rows;
}

describe('capture triggers on pgmcp.resources', () => {
  it('log creates, updates and deletes with the readers before and after', async () => {
    const p = 'notes:///capture-crud/';
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers) values ($1, 'a', 'x', '{support}')`,
      [`${p}a`],
    );
    await sql.query(
      `update pgmcp.resources set readers = '{finance}' where uri = $1`,
      [`${p}a`],
    );
    await sql.query(`delete from pgmcp.resources where uri = $1`, [`${p}a`]);
    expect(await logged(p)).toEqual([
      {
        uri: `${p}a`,
        kind: 'created',
        readers_before: null,
        readers_after: ['support'],
      },
      {
        uri: `${p}a`,
        kind: 'updated',
        readers_before: ['support'],
        readers_after: ['finance'],
      },
      {
        uri: `${p}a`,
        kind: 'deleted',
        readers_before: ['finance'],
        readers_after: null,
      },
    ]);
  });

  it('log a URI change as a delete of the old URI and a create of the new one', async () => {
    const p = 'notes:///capture-rename/';
    await sql.query(
      `insert into pgmcp.resources (uri, name, text) values ($1, 'a', 'x')`,
      [`${p}old`],
    );
    await sql.query(`update pgmcp.resources set uri = $2 where uri = $1`, [
      `${p}old`,
      `${p}new`,
    ]);
    expect(
      (await logged(p)).map((row) => [row.kind, row.uri.slice(p.length)]),
    ).toEqual([
      ['created', 'old'],
      ['deleted', 'old'],
      ['created', 'new'],
    ]);
  });

  it('log nothing, and leave lastModified alone, for an update that changes nothing', async () => {
    const p = 'notes:///capture-noop/';
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, updated_at) values ($1, 'a', 'x', '2000-01-01')`,
      [`${p}a`],
    );
    await sql.query(`update pgmcp.resources set text = text where uri = $1`, [
      `${p}a`,
    ]);
    const { rows } = await sql.query<{ updated_at: Date }>(
      'select updated_at from pgmcp.resources where uri = $1',
      [`${p}a`],
    );
    expect(rows[0]?.updated_at.toISOString()).toBe('2000-01-01T00:00:00.000Z');
    expect((await logged(p)).map((row) => row.kind)).toEqual(['created']);
  });

  it('notify once per statement with a small JSON payload, however many rows', async () => {
    const p = 'notes:///capture-bulk/';
    payloads.length = 0;
    await sql.query(
      `insert into pgmcp.resources (uri, name, text)
       select $1 || n, 'n', repeat('x', 10000) from generate_series(1, 500) n`,
      [p],
    );
    await sql.query(
      `insert into pgmcp.resources (uri, name, text) values ($1, 'one', 'x')`,
      [`${p}single`],
    );
    // Other files write to this database too: keep the payloads of these two statements.
    const ours = () =>
      payloads
        .map((payload) => JSON.parse(payload) as Record<string, unknown>)
        .filter(
          (payload) =>
            payload['rows'] === 500 || payload['uri'] === `${p}single`,
        );
    await vi.waitFor(() => expect(ours().length).toBeGreaterThanOrEqual(2), {
      timeout: 5000,
      interval: 10,
    });
    expect(ours()).toEqual([
      { seq: match.any(Number), rows: 500 },
      { seq: match.any(Number), uri: `${p}single` },
    ]);
    expect(Math.max(...payloads.map((payload) => payload.length))).toBeLessThan(
      8000,
    );
    expect(await logged(p)).toHaveLength(501);
  });

  it('hide log rows from a role that could read the resource neither before nor after', async () => {
    const p = 'notes:///capture-rls/';
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers) values ($1, 'a', 'x', '{finance}')`,
      [`${p}a`],
    );
    await sql.query('begin');
    try {
      for (const [role, expected] of [
        ['support', 0],
        ['finance', 1],
        ['admin', 1],
      ] as const) {
        await sql.query(`set local role ${role}`);
        const { rows } = await sql.query(
          'select 1 from pgmcp.changes where uri = $1',
          [`${p}a`],
        );
        expect(rows.length, role).toBe(expected);
        await sql.query('reset role');
      }
    } finally {
      await sql.query('rollback');
    }
  });
});
