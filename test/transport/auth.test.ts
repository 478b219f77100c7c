// Authorization over HTTP: bearer tokens become Postgres roles; everything else is 401 or 403.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticate } from '../../src/app/index.js';
import { mintToken } from '../../src/auth/index.js';
import { loadConfig } from '../../src/config/index.js';
import { checkRequestRole, createRoleChecker } from '../../src/db/index.js';
import { createLogger } from '../../src/log.js';
import {
  META,
  call,
  mcpHeaders,
  postRaw,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';

const SECRET = 'http-auth-test-secret-0123456789-abcdef';
const AUDIENCE = 'http://127.0.0.1:3000/mcp';
const METADATA =
  'http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp';
let server: TestServer;
const logLines: string[] = [];

const token = (role: string, claims: Record<string, string> = {}) =>
  mintToken({
    secret: SECRET,
    role,
    claims,
    audience: AUDIENCE,
    issuer: 'http://127.0.0.1:3000',
    ttlSeconds: 600,
  });

beforeAll(async () => {
  const config = loadConfig(
    {},
    {
      PGMCP_JWT_SECRET: SECRET,
      PGMCP_JWT_AUDIENCE: AUDIENCE,
      DATABASE_URL: 'postgres://unused@127.0.0.1/unused',
    },
  );
  const logger = createLogger({
    stream: {
      write: (line: string) => logLines.push(line) > 0,
    } as unknown as NodeJS.WritableStream,
  });
  // The role checker needs the server's own pool: build the server, then its authenticator.
  const authenticate = createAuthenticate({
    config,
    secret: SECRET,
    audience: AUDIENCE,
    canAssume: (role) => checker(role),
    logger,
  });
  server = await startTestServer({
    authenticate: (request) => authenticate(request),
    protectedResource: {
      metadataUrl: METADATA,
      document: {
        resource: AUDIENCE,
        authorization_servers: ['http://127.0.0.1:3000'],
        bearer_methods_supported: ['header'],
      },
    },
  });
  const checker = createRoleChecker(server.db, {
    maxEntries: 1000,
    maxAgeMs: 1000,
  });
});

afterAll(async () => {
  await server.close();
});

const listBody = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'resources/list',
  params: { _meta: META },
});

