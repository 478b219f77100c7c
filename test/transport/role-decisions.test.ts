// Role decisions (may the login assume the role a token names?) are cached, bounded, forgotten
// when the change feed reports a schema change, and never kept past their max age: a role revoked
// from the login, or dropped, while its tokens live is refused within that time.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticate } from '../../src/app/index.js';
import { mintToken } from '../../src/auth/index.js';
import { loadConfig } from '../../src/config/index.js';
import {
  createRoleChecker,
  type DatabaseHandle,
  type RoleChecker,
} from '../../src/db/index.js';
import { createLogger } from '../../src/log.js';
import {
  mcpHeaders,
  META,
  postRaw,
  startTestServer,
  testDatabaseUrl,
  until,
  type TestServer,
} from '../setup/harness.js';

const SECRET = 'role-decisions-test-secret-0123456789-abcdef';
const AUDIENCE = 'http://127.0.0.1:3000/mcp';
const MAX_AGE_MS = 10_000;
const suffix = randomBytes(4).toString('hex');
const login = `pgmcp_test_rd_login_${suffix}`;
const [revoked, dropped, fed, first, second] = [
  'revoked',
  'dropped',
  'fed',
  'first',
  'second',
].map((name) => `pgmcp_test_rd_${name}_${suffix}`) as [
  string,
  string,
  string,
  string,
  string,
];
const marker = `pgmcp_test_rd_marker_${suffix}`;
let admin: pg.Client;
let loginUrl: string;

const listBody = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'resources/list',
  params: { _meta: META },
});

/** The HTTP status of a resources/list with a fresh token for `role`. */
async function statusAs(url: string, role: string): Promise<number> {
  const token = await mintToken({
    secret: SECRET,
    role,
    claims: {},
    audience: AUDIENCE,
    issuer: 'http://127.0.0.1:3000',
    ttlSeconds: 600,
  });
  const response = await postRaw(
    url,
    listBody,
    { ...mcpHeaders('resources/list'), Authorization: `Bearer ${token}` },
    'resources/list',
  );
  return response.status;
}

/**
 * A server that checks roles with `makeChecker`'s checker (made once its pool is): as `login`,
 * or with the change feed as the test database's own login (which may read the change log).
 */
async function serveWithChecker(
  makeChecker: (db: DatabaseHandle) => RoleChecker,
  live: boolean,
): Promise<TestServer> {
  const made: { checker?: RoleChecker } = {};
  const authenticate = createAuthenticate({
    config: loadConfig(
      {},
      {
        PGMCP_JWT_SECRET: SECRET,
        PGMCP_JWT_AUDIENCE: AUDIENCE,
        DATABASE_URL: 'postgres://unused@127.0.0.1/unused',
      },
    ),
    secret: SECRET,
    audience: AUDIENCE,
    canAssume: (role) => (made.checker as RoleChecker)(role),
    logger: createLogger({
      stream: { write: () => true } as unknown as NodeJS.WritableStream,
    }),
  });
  const server = await startTestServer({
    databaseUrl: live ? testDatabaseUrl() : loginUrl,
    authenticate: (request) => authenticate(request),
    live: live ? {} : undefined,
    roleDecisions: { clear: () => made.checker?.clear() },
  });
  made.checker = makeChecker(server.db);
  return server;
}

/** `db` with its pool's queries counted (the database itself answers them). */
function counting(db: DatabaseHandle): {
  db: DatabaseHandle;
  count: () => number;
} {
  let queries = 0;
  const pool = {
    query: (...args: Parameters<DatabaseHandle['pool']['query']>) => {
      queries += 1;
      return (db.pool.query as (...a: unknown[]) => unknown)(...args);
    },
  };
  return {
    db: { ...db, pool } as unknown as DatabaseHandle,
    count: () => queries,
  };
}

beforeAll(async () => {
  admin = new pg.Client({ connectionString: testDatabaseUrl() });
  await admin.connect();
  const password = randomBytes(16).toString('hex');
  await admin.query(
    `create role ${login} login noinherit password '${password}'`,
  );
  for (const role of [revoked, dropped, fed, first, second])
    await admin.query(`create role ${role} nologin`);
  await admin.query(
    `grant ${[revoked, dropped, fed, first, second].join(', ')} to ${login}`,
  );
  const url = new URL(testDatabaseUrl());
  url.username = login;
  url.password = password;
  loginUrl = url.toString();
});

afterAll(async () => {
  await admin.query(`drop function if exists ${marker}()`);
  await admin.query(
    `drop role if exists ${[revoked, dropped, fed, first, second].join(', ')}`,
  );
  await admin.query(`drop role ${login}`);
  await admin.end();
});

