// Issue 32 points 1, 2 and 8 against the hostile corpus (hostile-corpus.ts): a statement cannot
// forge the claims row-level security reads, cannot reach what pgmcp cannot gate, and cannot read
// sensitive data through query or explain without consent; harmless equivalents still run.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import {
  createPayrollDatabase,
  ELICITATION,
  payrollServerOptions,
} from '../setup/payroll-fixture.js';
import {
  BOB_ROW,
  CLAIMS_FIXTURES,
  CLAIMS_FORGERIES,
  CONSENT_PATHS,
  consentFixtures,
  HARMLESS,
  UNGATEABLE,
} from './hostile-corpus.js';

const CONSENT_DATABASE = 'pgmcp_hostile_test';
const CONSENT_ROLE = 'pgmcp_hostile_reader';

let sql: pg.Client;
let alice: TestServer;
let payroll: TestServer;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(CLAIMS_FIXTURES);
  alice = await startTestServer({
    principal: { role: 'claims_reader', claims: { sub: 'alice' } },
    poolSize: 1,
  });
  const payrollUrl = await createPayrollDatabase(
    testDatabaseUrl(),
    CONSENT_DATABASE,
    [CONSENT_ROLE],
    [CONSENT_ROLE],
  );
  const owner = new pg.Client({ connectionString: payrollUrl });
  await owner.connect();
  await owner.query(consentFixtures(CONSENT_ROLE));
  await owner.end();
  payroll = await startTestServer(
    payrollServerOptions(payrollUrl, {
      role: CONSENT_ROLE,
      claims: { sub: 'reader' },
    }),
  );
});

afterAll(async () => {
  await alice?.close();
  await payroll?.close();
  await sql?.query('drop schema if exists hostile_probe cascade');
  await sql?.end();
});

async function tool(
  server: TestServer,
  name: 'query' | 'explain',
  sqlText: string,
): Promise<Record<string, unknown>> {
  const { result, error } = await call(server.url, 'tools/call', {
    _meta: ELICITATION,
    name,
    arguments: { sql: sqlText },
  });
  expect(error).toBeUndefined();
  return result ?? {};
}

function text(result: Record<string, unknown>): string {
  return (result['content'] as { text: string }[] | undefined)?.[0]?.text ?? '';
}

/** The next statement still runs as claims_reader with alice's claims on the same connection. */
async function expectAliceStill(): Promise<void> {
  const result = await tool(
    alice,
    'query',
    "select current_user::text as u, current_setting('request.jwt.claims', true)::json->>'sub' as sub",
  );
  expect(result['structuredContent']).toMatchObject({
    rows: [['claims_reader', 'alice']],
  });
}

describe('claims cannot be forged (point 1)', () => {
  it.each(CLAIMS_FORGERIES)(
    'refuses %s through query and explain, showing nothing of bob',
    async (_name, statement) => {
      for (const name of ['query', 'explain'] as const) {
        const result = await tool(alice, name, statement);
        expect(result['isError'], `${name}: ${text(result)}`).toBe(true);
        expect(text(result)).toMatch(/^ERROR 42501: pgmcp refuses/);
        expect(JSON.stringify(result)).not.toContain(BOB_ROW);
      }
      await expectAliceStill();
    },
  );

  it.each(UNGATEABLE)(
    'refuses %s, which pgmcp cannot gate',
    async (_name, statement) => {
      const result = await tool(alice, 'query', statement);
      expect(result['isError'], text(result)).toBe(true);
      expect(text(result)).toMatch(/^ERROR 42501: pgmcp refuses/);
      expect(JSON.stringify(result)).not.toContain(BOB_ROW);
    },
  );

  it.each(HARMLESS)('still runs %s', async (_name, statement, rows) => {
    const result = await tool(alice, 'query', statement);
    expect(result['isError'], text(result)).toBeUndefined();
    expect(result['structuredContent']).toMatchObject({ rows });
  });

  it('refuses anything but one SELECT, VALUES, TABLE or WITH … SELECT, with the parser’s position', async () => {
    const cases: [string, RegExp][] = [
      ['select 1; select 2', /^ERROR 42601: pgmcp refuses/],
      ['select 1 frm x', /^ERROR 42601: .*\(at character 14\)$/],
      ['select 1 into hostile_probe.t', /^ERROR 42601: pgmcp refuses/],
      ['delete from secclaims.docs', /^ERROR 42601: pgmcp refuses/],
    ];
    for (const [statement, expected] of cases)
      for (const name of ['query', 'explain'] as const)
        expect(text(await tool(alice, name, statement))).toMatch(expected);
  });
});

describe('consent covers every path to a sensitive value (point 2)', () => {
  it.each(CONSENT_PATHS)(
    '%s: asks before %s',
    async (name, _class, statement) => {
      const result = await tool(payroll, name, statement);
      expect(result['resultType'], text(result)).toBe('input_required');
      expect(JSON.stringify(result)).not.toContain('Ada: 100');
    },
  );

  it('refuses query_to_xml over a sensitive table rather than asking', async () => {
    const result = await tool(
      payroll,
      'query',
      "select query_to_xml('select amount from payroll.pay', true, false, '')",
    );
    expect(text(result)).toMatch(/^ERROR 42501: pgmcp refuses/);
  });

  it('runs statements that can read nothing sensitive without asking', async () => {
    for (const [name, statement] of [
      ['query', "select 'plain' as word"],
      [
        'query',
        "select count(*) > 0 as any from pg_class where relname = 'pay'",
      ],
      ['explain', "select lower('A')"],
    ] as const) {
      const result = await tool(payroll, name, statement);
      expect(result['resultType'], text(result)).not.toBe('input_required');
      expect(result['isError'], text(result)).toBeUndefined();
    }
  });
});
