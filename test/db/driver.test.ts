// The driver internals' start-up probe (src/db/driver/probe.ts): it accepts the pg this process
// runs, finds a pg whose private members differ, and such a pg never stops the server: it starts,
// warns once, and answers through pg's public API exactly as it would through the internals.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  driverInternalsProblem,
  installedDriver,
  useDriverInternals,
  type DriverShape,
} from '../../src/db/driver/index.js';
import * as db from '../../src/db/index.js';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';

const INSTALLED = installedDriver();

/** A Connection class with `methods` on its prototype; `parsed` says whether instances get parsedStatements. */
function fakeConnection(methods: readonly string[], parsed = true): unknown {
  function Connection(this: Record<string, unknown>): void {
    if (parsed) this['parsedStatements'] = {};
  }
  for (const name of methods)
    (Connection.prototype as Record<string, unknown>)[name] = () => undefined;
  return Connection;
}

/** pg's Query with one of the calls pg makes on a Submittable renamed. */
function queryWithout(name: string): unknown {
  class Query {}
  for (const key of Object.getOwnPropertyNames(pg.Query.prototype))
    if (key !== name && key !== 'constructor')
      Object.defineProperty(
        Query.prototype,
        key,
        Object.getOwnPropertyDescriptor(pg.Query.prototype, key) ?? {},
      );
  return Query;
}

describe('driver internals probe', () => {
  it('accepts the pg this process loads', () => {
    expect(driverInternalsProblem(INSTALLED)).toBeUndefined();
    expect(INSTALLED.Connection).toBe(pg.Connection);
  });

  it('finds a Connection whose bind method was renamed', () => {
    const Connection = fakeConnection([
      'parse',
      'bindPortal',
      'describe',
      'execute',
      'sync',
    ]);
    expect(driverInternalsProblem({ ...INSTALLED, Connection })).toBe(
      "pg's Connection has no bind method",
    );
  });

  it('finds a Connection whose instances keep no parsedStatements table', () => {
    const Connection = fakeConnection(
      ['parse', 'bind', 'describe', 'execute', 'sync'],
      false,
    );
    expect(driverInternalsProblem({ ...INSTALLED, Connection })).toBe(
      "pg's Connection has no parsedStatements table",
    );
  });

  it('finds a Connection whose methods write nothing (they exist but do not behave)', () => {
    const Connection = fakeConnection([
      'parse',
      'bind',
      'describe',
      'execute',
      'sync',
    ]);
    expect(driverInternalsProblem({ ...INSTALLED, Connection })).toMatch(
      /^pg's Connection wrote messages "" for Parse, Bind, Describe, Execute, Sync$/,
    );
  });

  it('finds a pg whose utils.prepareValue is gone or serialises differently', () => {
    expect(
      driverInternalsProblem({ ...INSTALLED, prepareValue: undefined }),
    ).toBe("pg's lib/utils.js has no prepareValue function");
    expect(
      driverInternalsProblem({
        ...INSTALLED,
        prepareValue: (value: unknown) => JSON.stringify(value),
      }),
    ).toBe(
      "pg's prepareValue no longer serialises arrays and booleans as PostgreSQL text",
    );
  });

  it('finds a Query without one of the calls pg makes on its active query', () => {
    expect(
      driverInternalsProblem({
        ...INSTALLED,
        Query: queryWithout('handleDataRow'),
      }),
    ).toBe("pg's Query has no handleDataRow method");
  });

  it('finds a pg-protocol whose DataRow messages share one array', () => {
    const shared: unknown[] = [];
    class Parser {
      parse(_buffer: Buffer, callback: (message: unknown) => void): void {
        shared.splice(0, shared.length, 'a', null);
        callback({ fields: shared });
        callback({ fields: shared });
      }
    }
    expect(driverInternalsProblem({ ...INSTALLED, Parser })).toBe(
      "pg-protocol's DataRow messages no longer carry a new array of text values each",
    );
  });

  it('refuses a PGMCP_DRIVER_PATCHES other than on or off, and never probes when off', () => {
    const warn = (message: string) => {
      throw new Error(message);
    };
    expect(() => useDriverInternals({ setting: 'auto', warn })).toThrow(
      'PGMCP_DRIVER_PATCHES is "auto"; it must be on or off',
    );
    const broken: DriverShape = { ...INSTALLED, Parser: undefined };
    expect(useDriverInternals({ setting: 'off', shape: broken, warn })).toBe(
      false,
    );
    expect(useDriverInternals({ setting: 'on', warn })).toBe(true);
  });
});

