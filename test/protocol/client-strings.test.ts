// Every string a client sends, with the values that break naive handling (a lone surrogate has no
// UTF-8 form and makes encodeURIComponent throw; Postgres text cannot hold NUL; 64 KB is long), over
// HTTP and stdio: each gets a clear answer (-32602, or served), never -32603, HTTP 500 or a hang.
import { createHmac } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticate } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createRoleChecker } from '../../src/db/index.js';
import { createLogger } from '../../src/log.js';
import {
  META,
  call,
  listen,
  mcpHeaders,
  postRaw,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { startStdioChild, type StdioChild } from '../setup/stdio-child.js';

/** A hostile value, raw and as a URI would carry it percent-encoded (UTF-8 bytes). */
interface Hostile {
  readonly name: string;
  readonly raw: string;
  readonly escaped: string;
  /** Whether a string carrying it must be refused (-32602); 64 KB may also be served. */
  readonly refused: boolean;
}

const HOSTILE: readonly Hostile[] = [
  {
    name: 'lone surrogate',
    raw: '\ud800',
    escaped: '%ED%A0%80',
    refused: true,
  },
  { name: 'NUL', raw: 'a\u0000b', escaped: 'a%00b', refused: true },
  {
    name: '64 KB',
    raw: 'x'.repeat(64 * 1024),
    escaped: 'x'.repeat(64 * 1024),
    refused: false,
  },
];

const SCHEMA = 'client_strings';
const ROW_TEMPLATE = 'pg://{database}/{schema}/{table}/rows/{key}';
let database = '';

const ref = (uri: string) => ({ type: 'ref/resource', uri });

/**
 * Every place a client string goes, for one hostile value: [label, method, params, refused?].
 * `refused` overrides the value's own rule where the place refuses any such string (URIs have a
 * length cap; a cursor is opaque and signed).
 */
function targets(
  bad: Hostile,
): [string, string, Record<string, unknown>, boolean][] {
  const { raw, escaped, refused } = bad;
  const rows = `pg://${database}/${SCHEMA}/items/rows`;
  return [
    ['resources/read uri', 'resources/read', { uri: `notes:///${raw}` }, true],
    [
      'catalog uri',
      'resources/read',
      { uri: `pg://${database}/${escaped}` },
      true,
    ],
    ['row key', 'resources/read', { uri: `${rows}/${escaped}` }, true],
    [
      'requestState',
      'resources/read',
      { uri: 'notes:///x', requestState: raw },
      refused,
    ],
    ['list cursor', 'resources/list', { cursor: raw }, true],
    ['templates cursor', 'resources/templates/list', { cursor: raw }, true],
    [
      'completion value',
      'completion/complete',
      {
        ref: ref('notes:///{tag}/{slug}'),
        argument: { name: 'tag', value: raw },
      },
      refused,
    ],
    [
      'catalog completion value',
      'completion/complete',
      {
        ref: ref('pg://{database}/{schema}'),
        argument: { name: 'schema', value: raw },
      },
      refused,
    ],
    [
      'argument name',
      'completion/complete',
      { ref: ref('notes:///{tag}/{slug}'), argument: { name: raw, value: '' } },
      true,
    ],
    [
      'template uri',
      'completion/complete',
      {
        ref: ref(`notes:///{tag}/${raw}`),
        argument: { name: 'tag', value: '' },
      },
      true,
    ],
    [
      'template variable in context',
      'completion/complete',
      {
        ref: ref('notes:///{tag}/{slug}'),
        argument: { name: 'slug', value: '' },
        context: { arguments: { tag: raw } },
      },
      refused,
    ],
    [
      'context argument name',
      'completion/complete',
      {
        ref: ref('notes:///{tag}/{slug}'),
        argument: { name: 'slug', value: '' },
        context: { arguments: { [raw]: 'x' } },
      },
      refused,
    ],
    [
      'row key completion',
      'completion/complete',
      {
        ref: ref(ROW_TEMPLATE),
        argument: { name: 'key', value: raw },
        context: { arguments: { database, schema: SCHEMA, table: 'items' } },
      },
      refused,
    ],
    [
      'row key completion context',
      'completion/complete',
      {
        ref: ref(ROW_TEMPLATE),
        argument: { name: 'key', value: '' },
        context: { arguments: { database, schema: raw, table: raw } },
      },
      refused,
    ],
    [
      'prompt name',
      'completion/complete',
      {
        ref: { type: 'ref/prompt', name: raw },
        argument: { name: 'x', value: '' },
      },
      true,
    ],
    [
      '_meta value',
      'resources/list',
      {
        _meta: {
          ...META,
          'io.modelcontextprotocol/clientInfo': { name: raw, version: raw },
          'example.com/note': raw,
        },
      },
      false,
    ],
  ];
}

/** What every answer must be: a result, or an error other than -32603; -32602 when refused. */
function expectClearAnswer(
  label: string,
  refused: boolean,
  answer: { result?: unknown; error?: { code: number } },
): void {
  expect(answer.error?.code, label).not.toBe(-32603);
  if (refused) expect(answer.error?.code, label).toBe(-32602);
  else
    expect(
      answer.result !== undefined || answer.error?.code === -32602,
      label,
    ).toBe(true);
}

let server: TestServer;
let sql: pg.Client;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(`create schema if not exists ${SCHEMA}`);
  await sql.query(
    `create table if not exists ${SCHEMA}.items (id text primary key, v text)`,
  );
  // No grants: the tests serve as the (superuser) login, and a grant to public would put this
  // fixture into every demo role's catalog while other files check those catalogs exactly.
  database =
    (await sql.query<{ name: string }>('select current_database() as name'))
      .rows[0]?.name ?? '';
  server = await startTestServer({
    collections: [
      {
        database: undefined,
        schema: SCHEMA,
        table: 'items',
        list: false,
        titleColumn: undefined,
      },
    ],
  });
});

