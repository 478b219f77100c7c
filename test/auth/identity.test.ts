// Identity is never shared by accident (issue 32 point 9): two holders of tokens without `sub` share
// neither a 2025-11-25 session nor a consent answer, and a consent answer is used once, on any
// replica. Real tokens through the server's verifier. Own database (the payroll fixture).
import { SignJWT } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '../../src/auth/index.js';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import {
  legacyPost,
  openSession,
  sessionHeaders,
} from '../setup/legacy-client.js';
import {
  createPayrollDatabase,
  ELICITATION,
  payrollServerOptions,
  SALARIES,
} from '../setup/payroll-fixture.js';

const ROLE = 'pgmcp_identity_a';
const SECRET = 'an-identity-test-secret-0123456789abcdef';
const AUDIENCE = 'http://127.0.0.1/mcp';
const verifier = createTokenVerifier({
  secret: SECRET,
  audience: AUDIENCE,
  roleClaim: 'role',
});

let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;
let replica: TestServer;

/** A token for ROLE with exactly `claims` besides role, aud and exp: no sub, no jti unless given. */
async function token(claims: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT({ role: ROLE, ...claims })
    .setProtectedHeader({ alg: 'HS256' })
    .setAudience(AUDIENCE)
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(SECRET));
}

const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });

beforeAll(async () => {
  databaseUrl = await createPayrollDatabase(
    testDatabaseUrl(),
    'pgmcp_identity_test',
    [ROLE],
    [ROLE],
  );
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  const options = {
    ...payrollServerOptions(databaseUrl, { role: ROLE, claims: {} }),
    authenticate: (request: { headers: { authorization?: string } }) =>
      verifier.verify(request.headers.authorization),
  };
  server = await startTestServer(options);
  replica = await startTestServer(options);
});

afterAll(async () => {
  await server?.close();
  await replica?.close();
  await sql?.end();
});

/** resources/read of the sensitive resource, as the holder of `jwt`. */
function readSalaries(
  target: TestServer,
  jwt: string,
  extra: Record<string, unknown> = {},
) {
  return call(
    target.url,
    'resources/read',
    { _meta: ELICITATION, uri: SALARIES, ...extra },
    bearer(jwt),
  );
}

const accept = {
  consent: { action: 'accept', content: { reason: 'payroll audit' } },
};

/** The requestState the first read of SALARIES answers with. */
async function askedState(jwt: string): Promise<string> {
  const first = await readSalaries(server, jwt);
  const state = first.result?.['requestState'];
  expect(typeof state).toBe('string');
  return state as string;
}

describe('tokens without sub', () => {
  it('do not share a 2025-11-25 session: another holder of the same role gets 404', async () => {
    for (const [mine, theirs] of [
      [await token(), await token({ tenant: 'other' })],
      [await token({ jti: 'one' }), await token({ jti: 'two' })],
    ] as const) {
      const id = await openSession(server.url, bearer(mine));
      const other = await legacyPost(
        server.url,
        { method: 'resources/list' },
        sessionHeaders(id, bearer(theirs)),
      );
      expect(other.status).toBe(404);
      const own = await legacyPost(
        server.url,
        { method: 'resources/list' },
        sessionHeaders(id, bearer(mine)),
      );
      expect(own.status).toBe(200);
    }
  });

  it("do not share a consent answer: another holder's retry with the state is -32602", async () => {
    const mine = await token();
    const theirs = await token({ tenant: 'other' });
    const state = await askedState(mine);
    const answered = await readSalaries(server, theirs, {
      requestState: state,
      inputResponses: accept,
    });
    expect(answered.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('issued to another caller') as unknown,
    });
  });
});

describe('a consent answer', () => {
  it('is used once: the same requestState and answer again is -32602, on this replica or another', async () => {
    const jwt = await token({ sub: 'ada' });
    const state = await askedState(jwt);
    const retry = { requestState: state, inputResponses: accept };
    const first = await readSalaries(server, jwt, retry);
    expect(first.error).toBeUndefined();
    expect(first.result?.['contents']).toBeDefined();
    for (const target of [server, replica]) {
      const replay = await readSalaries(target, jwt, retry);
      expect(replay.error).toMatchObject({
        code: -32602,
        message: expect.stringContaining('answered already') as unknown,
      });
      expect(replay.result).toBeUndefined();
    }
    // A fresh question gets a fresh state, which is answered as usual.
    const again = await readSalaries(server, jwt, {
      requestState: await askedState(jwt),
      inputResponses: accept,
    });
    expect(again.result?.['contents']).toBeDefined();
  });

  it('that declined is used up too, while a malformed one leaves the state to answer', async () => {
    const jwt = await token({ sub: 'grace' });
    const state = await askedState(jwt);
    const malformed = await readSalaries(server, jwt, {
      requestState: state,
      inputResponses: { consent: { action: 'accept', content: {} } },
    });
    expect(malformed.error?.code).toBe(-32602);
    const declined = await readSalaries(server, jwt, {
      requestState: state,
      inputResponses: { consent: { action: 'decline', content: {} } },
    });
    expect(declined.error?.data).toMatchObject({ code: 'CONSENT_DECLINED' });
    const replay = await readSalaries(replica, jwt, {
      requestState: state,
      inputResponses: accept,
    });
    expect(replay.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('answered already') as unknown,
    });
  });

  it('is kept only until it expires: answering prunes what expired', async () => {
    await sql.query(
      `insert into pgmcp.consent_states_used values ('\\x00', now() - interval '1 second')`,
    );
    const jwt = await token({ sub: 'lin' });
    const answered = await readSalaries(server, jwt, {
      requestState: await askedState(jwt),
      inputResponses: accept,
    });
    expect(answered.result?.['contents']).toBeDefined();
    const { rows } = await sql.query<{ expired: number }>(
      'select count(*)::int as expired from pgmcp.consent_states_used where expires_at < now()',
    );
    expect(rows[0]?.expired).toBe(0);
  });
});
