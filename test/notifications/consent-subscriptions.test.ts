// Subscriptions to sensitive data (issue 17.5): a listen stream subscribed to a resource marked
// sensitive (a stored resource, or a row of a table marked sensitive in the config) hears of its
// updates only once the caller has consented to reading it, and only until that consent expires;
// another caller's consent does not count. Over HTTP listen streams, against real Postgres.
// Own database: it marks rows sensitive and commits changes the streams hear of.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowUri } from '../../src/resources/catalog-uri.js';
import {
  call,
  listenFresh,
  startTestServer,
  testDatabaseUrl,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import {
  createPayrollDatabase,
  ELICITATION,
  HANDBOOK,
  payrollServerOptions,
  SALARIES,
} from '../setup/payroll-fixture.js';

const DATABASE = 'pgmcp_consent_listen_test';
const ROLE = 'pgmcp_consent_listen';
/** PGMCP_CONSENT_MINUTES's default. */
const EXPIRY_MS = 10 * 60_000;
const PAY_ROW = rowUri(DATABASE, { schema: 'payroll', table: 'pay' }, ['1']);

let databaseUrl: string;
let sql: pg.Client;
/** The servers' clock runs `skew` ms ahead of the real one. */
let skew = 0;
let ada: TestServer;
let bob: TestServer;
const streams: ListenStream[] = [];

beforeAll(async () => {
  databaseUrl = await createPayrollDatabase(
    testDatabaseUrl(),
    DATABASE,
    [ROLE],
    [ROLE],
  );
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  const options = (person: string) => ({
    ...payrollServerOptions(databaseUrl, {
      role: ROLE,
      claims: { sub: person },
    }),
    live: {},
    now: () => Date.now() + skew,
  });
  ada = await startTestServer(options('ada'));
  bob = await startTestServer(options('bob'));
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  await ada?.close();
  await bob?.close();
  await sql?.end();
});

async function open(server: TestServer): Promise<ListenStream> {
  const stream = await listenFresh(server, {
    resourceSubscriptions: [SALARIES, PAY_ROW, HANDBOOK],
  });
  streams.push(stream);
  return stream;
}

/**
 * Change the salaries and the pay row, then the handbook: once the handbook's update has reached
 * every stream, whatever the first two were going to deliver has been delivered too.
 */
async function changeAll(...listening: ListenStream[]): Promise<void> {
  const before = listening.map(
    (stream) => stream.updated().filter((uri) => uri === HANDBOOK).length,
  );
  await sql.query(
    `update pgmcp.resources set text = text || '.' where uri = $1`,
    [SALARIES],
  );
  await sql.query('update payroll.pay set amount = amount + 1 where id = 1');
  await sql.query(
    `update pgmcp.resources set text = text || '.' where uri = $1`,
    [HANDBOOK],
  );
  await Promise.all(
    listening.map((stream, index) =>
      stream.waitFor(
        () =>
          stream.updated().filter((uri) => uri === HANDBOOK).length >
          (before[index] ?? 0),
      ),
    ),
  );
}

/** The updates of sensitive URIs `stream` has heard of so far. */
function sensitiveHeard(stream: ListenStream): string[] {
  return stream.updated().filter((uri) => uri !== HANDBOOK);
}

/** Read `uri` as `server`'s caller, giving consent with a reason when asked. */
async function consent(server: TestServer, uri: string): Promise<void> {
  const first = await call(server.url, 'resources/read', {
    _meta: ELICITATION,
    uri,
  });
  expect(first.result).toMatchObject({ resultType: 'input_required' });
  const retry = await call(server.url, 'resources/read', {
    _meta: ELICITATION,
    uri,
    inputResponses: {
      consent: { action: 'accept', content: { reason: 'payroll review' } },
    },
    requestState: first.result?.['requestState'],
  });
  expect(retry.result).toMatchObject({ resultType: 'complete' });
}

describe('subscriptions to sensitive resources over HTTP', () => {
  it('accepts the subscription but delivers no update before the caller consents', async () => {
    const stream = await open(ada);
    expect(stream.messages[0]?.params?.['notifications']).toEqual({
      resourceSubscriptions: [SALARIES, PAY_ROW, HANDBOOK],
    });
    await changeAll(stream);
    expect(sensitiveHeard(stream)).toEqual([]);
  });

  it('delivers updates once the caller consented, to that caller only, until the consent expires', async () => {
    const adas = await open(ada);
    const bobs = await open(bob);
    await consent(ada, SALARIES);
    await consent(ada, PAY_ROW);
    await changeAll(adas, bobs);
    expect(sensitiveHeard(adas).sort()).toEqual([SALARIES, PAY_ROW].sort());
    expect(sensitiveHeard(bobs)).toEqual([]);

    skew = EXPIRY_MS + 1000;
    await changeAll(adas, bobs);
    expect(sensitiveHeard(adas).sort()).toEqual([SALARIES, PAY_ROW].sort());
    expect(sensitiveHeard(bobs)).toEqual([]);
  });
});