const ROLE = 'pgmcp_test_driver_reader';
const WHO: db.PreparedQuery<Record<string, never>, unknown> = {
  name: 'test_driver_who',
  text: `select current_user as who, current_setting('request.jwt.claims', true) as claims,
           current_setting('transaction_read_only') as read_only, array['a', null]::text[] as list`,
  values: () => [],
};

describe('a pg whose internals differ', () => {
  /** A pg whose Connection renamed bind: what a patch release could ship. */
  const OTHER_PG: DriverShape = {
    ...INSTALLED,
    Connection: fakeConnection([
      'parse',
      'bindMessage',
      'describe',
      'execute',
      'sync',
    ]),
  };
  let admin: pg.Client;
  let internal: TestServer;
  let publicApi: TestServer;
  const lines: string[] = [];

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    await admin.query(`do $$ begin
      if not exists (select from pg_roles where rolname = '${ROLE}') then create role ${ROLE} nologin; end if;
    end $$`);
    const principal = { role: 'support', claims: { sub: 'driver-test' } };
    // The internals on even in CI's public-API run (PGMCP_DRIVER_PATCHES=off).
    internal = await startTestServer({ principal, driverPatches: 'on' });
    publicApi = await startTestServer({
      principal,
      driverPatches: 'on',
      driverShape: OTHER_PG,
      logLines: lines,
    });
  });
  afterAll(async () => {
    await internal.close();
    await publicApi.close();
    await admin.query(`drop role if exists ${ROLE}`);
    await admin.end();
  });

  it('starts the server on the public API and warns once, naming the cause', async () => {
    expect(internal.db.driverInternals).toBe(true);
    expect(publicApi.db.driverInternals).toBe(false);
    expect(publicApi.db.pipelines).toBeUndefined();
    const warnings = lines.filter((line) =>
      line.includes('driver internals (src/db/driver/) are off'),
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("pg's Connection has no bind method");
    expect(warnings[0]).toContain('warn');
    // The same pg for another handle of the process: no second warning.
    const again: string[] = [];
    const other = db.createDatabase({
      connectionString: testDatabaseUrl(),
      poolSize: 1,
      statementTimeoutMs: 5000,
      onError: () => undefined,
      onWarning: (message) => again.push(message),
      driverShape: OTHER_PG,
    });
    await other.close();
    expect(again).toEqual([]);
  });

  it('answers resources/list, resources/read and the query tool as the internals do', async () => {
    const list = await call(internal.url, 'resources/list', {});
    expect(list.error).toBeUndefined();
    expect(await call(publicApi.url, 'resources/list', {})).toEqual(list);
    const first = (list.result as { resources: { uri: string }[] })
      .resources[0];
    expect(first).toBeDefined();
    const read = await call(internal.url, 'resources/read', {
      uri: first?.uri,
    });
    expect(read.error).toBeUndefined();
    expect(
      await call(publicApi.url, 'resources/read', { uri: first?.uri }),
    ).toEqual(read);
    const query = {
      name: 'query',
      arguments: {
        sql: "select current_user as who, $1::int + 1 as n, array['a', null] as list",
        params: ['41'],
      },
    };
    const ran = await call(internal.url, 'tools/call', query);
    expect(ran.result).toMatchObject({
      structuredContent: { rows: [['support', '42', '["a",null]']] },
    });
    expect(await call(publicApi.url, 'tools/call', query)).toEqual(ran);
  });

  it("gives the rows the internals give through pg's public API, with and without a role", async () => {
    const signal = new AbortController().signal;
    for (const principal of [
      { role: ROLE, claims: { tenant: 'a' } },
      { role: null, claims: {} },
    ])
      for (const query of [WHO, { ...WHO, textOutput: true }]) {
        const rows = await db.runRequestQuery(
          { db: internal.db, principal, cancellation: signal },
          query,
          {},
        );
        expect(rows).toHaveLength(1);
        expect(
          await db.runRequestQuery(
            { db: publicApi.db, principal, cancellation: signal },
            query,
            {},
          ),
        ).toEqual(rows);
      }
  });
});
