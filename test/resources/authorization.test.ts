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

/**
 * seeds/demo/20_notes.sql: 110 notes under each tag, readable by the team that owns the tag
 * ("company" tags by all three teams).
 */
const NOTES_PER_TAG = 110;
const TAGS = {
  engineering: [
    'architecture',
    'backend',
    'frontend',
    'databases',
    'devops',
    'oncall',
    'security',
    'testing',
    'api-design',
    'observability',
  ],
  support: [
    'customer-faq',
    'escalations',
    'billing-help',
    'troubleshooting',
    'onboarding',
    'product-updates',
  ],
  finance: [
    'budgets',
    'invoicing',
    'payroll',
    'forecasting',
    'procurement',
    'audits',
  ],
  company: [
    'handbook',
    'meetings',
    'roadmap',
    'hiring',
    'culture',
    'travel',
    'benefits',
    'announcements',
  ],
} as const;
type Team = keyof typeof TAGS;

/** seeds/demo/30_files.sql, by the team that may read each file. */
const FILES: Record<Team, string[]> = {
  engineering: [
    'file:///handbook/teams/engineering/',
    'file:///handbook/teams/engineering/oncall.md',
    'file:///handbook/teams/engineering/deploys.md',
  ],
  support: [
    'file:///handbook/teams/support/',
    'file:///handbook/teams/support/macros.md',
  ],
  finance: [
    'file:///handbook/teams/finance/',
    'file:///handbook/teams/finance/close.md',
  ],
  company: [
    'file:///handbook/',
    'file:///handbook/README.md',
    'file:///handbook/policies/',
    'file:///handbook/policies/security.md',
    'file:///handbook/policies/expenses.md',
    'file:///handbook/teams/',
    'file:///assets/',
    'file:///assets/logo.png',
    'file:///assets/brochure.pdf',
  ],
};

/** seeds/conformance/10_fixtures.sql: readers 'public', so every role reads them. */
const PUBLIC_FIXTURES = [
  'test://static-text',
  'test://watched-resource',
  'test://static-binary',
];
const TEMPLATE_ROWS = 200; // test://template/1/data … test://template/200/data

/** Whose seed rows each role reads: its own team's (admin is a member of all three), and public. */
const READS: Record<Role | 'nobody', (Team | 'public')[]> = {
  support: ['support', 'company', 'public'],
  engineering: ['engineering', 'company', 'public'],
  finance: ['finance', 'company', 'public'],
  admin: ['engineering', 'support', 'finance', 'company', 'public'],
  nobody: ['public'],
};

/** The seed rows of `groups`, counted by tag for notes, one by one for files and fixtures. */
function seedCounts(groups: readonly (Team | 'public')[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const group of groups) {
    if (group === 'public') {
      for (const uri of PUBLIC_FIXTURES) counts.set(uri, 1);
      counts.set('test://template/', TEMPLATE_ROWS);
      continue;
    }
    for (const tag of TAGS[group])
      counts.set(`notes:///${tag}/`, NOTES_PER_TAG);
    for (const uri of FILES[group]) counts.set(uri, 1);
  }
  return counts;
}

const SEED_KEYS = new Set(seedCounts(READS.admin).keys());

/** `uris` counted under the keys of seedCounts; rows other test files write are left out. */
function countSeedRows(uris: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const uri of uris) {
    const note = /^notes:\/\/\/[^/]+\//.exec(uri)?.[0];
    const template = /^test:\/\/template\/(\d+)\/data$/.exec(uri)?.[1];
    const key =
      note ??
      (template !== undefined && Number(template) <= TEMPLATE_ROWS
        ? 'test://template/'
        : uri);
    if (SEED_KEYS.has(key)) counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

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
    'lists to %s each seed row its team may read exactly once and no other, then the catalog',
    async (role) => {
      const server = servers.get(role) as TestServer;
      const all = await walk(server.url);
      const uris = all.filter((uri) => !uri.startsWith('pg://'));
      expect(new Set(uris).size).toBe(uris.length);
      expect(countSeedRows(uris)).toEqual(seedCounts(READS[role]));
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
      'pg://{database}',
      'pg://{database}{?changes_since}',
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
      const seen = countSeedRows(rest);
      const leaked = [...seen.keys()].filter(
        (key) =>
          TAGS.finance.some((tag) => key === `notes:///${tag}/`) ||
          FILES.finance.includes(key),
      );
      expect(leaked).toEqual([]);
      expect(rest.length).toBeGreaterThan(0); // company-wide rows are still listed
    } finally {
      await server.close();
      await sql.query('drop role if exists pgmcp_test_temp');
    }
  });
});