afterAll(async () => {
  await server.close();
  await sql.end();
});

describe('hostile client strings over HTTP', () => {
  for (const bad of HOSTILE) {
    it(`answers every string carrying a ${bad.name} clearly, never 500`, async () => {
      for (const [label, method, params, refused] of targets(bad)) {
        const uri =
          method === 'resources/read' ? String(params['uri']) : undefined;
        const response = await postRaw(
          server.url,
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method,
            params: { _meta: META, ...params },
          }),
          mcpHeaders(method, uri),
          method,
        );
        expect(response.status, label).toBeLessThan(500);
        const body = (response.body ?? {}) as {
          result?: unknown;
          error?: { code: number };
        };
        // Mcp-Name cannot carry a lone surrogate (-32020) or 64 KB (HTTP 400: header too large);
        // the same bodies go over stdio, which has no headers.
        if (
          uri !== undefined &&
          (/[\uD800-\uDFFF]/u.test(uri) || uri.length > 8192)
        ) {
          expect(response.status, label).toBe(400);
          continue;
        }
        expectClearAnswer(label, refused, body);
      }
    });
  }

  it('refuses a lone surrogate in completion/complete argument.value with -32602, HTTP 200', async () => {
    const answer = await call(server.url, 'completion/complete', {
      ref: ref('notes:///{tag}/{slug}'),
      argument: { name: 'tag', value: '\ud800' },
    });
    expect(answer.status).toBe(200);
    expect(answer.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('argument.value') as unknown,
    });
  });

  it('refuses hostile subscription URIs with -32602 (64 KB: refused or served)', async () => {
    for (const bad of HOSTILE) {
      const stream = await listen(server.url, {
        resourceSubscriptions: [`notes:///${bad.raw}`],
      });
      await stream.waitFor((messages) => messages.length > 0);
      stream.close();
      expect(stream.status, bad.name).toBeLessThan(500);
      const first = stream.messages[0];
      expect(first?.error?.code, bad.name).not.toBe(-32603);
      if (bad.refused) expect(first?.error?.code, bad.name).toBe(-32602);
    }
  });
});

describe('hostile role claims over HTTP', () => {
  const SECRET = 'client-strings-test-secret-0123456789';
  const AUDIENCE = 'http://127.0.0.1:3000/mcp';
  let authServer: TestServer;

  /** An HS256 token whose JSON payload carries `claims` exactly (a lone surrogate as \ud800). */
  const token = (claims: Record<string, unknown>): string => {
    const part = (value: object) =>
      Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const body = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({
      aud: AUDIENCE,
      iss: 'http://127.0.0.1:3000',
      iat: now,
      exp: now + 600,
      ...claims,
    })}`;
    return `${body}.${createHmac('sha256', SECRET).update(body).digest('base64url')}`;
  };

  beforeAll(async () => {
    const config = loadConfig(
      {},
      {
        PGMCP_JWT_SECRET: SECRET,
        PGMCP_JWT_AUDIENCE: AUDIENCE,
        DATABASE_URL: 'postgres://unused@127.0.0.1/unused',
      },
    );
    // The role checker needs the server's own pool: declared below, called only per request.
    const authenticate = createAuthenticate({
      config,
      secret: SECRET,
      audience: AUDIENCE,
      canAssume: (role) => checker(role),
      logger: createLogger({
        stream: { write: () => true } as unknown as NodeJS.WritableStream,
      }),
    });
    authServer = await startTestServer({
      authenticate: (request) => authenticate(request),
    });
    const checker = createRoleChecker(authServer.db, {
      maxEntries: 1000,
      maxAgeMs: 1000,
    });
  });

  afterAll(async () => {
    await authServer.close();
  });

  for (const bad of HOSTILE) {
    it(`answers a role claim with a ${bad.name} with a 4xx, never 500`, async () => {
      const response = await postRaw(
        authServer.url,
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'resources/list',
          params: { _meta: META },
        }),
        {
          ...mcpHeaders('resources/list'),
          Authorization: `Bearer ${token({ role: bad.raw })}`,
        },
      );
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
    });
  }
});

describe('hostile client strings over stdio', () => {
  let child: StdioChild;
  let nextId = 1;

  beforeAll(() => {
    child = startStdioChild({ DATABASE_URL: testDatabaseUrl() });
  });

  afterAll(() => {
    child.process.kill('SIGKILL');
  });

  for (const bad of HOSTILE) {
    it(`answers every string carrying a ${bad.name} clearly`, async () => {
      for (const [label, method, params, refused] of targets(bad)) {
        const id = nextId++;
        child.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id,
            method,
            params: { _meta: META, ...params },
          }),
        );
        const answer = (await child.waitFor(
          (message) => message['id'] === id,
        )) as {
          result?: unknown;
          error?: { code: number };
        };
        expectClearAnswer(label, refused, answer);
      }
    });
  }
});
