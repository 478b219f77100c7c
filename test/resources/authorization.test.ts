// Row-level security on stored resources: each demo role sees exactly the rows whose readers it
// is a member of, through every method, and a hidden resource reads exactly like a missing one.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  walkList,
  type TestServer,
} from '../setup/harness.js';

const ROLES = ['support', 'engineering', 'finance', 'admin'] as const;
type Role = (typeof ROLES)[number];
const servers = new Map<Role | 'nobody', TestServer>();
let sql: pg.Client;

/** What SQL says `role` may see, computed independently of the policy: readers ∩ memberships. */
const MEMBERSHIPS: Record<Role | 'nobody', string[]> = {
  support: ['support', 'public'],
  engineering: ['engineering', 'public'],
  finance: ['finance', 'public'],
  admin: ['admin', 'support', 'engineering', 'finance', 'public'],
  nobody: ['public'],
};

/** A full walk, checking what every page of a role must be: private, and never empty mid-walk. */
async function walk(url: string): Promise<string[]> {
  const { uris, pages } = await walkList(url);
  pages.forEach((page, index) => {
    const resources = page['resources'] as unknown[];
    if (index > 0 || resources.length > 0)
      expect(resources.length).toBeGreaterThan(0);
    expect(page['cacheScope']).toBe('private');
  });
  return uris;
}

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(
    `do $$ begin if not exists (select from pg_roles where rolname = 'pgmcp_test_nobody') then create role pgmcp_test_nobody nologin; end if; end $$`,
  );
  for (const role of ROLES)
    servers.set(
      role,
      await startTestServer({ principal: { role, claims: {} } }),
    );
  servers.set(
    'nobody',
    await startTestServer({
      principal: { role: 'pgmcp_test_nobody', claims: {} },
    }),
  );
});

afterAll(async () => {
  for (const server of servers.values()) await server.close();
  await sql.end();
});

describe('authorization by readers (RLS)', () => {
  it.each([...ROLES, 'nobody' as const])(
    'resources/list for %s returns exactly the readable rows, in order',
    async (role) => {
      const server = servers.get(role) as TestServer;
      const expected = await sql.query<{ uri: string }>(
        'select uri from pgmcp.resources where readers && $1::text[] order by id',
        [MEMBERSHIPS[role]],
      );
      const all = await walk(server.url);
      const uris = all.filter((uri) => !uri.startsWith('pg://'));
      expect(uris).toEqual(expected.rows.map((row) => row.uri));
      // The catalog follows, limited to what the role holds privileges on.
      const catalog = all.slice(uris.length);
      expect(catalog.every((uri) => uri.startsWith('pg://'))).toBe(true);
      const database = new URL(testDatabaseUrl()).pathname.slice(1);
      if (role === 'support') {
        expect(catalog).toContain(`pg://${database}/shop/orders`);
        expect(catalog.some((uri) => uri.includes('/finance'))).toBe(false);
      }
      if (role === 'finance')
        expect(catalog).toContain(`pg://${database}/finance/invoices`);
      if (role !== 'admin')
        expect(uris.length).toBeLessThan(
          (await sql.query('select 1 from pgmcp.resources')).rowCount ?? 0,
        );
    },
  );

  it('reads a resource its role may see, and answers a hidden one exactly like a missing one', async () => {
    const oncall = 'file:///handbook/teams/engineering/oncall.md';
    const allowed = await call(
      (servers.get('engineering') as TestServer).url,
      'resources/read',
      { uri: oncall },
    );
    expect((allowed.result?.['contents'] as { uri: string }[])[0]?.uri).toBe(
      oncall,
    );
    const viaAdmin = await call(
      (servers.get('admin') as TestServer).url,
      'resources/read',
      { uri: oncall },
    );
    expect(viaAdmin.result).toBeDefined();
    const hidden = await call(
      (servers.get('support') as TestServer).url,
      'resources/read',
      { uri: oncall },
    );
    const missing = await call(
      (servers.get('support') as TestServer).url,
      'resources/read',
      { uri: 'file:///handbook/teams/engineering/missing.md' },
    );
    expect(hidden.error).toEqual({
      ...missing.error,
      data: { ...missing.error?.data, uri: oncall },
    });
    expect(hidden.error?.code).toBe(-32602);
  });

  it('reads a directory with only the children the role may see', async () => {
    const { result } = await call(
      (servers.get('support') as TestServer).url,
      'resources/read',
      { uri: 'file:///handbook/teams/' },
    );
    const uris = (result?.['contents'] as { uri: string }[]).map(
      (content) => content.uri,
    );
    expect(uris).toEqual([
      'file:///handbook/teams/',
      'file:///handbook/teams/support/',
    ]);
  });

  it('filters resource templates the same way', async () => {
    const seen = await call(
      (servers.get('finance') as TestServer).url,
      'resources/templates/list',
    );
    expect(
      (seen.result?.['resourceTemplates'] as { uriTemplate: string }[]).map(
        (t) => t.uriTemplate,
      ),
    ).toContain('notes:///{tag}/{slug}');
    const none = await call(
      (servers.get('nobody') as TestServer).url,
      'resources/templates/list',
    );
    expect(
      (none.result?.['resourceTemplates'] as { uriTemplate: string }[]).map(
        (t) => t.uriTemplate,
      ),
    ).toEqual([
      'pg://{database}/{schema}',
      'pg://{database}/{schema}/{table}',
      'pg://{database}/{schema}/{table}/rows/{key}',
      'test://template/{id}/data',
    ]);
  });

  it('stops showing rows on the next page when a role loses a grant mid-walk', async () => {
    await sql.query(
      `do $$ begin if not exists (select from pg_roles where rolname = 'pgmcp_test_temp') then create role pgmcp_test_temp nologin; end if; end $$; grant finance to pgmcp_test_temp`,
    );
    const server = await startTestServer({
      principal: { role: 'pgmcp_test_temp', claims: {} },
      pageSize: 50,
    });
    try {
      const first = await call(server.url, 'resources/list');
      const firstPage = first.result?.['resources'] as { uri: string }[];
      // The first visible rows are finance's budgets notes: the grant was in effect.
      expect(
        firstPage.every((resource) =>
          resource.uri.startsWith('notes:///budgets/'),
        ),
      ).toBe(true);
      await sql.query('revoke finance from pgmcp_test_temp');
      let cursor = first.result?.['nextCursor'] as string | undefined;
      const rest: string[] = [];
      while (cursor !== undefined) {
        const { result } = await call(server.url, 'resources/list', { cursor });
        rest.push(
          ...(result?.['resources'] as { uri: string }[]).map(
            (resource) => resource.uri,
          ),
        );
        cursor = result?.['nextCursor'] as string | undefined;
      }
      const financeOnly = await sql.query<{ uri: string }>(
        `select uri from pgmcp.resources where readers = array['finance']`,
      );
      expect(financeOnly.rowCount).toBeGreaterThan(0);
      const leaked = financeOnly.rows.filter((row) => rest.includes(row.uri));
      expect(leaked).toEqual([]);
      expect(rest.length).toBeGreaterThan(0); // company-wide rows are still listed
    } finally {
      await server.close();
      await sql.query('drop role if exists pgmcp_test_temp');
    }
  });
});