describe('bearer tokens over HTTP', () => {
  it('answers a request without a token with 401 and the resource-metadata challenge', async () => {
    const response = await postRaw(
      server.url,
      listBody,
      mcpHeaders('resources/list'),
      'resources/list',
    );
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${METADATA}"`,
    );
    expect(response.body).toMatchObject({
      error: { code: -32600, data: { code: 'AUTHENTICATION_REQUIRED' } },
    });
  });

  it('answers a bad token with 401 and error="invalid_token", never echoing the token', async () => {
    const forged = `${(await token('admin')).slice(0, -4)}AAAA`;
    const response = await postRaw(
      server.url,
      listBody,
      { ...mcpHeaders('resources/list'), Authorization: `Bearer ${forged}` },
      'resources/list',
    );
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", resource_metadata="${METADATA}"`,
    );
    expect(response.text).not.toContain(forged);
    expect(logLines.join('')).not.toContain(forged);
  });

  it('answers a token naming a role the login may not assume with 403, without naming the role', async () => {
    for (const role of ['pgmcp_no_such_role_xyz', 'none', 'pg_read_all_data']) {
      const response = await postRaw(
        server.url,
        listBody,
        {
          ...mcpHeaders('resources/list'),
          Authorization: `Bearer ${await tokenUnchecked(role)}`,
        },
        'resources/list',
      );
      expect(response.status, role).toBe(403);
      expect(response.body).toMatchObject({
        error: { data: { code: 'ROLE_FORBIDDEN' } },
      });
      expect(response.text).not.toContain(role);
    }
    expect(logLines.join('')).not.toContain('pgmcp_no_such_role_xyz');
  });

  it('matches the role claim exactly: other spellings and SQL-looking names get 403, never 200 or 500', async () => {
    for (const role of [
      'ADMIN',
      '"admin"',
      'admin ',
      "admin'; drop table pgmcp.resources; --",
      'support", "postgres',
    ]) {
      const response = await postRaw(
        server.url,
        listBody,
        {
          ...mcpHeaders('resources/list'),
          Authorization: `Bearer ${await tokenUnchecked(role)}`,
        },
        'resources/list',
      );
      expect(response.status, role).toBe(403);
      expect(response.body, role).toMatchObject({
        error: { data: { code: 'ROLE_FORBIDDEN' } },
      });
    }
  });

  it('runs a valid token as its role: filtered rows, private caching', async () => {
    const support = await call(
      server.url,
      'resources/list',
      {},
      { Authorization: `Bearer ${await token('support')}` },
    );
    expect(support.result?.['cacheScope']).toBe('private');
    const uris = (support.result?.['resources'] as { uri: string }[]).map(
      (resource) => resource.uri,
    );
    expect(uris.every((uri) => !uri.startsWith('notes:///architecture/'))).toBe(
      true,
    );
    const engineering = await call(
      server.url,
      'resources/list',
      {},
      { Authorization: `Bearer ${await token('engineering')}` },
    );
    expect(
      (engineering.result?.['resources'] as { uri: string }[])[0]?.uri,
    ).toMatch(/^notes:\/\/\/architecture\//);
  });

  it('serves the RFC 9728 protected-resource metadata at both well-known paths', async () => {
    const origin = new URL(server.url).origin;
    for (const path of [
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/mcp',
    ]) {
      const response = await fetch(`${origin}${path}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        resource: AUDIENCE,
        authorization_servers: ['http://127.0.0.1:3000'],
        bearer_methods_supported: ['header'],
      });
    }
  });
});

describe('a token never acts as the login', () => {
  // A login of its own, set up like pgmcp_authenticator (NOINHERIT, granted request roles), and
  // roles that row-level security would not apply to, granted to it too.
  const suffix = randomBytes(4).toString('hex');
  const login = `pgmcp_test_login_${suffix}`;
  const superuser = `pgmcp_test_super_${suffix}`;
  const bypass = `pgmcp_test_bypass_${suffix}`;
  // Roles that could read pgmcp's own tables (listening principals' claims, shared secrets).
  const readsAll = `pgmcp_test_readall_${suffix}`;
  const heir = `pgmcp_test_heir_${suffix}`;
  let admin: pg.Client;
  let asLogin: TestServer;
  let loginChecker: ((role: string) => Promise<boolean>) | undefined;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    const password = randomBytes(16).toString('hex');
    await admin.query(
      `create role ${login} login noinherit password '${password}'`,
    );
    await admin.query(`create role ${superuser} nologin superuser`);
    await admin.query(`create role ${bypass} nologin bypassrls`);
    await admin.query(
      `create role ${readsAll} nologin in role pg_read_all_data`,
    );
    await admin.query(
      `create role ${heir} nologin in role pgmcp_authenticator`,
    );
    await admin.query(
      `grant support, ${superuser}, ${bypass}, ${readsAll}, ${heir} to ${login}`,
    );
    const url = new URL(testDatabaseUrl());
    url.username = login;
    url.password = password;
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
      canAssume: (role) =>
        (loginChecker as (role: string) => Promise<boolean>)(role),
      logger: createLogger({
        stream: { write: () => true } as unknown as NodeJS.WritableStream,
      }),
    });
    asLogin = await startTestServer({
      databaseUrl: url.toString(),
      authenticate: (request) => authenticate(request),
    });
    loginChecker = createRoleChecker(asLogin.db, {
      maxEntries: 1000,
      maxAgeMs: 1000,
    });
  });

  afterAll(async () => {
    await asLogin.close();
    await admin.query(
      `drop role ${login}, ${superuser}, ${bypass}, ${readsAll}, ${heir}`,
    );
    await admin.end();
  });

  it('answers 403 to a token naming the login, pgmcp_authenticator, a superuser or a BYPASSRLS role, though granted', async () => {
    for (const role of [login, 'pgmcp_authenticator', superuser, bypass]) {
      const response = await postRaw(
        asLogin.url,
        listBody,
        {
          ...mcpHeaders('resources/list'),
          Authorization: `Bearer ${await token(role)}`,
        },
        'resources/list',
      );
      expect(response.status, role).toBe(403);
      expect(response.body, role).toMatchObject({
        error: { data: { code: 'ROLE_FORBIDDEN' } },
      });
    }
  });

  it("answers 403 to a token naming a role that could read pgmcp's own tables: a pg_read_all_data member, or one holding pgmcp_authenticator's privileges", async () => {
    // What such a role could read through the query tool: other principals' claims.
    const { rows } = await admin.query<{ readable: boolean }>(
      `select has_table_privilege($1, 'pgmcp.feed_replicas', 'select') and
              has_table_privilege($2, 'pgmcp.feed_replicas', 'select') as readable`,
      [readsAll, heir],
    );
    expect(rows[0]?.readable).toBe(true);
    for (const role of [readsAll, heir]) {
      const response = await postRaw(
        asLogin.url,
        listBody,
        {
          ...mcpHeaders('resources/list'),
          Authorization: `Bearer ${await token(role)}`,
        },
        'resources/list',
      );
      expect(response.status, role).toBe(403);
      expect(response.body, role).toMatchObject({
        error: { data: { code: 'ROLE_FORBIDDEN' } },
      });
    }
  });

  it("keeps pgmcp.feed_replicas (listening principals' claims) from every role requests may run as", async () => {
    const { rows } = await admin.query<{ rolname: string }>(
      `select r.rolname from pg_roles r
        where pg_has_role('pgmcp_authenticator', r.oid, 'MEMBER')
          and r.rolname <> 'pgmcp_authenticator'`,
    );
    expect(rows.map((row) => row.rolname)).toContain('support');
    for (const { rolname } of rows) {
      const verdict = await checkRequestRole(
        admin,
        rolname,
        'pgmcp_authenticator',
      );
      if (verdict !== 'allowed') continue;
      await admin.query('begin');
      try {
        await admin.query(`set local role "${rolname}"`);
        await expect(
          admin.query('select * from pgmcp.feed_replicas'),
          rolname,
        ).rejects.toMatchObject({ code: '42501' });
      } finally {
        await admin.query('rollback');
      }
    }
  });

  it('still serves a granted request role, with its rows only', async () => {
    const support = await call(
      asLogin.url,
      'resources/list',
      {},
      { Authorization: `Bearer ${await token('support')}` },
    );
    const uris = (support.result?.['resources'] as { uri: string }[]).map(
      (resource) => resource.uri,
    );
    expect(uris.length).toBeGreaterThan(0);
    expect(uris.every((uri) => !uri.startsWith('notes:///architecture/'))).toBe(
      true,
    );
  });
});

/** A token for a role name mintToken itself refuses (to test the server's own refusal). */
async function tokenUnchecked(role: string): Promise<string> {
  const { SignJWT } = await import('jose');
  return new SignJWT({ role })
    .setProtectedHeader({ alg: 'HS256' })
    .setAudience(AUDIENCE)
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(SECRET));
}