describe('role decisions past their max age', () => {
  let clock = 0;
  let server: TestServer;

  beforeAll(async () => {
    server = await serveWithChecker(
      (db) =>
        createRoleChecker(db, {
          maxEntries: 100,
          maxAgeMs: MAX_AGE_MS,
          now: () => clock,
        }),
      false,
    );
  });

  afterAll(async () => {
    await server.close();
  });

  it('refuses a role revoked from the login once its decision reaches the max age', async () => {
    clock = 1_000_000;
    expect(await statusAs(server.url, revoked)).toBe(200);
    await admin.query(`revoke ${revoked} from ${login}`);
    clock += MAX_AGE_MS - 1;
    expect(await statusAs(server.url, revoked)).toBe(200);
    clock += 1;
    expect(await statusAs(server.url, revoked)).toBe(403);
  });

  it('refuses a dropped role once its decision reaches the max age', async () => {
    clock = 2_000_000;
    expect(await statusAs(server.url, dropped)).toBe(200);
    await admin.query(`drop role ${dropped}`);
    clock += MAX_AGE_MS;
    expect(await statusAs(server.url, dropped)).toBe(403);
  });
});

describe('role decisions and the change feed', () => {
  let server: TestServer;

  beforeAll(async () => {
    // The clock stands still: only the feed can make a decision go.
    server = await serveWithChecker(
      (db) =>
        createRoleChecker(db, {
          maxEntries: 100,
          maxAgeMs: MAX_AGE_MS,
          now: () => 0,
        }),
      true,
    );
  });

  afterAll(async () => {
    await server.close();
  });

  it('forgets every decision when the feed reports a schema change', async () => {
    expect(await statusAs(server.url, fed)).toBe(200);
    await admin.query(`drop role ${fed}`);
    await admin.query(
      `create function ${marker}() returns int language sql as 'select 1'`,
    );
    const status = await until(
      async () => {
        const current = await statusAs(server.url, fed);
        return current === 200 ? undefined : current;
      },
      10_000,
      `the decision that ${fed} may log in to be forgotten`,
    );
    expect(status).toBe(403);
  });

  it('hears nothing of role DDL or role grants, which is why decisions have a max age', async () => {
    const { rows } = await admin.query<{ seq: string }>(
      `select coalesce(max(seq), 0)::text as seq from pgmcp.changes`,
    );
    const probe = `pgmcp_test_rd_probe_${suffix}`;
    await admin.query(`create role ${probe} nologin`);
    await admin.query(`grant ${probe} to ${login}`);
    await admin.query(`revoke ${probe} from ${login}`);
    await admin.query(`alter role ${probe} bypassrls`);
    await admin.query(`drop role ${probe}`);
    const logged = await admin.query<{ detail: { command?: string } | null }>(
      `select detail from pgmcp.changes where seq > $1 and kind = 'schema'`,
      [rows[0]?.seq],
    );
    const commands = logged.rows.map((row) => row.detail?.command ?? '');
    expect(commands.filter((command) => / ROLE$/.test(command))).toEqual([]);
  });
});

describe('the role decision cache', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ databaseUrl: loginUrl });
  });

  afterAll(async () => {
    await server.close();
  });

  it('asks the database once per role within the max age, once for callers asking together', async () => {
    const counted = counting(server.db);
    const canAssume = createRoleChecker(counted.db, {
      maxEntries: 10,
      maxAgeMs: MAX_AGE_MS,
      now: () => 0,
    });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => canAssume(first)),
    );
    expect(answers).toEqual([true, true, true, true, true]);
    expect(await canAssume(first)).toBe(true);
    expect(counted.count()).toBe(1);
  });

  it('keeps at most maxEntries decisions, dropping the oldest', async () => {
    const counted = counting(server.db);
    const canAssume = createRoleChecker(counted.db, {
      maxEntries: 2,
      maxAgeMs: MAX_AGE_MS,
      now: () => 0,
    });
    await canAssume(first);
    await canAssume(second);
    await canAssume(first);
    expect(counted.count()).toBe(2);
    expect(await canAssume(`pgmcp_test_rd_unknown_${suffix}`)).toBe(false);
    expect(counted.count()).toBe(3);
    await canAssume(second);
    expect(counted.count()).toBe(3);
    await canAssume(first);
    expect(counted.count()).toBe(4);
  });

  it('keeps nothing with maxEntries 0', async () => {
    const counted = counting(server.db);
    const canAssume = createRoleChecker(counted.db, {
      maxEntries: 0,
      maxAgeMs: MAX_AGE_MS,
    });
    await canAssume(first);
    await canAssume(first);
    expect(counted.count()).toBe(2);
  });
});
