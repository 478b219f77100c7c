// Issue 32 point 4: one caller cannot take the server. query/explain calls in flight are limited
// per token and per role, and together they hold at most a share of the request pool, so other
// roles' reads keep working while one token's slow statements run. This file has its own
// database, so the slow statements it counts are its own.
import type http from 'node:http';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/index.js';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  until,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

/** The statement every slow call runs; the test cancels it, it never runs out on its own. */
const SLOW = 'select pg_sleep(120) as slow';
let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;
/** A server whose tools hold one connection at most and wait for it. */
let waiting: TestServer;

/** Each request as the role and subject its X-Test-Role and X-Test-Sub headers name. */
function byHeader(request: {
  headers: { authorization?: string | undefined };
}): Promise<Principal> {
  const headers = request.headers as http.IncomingHttpHeaders;
  const role = headers['x-test-role'];
  const sub = headers['x-test-sub'];
  return Promise.resolve({
    role: typeof role === 'string' ? role : 'support',
    claims: typeof sub === 'string' ? { sub } : { purpose: 'no subject' },
  });
}

const as = (role: string, sub?: string): Record<string, string> => ({
  'X-Test-Role': role,
  ...(sub === undefined ? {} : { 'X-Test-Sub': sub }),
});

beforeAll(async () => {
  databaseUrl = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_tool_limits_test',
  );
  await migrateDatabase(databaseUrl);
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers)
     values ('notes:///limits/engineering', 'engineering', 'v1', array['engineering'])`,
  );
  server = await startTestServer({
    databaseUrl,
    authenticate: byHeader,
    poolSize: 4,
    poolWaitMs: 2000,
    statementTimeoutMs: 300_000,
    toolLimits: {
      perToken: 2,
      perRole: 3,
      connections: 3,
      waitMs: 0,
      roles: { finance: { toolCallsPerToken: 1 } },
    },
  });
  waiting = await startTestServer({
    databaseUrl,
    authenticate: byHeader,
    poolSize: 2,
    statementTimeoutMs: 300_000,
    toolLimits: { perToken: 2, perRole: 4, connections: 1, waitMs: 120_000 },
  });
});

/** Every call a test started: each has ended (so its slots are free) before the next test. */
const started: Tracked[] = [];

afterEach(async () => {
  await cancelSlow();
  await Promise.allSettled(started.splice(0).map((each) => each.answer));
});

afterAll(async () => {
  await server?.close();
  await waiting?.close();
  await sql?.end();
});

/** The slow statements running now. */
async function slowRunning(): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event = 'PgSleep'`,
  );
  return rows[0]?.n ?? 0;
}

async function cancelSlow(): Promise<void> {
  await sql.query(
    `select pg_cancel_backend(pid) from pg_stat_activity
      where datname = current_database() and wait_event = 'PgSleep'`,
  );
}

interface Tracked {
  readonly answer: Promise<Record<string, unknown>>;
  settled: boolean;
}

/** A query call whose result is kept, with whether it has come back. */
function query(
  target: TestServer,
  headers: Record<string, string>,
  statement = SLOW,
  tool = 'query',
): Tracked {
  const tracked: Tracked = {
    answer: call(
      target.url,
      'tools/call',
      { name: tool, arguments: { sql: statement } },
      headers,
    ).then(({ result, error }) => {
      tracked.settled = true;
      if (error !== undefined) throw new Error(JSON.stringify(error));
      return result as Record<string, unknown>;
    }),
    settled: false,
  };
  // A call still running when the servers close fails; the test has stopped looking by then.
  tracked.answer.catch(() => undefined);
  started.push(tracked);
  return tracked;
}

function textOf(result: Record<string, unknown>): string {
  const [first] = result['content'] as { text: string }[];
  return first?.text ?? '';
}

/** Wait until `count` slow statements run. */
async function untilRunning(count: number): Promise<void> {
  let running = 0;
  await until(
    async () => (running = await slowRunning()) === count,
    20_000,
    () => `${count} slow statements running (${running} are)`,
  );
}

