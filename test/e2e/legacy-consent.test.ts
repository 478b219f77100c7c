// A person's consent through a 2025-11-25 client (issue 17 point 5): the v1 TypeScript SDK
// (@modelcontextprotocol/sdk 1.32.2) reading a resource marked sensitive is asked for a reason by
// an elicitation/create request in the middle of its resources/read, over Streamable HTTP (on the
// read's SSE answer, the answer POSTed back in the session) and over stdio (interleaved lines).
// Accepting returns the data (resources/read, the fetch tool) and audits the reason; declining is refused and audited; a client
// that declared no elicitation is refused naming it, as a 2026-07-28 one is (with the
// 2025-11-25 code, -32600). Own database.
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ElicitRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import {
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;

const TRANSPORTS = ['http', 'stdio'] as const;
type TransportName = (typeof TRANSPORTS)[number];
const uriOf = (transport: TransportName, name: string) =>
  `file:///v1-hr/${transport}/${name}.md`;

beforeAll(async () => {
  databaseUrl = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_legacy_consent',
  );
  await migrateDatabase(databaseUrl);
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  for (const transport of TRANSPORTS)
    for (const name of [
      'accepted',
      'declined',
      'incapable',
      'fetched',
      'ended',
    ])
      await sql.query(
        `insert into pgmcp.resources (uri, name, text, readers, sensitive)
         values ($1, $2, 'Ada: 100', '{}', true)`,
        [uriOf(transport, name), `${name}.md`],
      );
  server = await startTestServer({ databaseUrl, live: {} });
});

afterAll(async () => {
  await server?.close();
  await sql?.end();
});

function transportFor(name: TransportName): Transport {
  if (name === 'http')
    return new StreamableHTTPClientTransport(new URL(server.url));
  return new StdioClientTransport({
    command: process.execPath,
    args: [
      path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'),
      'serve',
      '--stdio',
      '--no-migrate',
    ],
    env: {
      ...(process.env as Record<string, string>),
      DATABASE_URL: databaseUrl,
    },
    stderr: 'pipe',
  });
}

/** A v1 client over `name`; with `answer`, it declares elicitation and answers with it. */
async function connect(
  name: TransportName,
  answer?: { action: 'accept' | 'decline'; content?: { reason: string } },
): Promise<{ client: Client; asked: string[] }> {
  const asked: string[] = [];
  const client = new Client(
    { name: `v1-consent-${name}`, version: '1' },
    { capabilities: answer === undefined ? {} : { elicitation: {} } },
  );
  if (answer !== undefined)
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return Promise.resolve(answer);
    });
  await client.connect(transportFor(name));
  return { client, asked };
}

/** The audit rows for `target`, oldest first. */
async function audit(target: string) {
  const { rows } = await sql.query<{ action: string; reason: string | null }>(
    'select action, reason from pgmcp.audit where target = $1 order by id',
    [target],
  );
  return rows;
}

async function refusal(read: Promise<unknown>): Promise<McpError> {
  const error = await read.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe.each(TRANSPORTS)(
  'consent through a 2025-11-25 client over %s',
  (name) => {
    it('asks the person through elicitation/create; accepting returns the data and audits the reason', async () => {
      const uri = uriOf(name, 'accepted');
      const { client, asked } = await connect(name, {
        action: 'accept',
        content: { reason: 'quarterly pay review' },
      });
      try {
        const read = await client.readResource({ uri });
        expect(read.contents).toEqual([
          expect.objectContaining({ uri, text: 'Ada: 100' }),
        ]);
        expect(read).not.toHaveProperty('resultType');
        expect(asked).toEqual([expect.stringContaining(uri)]);
      } finally {
        await client.close();
      }
      expect(await audit(uri)).toEqual([
        { action: 'consent-asked', reason: null },
        { action: 'consent-given', reason: 'quarterly pay review' },
      ]);
    });

    it('the fetch tool asks the same way, and returns the document once the person gave a reason', async () => {
      const uri = uriOf(name, 'fetched');
      const { client, asked } = await connect(name, {
        action: 'accept',
        content: { reason: 'payroll audit' },
      });
      try {
        const result = await client.callTool({
          name: 'fetch',
          arguments: { id: uri },
        });
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toMatchObject({
          id: uri,
          text: 'Ada: 100',
        });
        expect(asked).toEqual([expect.stringContaining(uri)]);
      } finally {
        await client.close();
      }
      expect(await audit(uri)).toEqual([
        { action: 'consent-asked', reason: null },
        { action: 'consent-given', reason: 'payroll audit' },
      ]);
    });

    it('declining is refused with CONSENT_DECLINED and audited', async () => {
      const uri = uriOf(name, 'declined');
      const { client, asked } = await connect(name, { action: 'decline' });
      try {
        const error = await refusal(client.readResource({ uri }));
        expect(error.code).toBe(-32600);
        expect(error.data).toMatchObject({ code: 'CONSENT_DECLINED', uri });
        expect(asked).toHaveLength(1);
      } finally {
        await client.close();
      }
      expect(await audit(uri)).toEqual([
        { action: 'consent-asked', reason: null },
        { action: 'consent-declined', reason: null },
      ]);
    });

    it('a client that declared no elicitation is refused naming the capability, and is never asked', async () => {
      const uri = uriOf(name, 'incapable');
      const { client } = await connect(name);
      try {
        const error = await refusal(client.readResource({ uri }));
        // 2025-11-25 has no -32021: an invalid request, naming what is missing.
        expect(error.code).toBe(-32600);
        expect(error.data).toMatchObject({
          code: 'MISSING_CLIENT_CAPABILITY',
          requiredCapabilities: { elicitation: { form: {} } },
        });
      } finally {
        await client.close();
      }
      expect(await audit(uri)).toEqual([]);
    });
  },
);

describe('consent in a 2025-11-25 session that ended elsewhere', () => {
  it('asks nothing when the session was deleted through another replica: the read is refused as its session is gone', async () => {
    const uri = uriOf('http', 'ended');
    const { client, asked } = await connect('http', {
      action: 'accept',
      content: { reason: 'too late' },
    });
    try {
      // What a DELETE through another replica leaves: no row, while this process still holds it.
      await sql.query('delete from pgmcp.legacy_sessions');
      const error = await client.readResource({ uri }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(String(error)).toMatch(/404|Session not found/);
      expect(asked).toEqual([]);
    } finally {
      await client.close().catch(() => undefined);
    }
    // The gate decided to ask (audited as asked), but no question left and nothing was read.
    expect(await audit(uri)).not.toContainEqual(
      expect.objectContaining({ action: 'consent-given' }),
    );
  });
});
