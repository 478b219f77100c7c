// Change capture in SQL (migrations/0004, and 0029 for pgmcp.resources): what the triggers log for
// each kind of write, what they notify, and what they leave alone, for single-row writes (one
// statement planned once per session) and for writes of many rows (planned for their own sizes).
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

type Payload = Record<string, unknown>;

/** The wake-ups `keep` selects among those received, once at least `count` of them have arrived. */
async function received(
  keep: (payload: Payload) => boolean,
  count: number,
): Promise<Payload[]> {
  const kept = () =>
    payloads.map((payload) => JSON.parse(payload) as Payload).filter(keep);
  await vi.waitFor(() => expect(kept().length).toBeGreaterThanOrEqual(count), {
    timeout: 5000,
    interval: 10,
  });
  return kept();
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
    const ours = await received(
      (payload) => payload['rows'] === 500 || payload['uri'] === `${p}single`,
      2,
    );
    expect(ours).toEqual([
      { seq: match.any(Number), rows: 500 },
      { seq: match.any(Number), uri: `${p}single` },
    ]);
    expect(Math.max(...payloads.map((payload) => payload.length))).toBeLessThan(
      8000,
    );
    expect(await logged(p)).toHaveLength(501);
  });

  it('notify a single-row update and delete with the seq and URI of the row they logged', async () => {
    const p = 'notes:///capture-single/';
    await sql.query(
      `insert into pgmcp.resources (uri, name, text) values ($1, 'a', 'x')`,
      [`${p}a`],
    );
    payloads.length = 0;
    await sql.query(`update pgmcp.resources set text = 'y' where uri = $1`, [
      `${p}a`,
    ]);
    await sql.query(`delete from pgmcp.resources where uri = $1`, [`${p}a`]);
    const { rows } = await sql.query<{ seq: string; kind: string }>(
      `select seq::text, kind from pgmcp.changes where uri = $1 order by seq`,
      [`${p}a`],
    );
    expect(rows.map((row) => row.kind)).toEqual([
      'created',
      'updated',
      'deleted',
    ]);
    // The insert's own notification may arrive after the reset above: keep the two writes'.
    const seqs = [Number(rows[1]?.seq), Number(rows[2]?.seq)];
    const ours = await received(
      (payload) => seqs.includes(payload['seq'] as number),
      2,
    );
    expect(ours).toEqual([
      { seq: seqs[0], uri: `${p}a` },
      { seq: seqs[1], uri: `${p}a` },
    ]);
  });

  it('log a many-row update row by row: changed, renamed and unchanged rows, one notification', async () => {
    const p = 'notes:///capture-mixed/';
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers)
       values ($1 || 'changed', 'a', 'x', '{support}'), ($1 || 'renamed', 'b', 'x', '{finance}'),
              ($1 || 'same', 'c', 'x', '{support}')`,
      [p],
    );
    payloads.length = 0;
    await sql.query(
      `update pgmcp.resources
          set text = case when uri = $1 || 'changed' then 'y' else text end,
              uri = case when uri = $1 || 'renamed' then $1 || 'moved' else uri end
        where uri like $1 || '%'`,
      [p],
    );
    const rows = (await logged(p)).slice(3);
    expect(
      rows
        .map((row) => [
          row.kind,
          row.uri.slice(p.length),
          row.readers_before,
          row.readers_after,
        ])
        .sort(),
    ).toEqual(
      [
        ['updated', 'changed', ['support'], ['support']],
        ['deleted', 'renamed', ['finance'], null],
        ['created', 'moved', null, ['finance']],
      ].sort(),
    );
    const { rows: last } = await sql.query<{ seq: string }>(
      `select max(seq)::text as seq from pgmcp.changes where uri like $1`,
      [`${p}%`],
    );
    const ours = await received(
      (payload) => payload['seq'] === Number(last[0]?.seq),
      1,
    );
    expect(ours).toEqual([{ seq: Number(last[0]?.seq), rows: 3 }]);
  });

  it("plan a many-row write for its own size, whatever the session's earlier writes were, and a small one not at all", async () => {
    // PL/pgSQL keeps a statement's plan for the session: had the many-row path kept the plan of
    // an earlier two-row write (made for two rows, a nested loop at worst), this 2,000-row update
    // would run it. The one-row statement, gated by a one-time filter, must not read the rows;
    // small writes must not plan at all.
    const p = 'notes:///capture-plans/';
    const session = new pg.Client({ connectionString: testDatabaseUrl() });
    await session.connect();
    const plans: string[] = [];
    session.on('notice', (notice) => plans.push(notice.message ?? ''));
    try {
      await session.query(
        `insert into pgmcp.resources (uri, name, text)
         select $1 || n, 'n', 'x' from generate_series(1, 2000) n`,
        [p],
      );
      await session.query(
        `update pgmcp.resources set text = 'two' where uri in ($1 || '1', $1 || '2')`,
        [p],
      );
      await session.query("load 'auto_explain'");
      await session.query(`set auto_explain.log_min_duration = 0;
        set auto_explain.log_nested_statements = on;
        set auto_explain.log_analyze = on;
        set auto_explain.log_timing = off;
        set auto_explain.log_level = notice`);
      await session.query(
        `update pgmcp.resources set text = 'many' where uri like $1 || '%'`,
        [p],
      );
      plans.push('-- small writes --');
      for (const small of [
        `update pgmcp.resources set text = 'ten' where uri like $1 || '1_'`,
        `update pgmcp.resources set text = 'ten' where uri = $1 || '1'`,
        `update pgmcp.resources set text = 'none' where uri = $1 || 'none'`,
        `delete from pgmcp.resources where uri = $1 || 'none'`,
        `insert into pgmcp.resources (uri, name, text) select $1 || 'none', 'n', 'x' where false`,
      ])
        await session.query(small, [p]);
    } finally {
      await session.end();
    }
    const small = plans.indexOf('-- small writes --');
    const logging = plans
      .slice(0, small)
      .filter((plan) => plan.includes('insert into pgmcp.changes'));
    const onePath = logging.find((plan) => plan.includes('cross join'));
    const manyPath = logging.find((plan) => plan.includes('with pairs'));
    expect(onePath).toMatch(
      /One-Time Filter[^\n]*\n\s*->[^\n]*\(never executed\)/,
    );
    // Planned for this statement: the planner was told the transition tables hold 2,000 rows.
    expect(manyPath).toMatch(/Named Tuplestore Scan +\(cost=\S+ rows=2000 /);
    // Writes of up to 100 rows (ten rows; one row unchanged; no row) plan nothing: the ten-row
    // update runs the plan kept from the two-row one, and none runs the statement made per write.
    const kept = plans.slice(small);
    expect(
      kept.find((plan) => plan.includes('join new_rows n on o.id = n.id')),
    ).toMatch(/Named Tuplestore Scan +\(cost=\S+ rows=2 /);
    expect(
      kept.filter((plan) =>
        /with inserted as \((with pairs|insert)/.test(plan),
      ),
    ).toEqual([]);
    expect(
      (await logged(p)).filter((row) => row.kind === 'updated'),
    ).toHaveLength(2 + 2000 + 11);
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
