// A server whose database has a hot standby (issue 36 point 1), over HTTP, against a real primary
// and standby (test/setup/standby-pair.ts): query and explain run on the standby and say so, their
// audit rows are on the primary, and a read that follows a change notification sees the change;
// once the primary is lost and the standby promoted, calls run and are audited on the new primary.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeRoleFunctions } from '../../src/db/index.js';
import {
  call,
  listen,
  startTestServer,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import {
  pairStandbys,
  startStandbyPair,
  waitFor,
  type StandbyPair,
} from '../setup/standby-pair.js';

let pair: StandbyPair;
let tools: TestServer;
let plain: TestServer;
const logLines: string[] = [];

const standbySettings = () =>
  pairStandbys(pair, {
    waitMs: 300,
    log: (line: string) => logLines.push(line),
  });

beforeAll(async () => {
  pair = await startStandbyPair();
  await migrateDatabase(pair.primaryUrl, async (admin: pg.Client) => {
    await admin.query(`create role standby_tools; create role standby_plain;
      create table standby_rows (id int primary key);
      insert into standby_rows values (1), (2);
      grant select on standby_rows to standby_tools, standby_plain;`);
    await storeRoleFunctions(admin, 'standby_tools');
  });
  await pair.caughtUp();
  tools = await startTestServer({
    databaseUrl: pair.primaryUrl,
    principal: { role: 'standby_tools', claims: { sub: 'standby-test' } },
    standbys: standbySettings(),
    live: {},
  });
  plain = await startTestServer({
    databaseUrl: pair.primaryUrl,
    principal: { role: 'standby_plain', claims: {} },
    standbys: standbySettings(),
  });
}, 120_000);

afterAll(async () => {
  await tools?.close();
  await plain?.close();
  pair?.close();
});

async function tool(
  server: TestServer,
  name: string,
  args: Record<string, unknown>,
): Promise<{ text: string; structured: Record<string, unknown> }> {
  const { result, error } = await call(server.url, 'tools/call', {
    name,
    arguments: args,
  });
  expect(error).toBeUndefined();
  return {
    text: (result?.['content'] as { text: string }[])[0]?.text ?? '',
    structured: result?.['structuredContent'] as Record<string, unknown>,
  };
}

describe('a database with a standby', () => {
  it('runs query on the standby as the role, says so, and audits the call on the primary', async () => {
    await pair.caughtUp();
    const sql = `select pg_is_in_recovery()::text as recovery, current_user::text as who, count(*)::text as n from standby_rows /* ${Date.now()} */`;
    const { text, structured } = await tool(tools, 'query', { sql });
    expect(structured['rows']).toEqual([['true', 'standby_tools', '2']]);
    expect(structured['answered_by']).toEqual({
      server: 'standby',
      name: new URL(pair.standbyUrl).host,
    });
    expect(text).toContain(
      `answered by the standby ${new URL(pair.standbyUrl).host}`,
    );
    // A row before the statement ran on the standby, and the call's own row after it.
    const audit = await pair.sql(
      'primary',
      `select role, row_count::int, detail from pgmcp.audit where target = '${sql.replace(/'/g, "''")}' order by id`,
    );
    expect(audit).toEqual([
      {
        role: 'standby_tools',
        row_count: null,
        detail: {
          phase: 'started',
          server: new URL(pair.standbyUrl).host,
        },
      },
      { role: 'standby_tools', row_count: 1, detail: null },
    ]);
  });

  it('runs nothing on the standby when its first audit row cannot be written on the primary', async () => {
    const sql = `select 1 / 0 /* unaudited ${Date.now()} */`;
    await pair.sql(
      'primary',
      `alter table pgmcp.audit add constraint standby_test_refuse_started
         check (detail->>'phase' is distinct from 'started') not valid`,
    );
    try {
      const { error } = await call(tools.url, 'tools/call', {
        name: 'query',
        arguments: { sql },
      });
      expect(error).toMatchObject({ data: { code: 'UNAVAILABLE' } });
    } finally {
      await pair.sql(
        'primary',
        'alter table pgmcp.audit drop constraint standby_test_refuse_started',
      );
    }
    // Had the statement run, its row would carry its error, 22012 (division by zero); it carries
    // the refused audit write's, 23514.
    const audit = await pair.sql(
      'primary',
      `select sqlstate, detail from pgmcp.audit where target = '${sql.replace(/'/g, "''")}'`,
    );
    expect(audit).toEqual([
      { sqlstate: '23514', detail: { error: 'UNAVAILABLE' } },
    ]);
  });

  it('runs explain on the standby and says so', async () => {
    await pair.caughtUp();
    const { structured } = await tool(tools, 'explain', {
      sql: 'select * from standby_rows where id = 1',
    });
    expect(structured['plan']).toBeDefined();
    expect(structured['answered_by']).toMatchObject({ server: 'standby' });
  });

  it('runs query on the primary for a role whose functions are not on the standby, and logs it once', async () => {
    for (let i = 0; i < 2; i++) {
      const { structured } = await tool(plain, 'query', {
        sql: 'select pg_is_in_recovery()::text as recovery, current_user::text as who',
      });
      expect(structured['rows']).toEqual([['false', 'standby_plain']]);
      expect(structured['answered_by']).toEqual({
        server: 'primary',
        name: 'primary',
      });
    }
    expect(
      logLines.filter((line) =>
        line.includes('functions are not on this standby'),
      ),
    ).toHaveLength(1);
  });

  it('answers a read that follows an update notification with the update, though the standby has not replayed it', async () => {
    const uri = `test://standby/${Date.now()}`;
    await pair.sql(
      'primary',
      `insert into pgmcp.resources (uri, name, text, readers) values ('${uri}', 'n', 'v1', '{standby_tools}')`,
    );
    await pair.caughtUp();
    const read = async () => {
      const { result, error } = await call(
        tools.url,
        'resources/read',
        { uri },
        { 'Mcp-Name': uri },
      );
      expect(error).toBeUndefined();
      return (result?.['contents'] as { text: string }[])[0]?.text;
    };
    expect(await read()).toBe('v1');
    const stream = await listen(tools.url, { resourceSubscriptions: [uri] });
    await stream.waitFor((messages) => messages.length >= 1);
    await pair.sql('standby', 'select pg_wal_replay_pause()');
    try {
      await pair.sql(
        'primary',
        `update pgmcp.resources set text = 'v2' where uri = '${uri}'`,
      );
      await stream.waitFor(() => stream.updated().includes(uri));
      expect(await read()).toBe('v2');
      // The standby itself still has the old text: the answer came from the primary.
      const onStandby = await pair.sql(
        'standby',
        `select text from pgmcp.resources where uri = '${uri}'`,
      );
      expect(onStandby).toEqual([{ text: 'v1' }]);
    } finally {
      stream.close();
      await pair.sql('standby', 'select pg_wal_replay_resume()');
    }
  });

  // Last: the promotion cannot be undone.
  it('follows the standby when the primary is lost and the standby promoted: query answers on it and is audited there', async () => {
    await pair.caughtUp();
    pair.stopPrimary('immediate');
    await pair.promoteStandby();
    await waitFor(
      () =>
        tools.db.primary?.url === pair.standbyUrl &&
        tools.db.standbys?.states[0]?.state === 'promoted',
    );
    const sql = `select pg_is_in_recovery()::text as recovery, inet_server_port()::text as port /* after failover ${Date.now()} */`;
    const { structured } = await tool(tools, 'query', { sql });
    expect(structured['rows']).toEqual([
      ['false', new URL(pair.standbyUrl).port],
    ]);
    expect(structured['answered_by']).toEqual({
      server: 'primary',
      name: 'primary',
    });
    const audit = await pair.sql(
      'standby',
      `select role, row_count::int from pgmcp.audit where target = '${sql.replace(/'/g, "''")}'`,
    );
    expect(audit).toEqual([{ role: 'standby_tools', row_count: 1 }]);
    expect(
      logLines.some((line) =>
        line.startsWith(
          `primary moved from ${new URL(pair.primaryUrl).host} to ${new URL(pair.standbyUrl).host} (timeline 2)`,
        ),
      ),
    ).toBe(true);
  }, 120_000);
});
