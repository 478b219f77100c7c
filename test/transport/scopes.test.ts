// OAuth scopes (issue 32 point 11): the config file's scope map decides which tools and method
// groups a token may call. HTTP answers a missing scope 403 with the insufficient_scope challenge in
// both eras, tools/list shows only the allowed tools, stdio gets a JSON-RPC error, and without a
// scope map nothing changes.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpSecurity } from '../../src/app/index.js';
import { mintToken } from '../../src/auth/index.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import { createRoleChecker } from '../../src/db/index.js';
import { createLogger } from '../../src/log.js';
import {
  META,
  TEST_CURSOR_SECRET,
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
import { startStdioChild, type StdioChild } from '../setup/stdio-child.js';

const SECRET = 'scopes-test-secret-0123456789-abcdefghij';
const AUDIENCE = 'http://127.0.0.1:3000/mcp';
const METADATA =
  'http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp';

/** A map as an operator would write it: reading everywhere, query and explain need more. */
const SCOPE_MAP = {
  tools: {
    query: ['pgmcp:query'],
    explain: ['pgmcp:query'],
    '*': ['pgmcp:read'],
  },
  methods: { resources: ['pgmcp:read'], prompts: ['pgmcp:read'] },
  implies: { 'pgmcp:admin': ['pgmcp:query', 'pgmcp:read'] },
};

let directory: string;
let scoped: TestServer;
let plain: TestServer;
const children: StdioChild[] = [];

const token = (scope?: string, extra: Record<string, string> = {}) =>
  mintToken({
    secret: SECRET,
    role: 'support',
    claims: { ...(scope === undefined ? {} : { scope }), ...extra },
    audience: AUDIENCE,
    issuer: 'http://127.0.0.1:3000',
    ttlSeconds: 600,
  });

const bearer = async (scope?: string) => ({
  Authorization: `Bearer ${await token(scope)}`,
});

/** The config as `pgmcp serve` loads it from a config file holding `file`. */
async function configWith(file: object): Promise<Config> {
  const configFile = path.join(directory, `config-${Math.random()}.json`);
  await writeFile(configFile, JSON.stringify(file));
  return loadConfig(
    { config: configFile },
    {
      PGMCP_JWT_SECRET: SECRET,
      PGMCP_JWT_AUDIENCE: AUDIENCE,
      DATABASE_URL: testDatabaseUrl(),
    },
  );
}

/** An HTTP server authenticating as `pgmcp serve` would with `config`. */
async function serverFor(config: Config): Promise<TestServer> {
  const logger = createLogger({
    stream: { write: () => true } as unknown as NodeJS.WritableStream,
  });
  let canAssume: (role: string) => Promise<boolean> = () =>
    Promise.resolve(false);
  const security = httpSecurity(config, AUDIENCE, {
    canAssume: Object.assign((role: string) => canAssume(role), {
      clear: () => undefined,
    }),
    logger,
  });
  const server = await startTestServer({
    scopes: config.scopes,
    authenticate: (request) =>
      Promise.resolve(
        security.authenticate(
          request as Parameters<typeof security.authenticate>[0],
        ),
      ),
    protectedResource: security.protectedResource,
  });
  const checker = createRoleChecker(server.db, {
    maxEntries: 100,
    maxAgeMs: 1000,
  });
  canAssume = (role) => checker(role);
  return server;
}

const toolNames = (result: Record<string, unknown> | undefined) =>
  (result?.['tools'] as { name: string }[]).map((tool) => tool.name);

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'pgmcp-scopes-'));
  scoped = await serverFor(await configWith({ scopes: SCOPE_MAP }));
  plain = await serverFor(await configWith({}));
});

afterAll(async () => {
  await scoped.close();
  await plain.close();
  await rm(directory, { recursive: true, force: true });
});

afterEach(() => {
  for (const child of children.splice(0)) child.process.kill('SIGKILL');
});

