// The guard of the request pipeline (src/db/implicit-transaction.ts drives pg's internal Connection
// API): it accepts the pg this process runs and refuses any pg it was not verified with.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  installedPipelineDriver,
  PIPELINE_VERIFIED,
  pipelineDriverProblem,
} from '../../src/db/implicit-transaction.js';
import * as db from '../../src/db/index.js';
import { assertDriverPatches } from '../../src/db/pool.js';
import { testDatabaseUrl } from '../setup/harness.js';

const INSTALLED = installedPipelineDriver();

/** A Connection class with `methods` on its prototype; `parsed` says whether instances get parsedStatements. */
function fakeConnection(methods: readonly string[], parsed = true): unknown {
  function Connection(this: Record<string, unknown>): void {
    if (parsed) this['parsedStatements'] = {};
  }
  for (const name of methods)
    (Connection.prototype as Record<string, unknown>)[name] = () => undefined;
  return Connection;
}

describe('request pipeline guard', () => {
  it('accepts the pg this process loads: the pinned version, its Connection and its value serialisation', () => {
    const { dependencies } = JSON.parse(
      readFileSync('package.json', 'utf8'),
    ) as { dependencies: Record<string, string> };
    expect(dependencies['pg']).toBe(PIPELINE_VERIFIED.pg);
    expect(dependencies['pg-protocol']).toBe(PIPELINE_VERIFIED.pgProtocol);
    expect(INSTALLED.version).toBe(PIPELINE_VERIFIED.pg);
    expect(INSTALLED.protocolVersion).toBe(PIPELINE_VERIFIED.pgProtocol);
    expect(INSTALLED.Connection).toBe(pg.Connection);
    expect(pipelineDriverProblem(INSTALLED)).toBeUndefined();
    expect(() => assertDriverPatches(INSTALLED)).not.toThrow();
  });

  it('refuses a pg version other than the verified one', () => {
    expect(pipelineDriverProblem({ ...INSTALLED, version: '8.24.0' })).toBe(
      `pg is 8.24.0, the pipeline is verified with pg ${PIPELINE_VERIFIED.pg} only`,
    );
  });

  it('refuses a pg that loads another pg-protocol version (a nested copy)', () => {
    expect(
      pipelineDriverProblem({ ...INSTALLED, protocolVersion: '1.17.0' }),
    ).toBe(
      `pg loads pg-protocol 1.17.0, the pipeline is verified with ${PIPELINE_VERIFIED.pgProtocol} only`,
    );
  });

  it('refuses a Connection whose bind method was renamed', () => {
    const Connection = fakeConnection([
      'parse',
      'bindPortal',
      'describe',
      'execute',
      'sync',
    ]);
    expect(pipelineDriverProblem({ ...INSTALLED, Connection })).toBe(
      "pg's Connection has no bind method",
    );
  });

  it('refuses a Connection whose instances keep no parsedStatements table', () => {
    const Connection = fakeConnection(
      ['parse', 'bind', 'describe', 'execute', 'sync'],
      false,
    );
    expect(pipelineDriverProblem({ ...INSTALLED, Connection })).toBe(
      "pg's Connection has no parsedStatements table",
    );
  });

  it('refuses a pg whose utils.prepareValue is gone', () => {
    expect(
      pipelineDriverProblem({ ...INSTALLED, prepareValue: undefined }),
    ).toBe("pg's lib/utils.js has no prepareValue function");
  });

  it('fails start-up naming the cause and the way to run without the pipeline', () => {
    expect(() =>
      assertDriverPatches({ ...INSTALLED, version: '9.0.0' }),
    ).toThrow(/request pipeline .*pg is 9\.0\.0.*PGMCP_DRIVER_PATCHES=off/);
  });
});

const ROLE = 'pgmcp_test_pipeline_reader';
const WHO: db.PreparedQuery<Record<string, never>, unknown> = {
  name: 'test_pipeline_who',
  text: `select current_user as who, current_setting('request.jwt.claims', true) as claims,
           current_setting('transaction_read_only') as read_only, array['a', null]::text[] as list`,
  values: () => [],
};

describe('PGMCP_DRIVER_PATCHES=off', () => {
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    await admin.query(`do $$ begin
      if not exists (select from pg_roles where rolname = '${ROLE}') then create role ${ROLE} nologin; end if;
    end $$`);
  });
  afterAll(async () => {
    await admin.query(`drop role if exists ${ROLE}`);
    await admin.end();
  });

  it("gives the rows the pipeline gives, through pg's public API, with and without a role", async () => {
    vi.stubEnv('PGMCP_DRIVER_PATCHES', 'off');
    vi.resetModules();
    const unpipelined = await import('../../src/db/index.js');
    expect((await import('../../src/db/pool.js')).PIPELINE).toBe(false);
    vi.unstubAllEnvs();
    const options = {
      connectionString: testDatabaseUrl(),
      poolSize: 1,
      statementTimeoutMs: 5000,
      onError: () => undefined,
    };
    const on = db.createDatabase(options);
    const off = unpipelined.createDatabase(options);
    const signal = new AbortController().signal;
    try {
      for (const principal of [
        { role: ROLE, claims: { tenant: 'a' } },
        { role: null, claims: {} },
      ])
        for (const query of [WHO, { ...WHO, textOutput: true }]) {
          const rows = await db.runRequestQuery(
            on,
            principal,
            signal,
            query,
            {},
          );
          expect(rows).toHaveLength(1);
          expect(
            await unpipelined.runRequestQuery(
              off,
              principal,
              signal,
              query,
              {},
            ),
          ).toEqual(rows);
        }
    } finally {
      await on.close();
      await off.close();
    }
  });
});