describe('query and explain call limits', () => {
  it("keeps other roles' reads answering while one token runs as many slow queries as it may", async () => {
    const flood = Array.from({ length: 6 }, () =>
      query(server, as('support', 'alice')),
    );
    await untilRunning(2);
    // Four of the six are refused at once, as tool errors naming the limit.
    await until(
      () => flood.filter((each) => each.settled).length === 4,
      20_000,
      'four refusals',
    );
    const refused = flood.filter((each) => each.settled);
    for (const each of refused) {
      const result = await each.answer;
      expect(result['isError']).toBe(true);
      expect(textOf(result)).toMatch(/^TOOL_LIMIT: .*limit per token/);
    }
    // Another role lists and reads meanwhile.
    const list = await call(
      server.url,
      'resources/list',
      {},
      as('engineering', 'erin'),
    );
    expect(list.error).toBeUndefined();
    const [first] = list.result?.['resources'] as { uri: string }[];
    expect(first).toBeDefined();
    const read = await call(
      server.url,
      'resources/read',
      { uri: first?.uri },
      as('engineering', 'erin'),
    );
    expect(read.error).toBeUndefined();
    expect(read.result?.['contents']).toHaveLength(1);
    // …while the two slow queries are still running.
    expect(flood.filter((each) => !each.settled)).toHaveLength(2);
    expect(await slowRunning()).toBe(2);
    await cancelSlow();
    const ended = await Promise.all(
      flood
        .filter((each) => !refused.includes(each))
        .map((each) => each.answer),
    );
    expect(ended.map((each) => textOf(each))).toEqual([
      expect.stringContaining('57014'),
      expect.stringContaining('57014'),
    ]);
    // The token's calls are counted down once they end.
    const after = await query(server, as('support', 'alice'), 'select 1 as one')
      .answer;
    expect(after['isError']).toBeUndefined();
  });

  it('refuses a role past its limit, and any caller past the pool share, while other tokens have room', async () => {
    const alice = [
      query(server, as('support', 'alice')),
      query(server, as('support', 'alice')),
    ];
    await untilRunning(2);
    const bob = query(server, as('support', 'bob'));
    await untilRunning(3);
    // support has three calls in flight: bob's second is the role's fourth.
    const fourth = await query(server, as('support', 'bob')).answer;
    expect(fourth['isError']).toBe(true);
    expect(textOf(fourth)).toMatch(/^TOOL_LIMIT: .*limit per role/);
    // The tools' share (three connections) is full: another role's call is refused too…
    const other = await query(
      server,
      as('engineering', 'erin'),
      'select 1 as one',
      'explain',
    ).answer;
    expect(other['isError']).toBe(true);
    expect(textOf(other)).toMatch(/^TOOL_LIMIT: .*share of the pool/);
    // …but not its reads: the fourth connection is theirs.
    const list = await call(
      server.url,
      'resources/list',
      {},
      as('engineering', 'erin'),
    );
    expect(list.error).toBeUndefined();
    expect([...alice, bob].every((each) => !each.settled)).toBe(true);
  });

  it('applies a role override from the config file and tells tokens without sub apart by their claims', async () => {
    const first = query(server, as('finance', 'fiona'));
    await untilRunning(1);
    const second = await query(server, as('finance', 'fiona')).answer;
    expect(textOf(second)).toMatch(
      /^TOOL_LIMIT: .*1 query\/explain call in flight \(the limit per token\)/,
    );
    // Another finance token still has room (its role limit is the default 3).
    const other = query(server, as('finance', 'frank'));
    await untilRunning(2);
    expect(first.settled || other.settled).toBe(false);
    await cancelSlow();
    await Promise.all([first.answer, other.answer]);
    // Two calls of one token without `sub` are counted together.
    const anonymous = [
      query(server, as('support')),
      query(server, as('support')),
    ];
    await untilRunning(2);
    const third = await query(server, as('support')).answer;
    expect(textOf(third)).toMatch(/limit per token/);
    expect(anonymous.every((each) => !each.settled)).toBe(true);
  });

  it('lets a call wait for the share and run once a connection frees', async () => {
    const slow = query(waiting, as('support', 'alice'));
    await untilRunning(1);
    const queued = query(waiting, as('engineering', 'erin'), 'select 1 as one');
    // Still waiting while the share is held (it would have been refused with waitMs 0).
    const list = await call(
      waiting.url,
      'resources/list',
      {},
      as('engineering', 'erin'),
    );
    expect(list.error).toBeUndefined();
    expect(queued.settled).toBe(false);
    await cancelSlow();
    expect(textOf(await slow.answer)).toContain('57014');
    const result = await queued.answer;
    expect(result['isError']).toBeUndefined();
    expect(textOf(result)).toContain('one');
  });
});