describe('scopes over HTTP, 2026-07-28', () => {
  it('answers a tool call the token lacks the scope for with 403 and the exact insufficient_scope challenge', async () => {
    const response = await call(
      scoped.url,
      'tools/call',
      { name: 'query', arguments: { sql: 'select 1' } },
      await bearer('pgmcp:read'),
    );
    expect(response.status).toBe(403);
    expect(response.error).toMatchObject({
      code: -32600,
      data: { code: 'INSUFFICIENT_SCOPE', scope: 'pgmcp:query' },
    });
    const raw = await fetch(scoped.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'explain',
        ...(await bearer('pgmcp:read')),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          _meta: META,
          name: 'explain',
          arguments: { sql: 'select 1' },
        },
      }),
    });
    await raw.text();
    expect(raw.status).toBe(403);
    expect(raw.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="pgmcp:query", resource_metadata="${METADATA}"`,
    );
  });

  it('runs the tool once the token holds the scope, from `scope` or an `scp` array or a broader scope', async () => {
    // An IdP that sends scopes as an array (Entra's and Okta's scp).
    const scpToken = await new SignJWT({
      role: 'support',
      scp: ['pgmcp:read', 'pgmcp:query'],
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt()
      .setAudience(AUDIENCE)
      .setIssuer('http://127.0.0.1:3000')
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode(SECRET));
    const scp = { Authorization: `Bearer ${scpToken}` };
    for (const headers of [
      await bearer('pgmcp:read pgmcp:query'),
      scp,
      await bearer('pgmcp:admin'),
    ]) {
      const response = await call(
        scoped.url,
        'tools/call',
        { name: 'query', arguments: { sql: 'select 1 as one' } },
        headers,
      );
      expect(response.status).toBe(200);
      expect(response.result?.['isError']).toBeUndefined();
    }
  });

  it('refuses a method group the token lacks the scope for, and serves it with the scope', async () => {
    const denied = await call(
      scoped.url,
      'resources/list',
      {},
      await bearer('pgmcp:query'),
    );
    expect(denied.status).toBe(403);
    expect(denied.error?.data).toMatchObject({
      code: 'INSUFFICIENT_SCOPE',
      scope: 'pgmcp:read',
    });
    const noScope = await call(scoped.url, 'prompts/list', {}, await bearer());
    expect(noScope.status).toBe(403);
    const allowed = await call(
      scoped.url,
      'resources/list',
      {},
      await bearer('pgmcp:read'),
    );
    expect(allowed.status).toBe(200);
    expect(allowed.result?.['resources']).toBeInstanceOf(Array);
    // server/discover belongs to no group: every token may call it.
    const discover = await call(
      scoped.url,
      'server/discover',
      {},
      await bearer(),
    );
    expect(discover.status).toBe(200);
  });

  it('lists only the tools the token may call, privately', async () => {
    const reader = await call(
      scoped.url,
      'tools/list',
      {},
      await bearer('pgmcp:read'),
    );
    expect(toolNames(reader.result)).toEqual(['search', 'fetch']);
    expect(reader.result?.['cacheScope']).toBe('private');
    const querier = await call(
      scoped.url,
      'tools/list',
      {},
      await bearer('pgmcp:query'),
    );
    expect(toolNames(querier.result)).toEqual(['query', 'explain']);
    const admin = await call(
      scoped.url,
      'tools/list',
      {},
      await bearer('pgmcp:admin'),
    );
    expect(toolNames(admin.result)).toEqual([
      'search',
      'fetch',
      'query',
      'explain',
    ]);
    const none = await call(scoped.url, 'tools/list', {}, await bearer());
    expect(toolNames(none.result)).toEqual([]);
  });

  it('lists scopes_supported in the protected-resource metadata', async () => {
    const origin = new URL(scoped.url).origin;
    const response = await fetch(
      `${origin}/.well-known/oauth-protected-resource`,
    );
    expect(await response.json()).toMatchObject({
      resource: AUDIENCE,
      scopes_supported: ['pgmcp:admin', 'pgmcp:query', 'pgmcp:read'],
    });
  });
});

describe('scopes over HTTP, 2025-11-25', () => {
  it('answers a session request the token lacks the scope for with 403 and the challenge', async () => {
    const headers = await bearer('pgmcp:read');
    const session = await openSession(scoped.url, headers);
    const refused = await legacyPost(
      scoped.url,
      {
        method: 'tools/call',
        params: { name: 'query', arguments: { sql: 'select 1' } },
      },
      sessionHeaders(session, headers),
    );
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="pgmcp:query", resource_metadata="${METADATA}"`,
    );
    expect(refused.error?.data).toMatchObject({ code: 'INSUFFICIENT_SCOPE' });
    const listed = await legacyPost(
      scoped.url,
      { method: 'tools/list', params: {} },
      sessionHeaders(session, headers),
    );
    expect(listed.status).toBe(200);
    expect(toolNames(listed.result)).toEqual(['search', 'fetch']);
    const searched = await legacyPost(
      scoped.url,
      {
        method: 'tools/call',
        params: { name: 'search', arguments: { query: 'static' } },
      },
      sessionHeaders(session, headers),
    );
    expect(searched.status).toBe(200);
    expect(searched.result?.['isError']).toBeUndefined();
  });

  it("guards resources/subscribe, the legacy era's own method, with the resources scope", async () => {
    const headers = await bearer('pgmcp:query');
    const session = await openSession(scoped.url, headers);
    const refused = await legacyPost(
      scoped.url,
      { method: 'resources/subscribe', params: { uri: 'test://static-text' } },
      sessionHeaders(session, headers),
    );
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="pgmcp:read", resource_metadata="${METADATA}"`,
    );
  });
});

describe('without a scope map', () => {
  it('serves every tool to a token with no scope, publicly, as before', async () => {
    const listed = await call(plain.url, 'tools/list', {}, await bearer());
    expect(listed.status).toBe(200);
    expect(toolNames(listed.result)).toEqual([
      'search',
      'fetch',
      'query',
      'explain',
    ]);
    expect(listed.result?.['cacheScope']).toBe('public');
    const queried = await call(
      plain.url,
      'tools/call',
      { name: 'query', arguments: { sql: 'select 1' } },
      await bearer('unrelated:scope'),
    );
    expect(queried.status).toBe(200);
    expect(queried.result?.['isError']).toBeUndefined();
    const origin = new URL(plain.url).origin;
    const metadata = (await (
      await fetch(`${origin}/.well-known/oauth-protected-resource`)
    ).json()) as Record<string, unknown>;
    expect(metadata).not.toHaveProperty('scopes_supported');
  });
});

describe('scopes over stdio', () => {
  it('refuses a tool PGMCP_SCOPES does not grant with a JSON-RPC error naming the scope', async () => {
    const configFile = path.join(directory, 'stdio.json');
    await writeFile(configFile, JSON.stringify({ scopes: SCOPE_MAP }));
    const child = startStdioChild({
      DATABASE_URL: testDatabaseUrl(),
      PGMCP_CONFIG: configFile,
      PGMCP_SCOPES: 'pgmcp:read',
      PGMCP_CURSOR_SECRETS: TEST_CURSOR_SECRET,
    });
    children.push(child);
    const send = (id: string, method: string, params: object) =>
      child.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method,
          params: { _meta: META, ...params },
        }),
      );
    send('q', 'tools/call', { name: 'query', arguments: { sql: 'select 1' } });
    send('l', 'tools/list', {});
    const refused = await child.waitFor((line) => line['id'] === 'q');
    expect(refused['error']).toEqual({
      code: -32600,
      message:
        'Insufficient scope: the tool query needs the scope pgmcp:query.',
      data: { code: 'INSUFFICIENT_SCOPE', scope: 'pgmcp:query' },
    });
    const listed = await child.waitFor((line) => line['id'] === 'l');
    expect(toolNames(listed['result'] as Record<string, unknown>)).toEqual([
      'search',
      'fetch',
    ]);
  });

  it('leaves a stdio process without PGMCP_SCOPES unlimited by the map', async () => {
    const configFile = path.join(directory, 'stdio-open.json');
    await writeFile(configFile, JSON.stringify({ scopes: SCOPE_MAP }));
    const child = startStdioChild({
      DATABASE_URL: testDatabaseUrl(),
      PGMCP_CONFIG: configFile,
      PGMCP_CURSOR_SECRETS: TEST_CURSOR_SECRET,
    });
    children.push(child);
    child.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'q',
        method: 'tools/call',
        params: {
          _meta: META,
          name: 'query',
          arguments: { sql: 'select 1' },
        },
      }),
    );
    const answer = await child.waitFor((line) => line['id'] === 'q');
    expect(answer['error']).toBeUndefined();
    expect(
      (answer['result'] as Record<string, unknown>)['isError'],
    ).toBeUndefined();
  });
});

describe('the scope map in the config file', () => {
  it('stops start-up on a tool or group it does not know, or offline_access', async () => {
    for (const scopes of [
      { tools: { qeury: ['pgmcp:query'] } },
      { methods: { resource: ['pgmcp:read'] } },
      { tools: { query: ['offline_access'] } },
      { tools: { query: ['has space'] } },
      { tools: { query: [] } },
    ])
      await expect(
        configWith({ scopes }),
        JSON.stringify(scopes),
      ).rejects.toThrow(/invalid config file .*scopes/s);
  });
});
