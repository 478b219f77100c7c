// completion/complete for resource-template arguments, against the demo data and real roles:
// suggestions come from what the caller's role can read, and nothing else.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { match } from '../setup/matchers.js';

let support: TestServer;
let engineering: TestServer;
let nobody: TestServer;
let sql: pg.Client;

/** The note tags `memberships` can read, from SQL, independently of the server. */
async function readableTags(memberships: string[]): Promise<string[]> {
  const { rows } = await sql.query<{ tag: string }>(
    `select distinct split_part(substr(uri, length('notes:///') + 1), '/', 1) as tag
       from pgmcp.resources where uri like 'notes:///%' and readers && $1::text[] order by 1`,
    [memberships],
  );
  return rows.map((row) => row.tag);
}

function complete(
  server: TestServer,
  uri: string,
  argument: { name: string; value: string },
  context?: Record<string, string>,
) {
  return call(server.url, 'completion/complete', {
    ref: { type: 'ref/resource', uri },
    argument,
    ...(context === undefined ? {} : { context: { arguments: context } }),
  });
}

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(
    `do $$ begin if not exists (select from pg_roles where rolname = 'pgmcp_test_nobody') then create role pgmcp_test_nobody nologin; end if; end $$`,
  );
  support = await startTestServer({
    principal: { role: 'support', claims: {} },
  });
  engineering = await startTestServer({
    principal: { role: 'engineering', claims: {} },
  });
  nobody = await startTestServer({
    principal: { role: 'pgmcp_test_nobody', claims: {} },
  });
});

afterAll(async () => {
  await support.close();
  await engineering.close();
  await nobody.close();
  await sql.end();
});

describe('completion/complete', () => {
  it('is declared in server/discover', async () => {
    const { result } = await call(support.url, 'server/discover');
    expect(result?.['capabilities']).toMatchObject({ completions: {} });
  });

  it('suggests exactly the note tags the role can read that start with what was typed', async () => {
    for (const [server, memberships] of [
      [support, ['support', 'public']],
      [engineering, ['engineering', 'public']],
    ] as const) {
      const expected = (await readableTags([...memberships])).filter((tag) =>
        tag.startsWith('o'),
      );
      const { result } = await complete(server, 'notes:///{tag}/{slug}', {
        name: 'tag',
        value: 'o',
      });
      expect(result?.['completion']).toEqual({
        values: expected,
        total: expected.length,
        hasMore: false,
      });
    }
    // Engineering's oncall and observability; support's onboarding: different lists.
    expect(await readableTags(['support', 'public'])).not.toContain('oncall');
  });

  it('uses earlier arguments from context and caps the answer at 100 values', async () => {
    const { rows } = await sql.query<{ slug: string }>(
      `select substr(uri, length('notes:///oncall/') + 1) as slug from pgmcp.resources
        where uri like 'notes:///oncall/%' order by uri`,
    );
    expect(rows.length).toBeGreaterThan(100);
    const { result } = await complete(
      engineering,
      'notes:///{tag}/{slug}',
      { name: 'slug', value: '' },
      { tag: 'oncall' },
    );
    const completion = result?.['completion'] as {
      values: string[];
      total: number;
      hasMore: boolean;
    };
    expect(completion.values).toHaveLength(100);
    expect(completion.total).toBe(rows.length);
    expect(completion.hasMore).toBe(true);
    expect(completion.values).toEqual(
      rows
        .map((row) => row.slug)
        .sort()
        .slice(0, 100),
    );
    // The same tag is not support's: nothing to suggest, and no error.
    const hidden = await complete(
      support,
      'notes:///{tag}/{slug}',
      { name: 'slug', value: '' },
      { tag: 'oncall' },
    );
    expect(hidden.result?.['completion']).toEqual({
      values: [],
      total: 0,
      hasMore: false,
    });
  });

  it('lists the catalog templates and completes them from what the role can see in pg_catalog', async () => {
    const { result: templates } = await call(
      support.url,
      'resources/templates/list',
    );
    expect(
      (templates?.['resourceTemplates'] as { uriTemplate: string }[]).map(
        (template) => template.uriTemplate,
      ),
    ).toEqual(
      expect.arrayContaining([
        'pg://{database}/{schema}',
        'pg://{database}/{schema}/{table}',
      ]),
    );
    const database = new URL(testDatabaseUrl()).pathname.slice(1);
    const values = async (
      name: string,
      value: string,
      context?: Record<string, string>,
    ) =>
      (
        (
          await complete(
            support,
            'pg://{database}/{schema}/{table}',
            { name, value },
            context,
          )
        ).result?.['completion'] as { values: string[] }
      ).values;
    expect(await values('database', '')).toEqual([database]);
    const schemas = await values('schema', '');
    expect(schemas).toEqual(expect.arrayContaining(['shop', 'support']));
    for (const hidden of [
      'finance',
      'pgmcp',
      'pg_catalog',
      'information_schema',
    ])
      expect(schemas).not.toContain(hidden);
    expect(await values('schema', 'sh')).toEqual(['shop']);
    // support holds privileges on three of shop's four tables.
    expect(await values('table', '', { schema: 'shop' })).toEqual([
      'customers',
      'order_items',
      'orders',
    ]);
    expect(await values('table', 'ord', { schema: 'shop' })).toEqual([
      'order_items',
      'orders',
    ]);
    expect(await values('table', '')).toEqual([]);
  });

  it('completes reserved-expansion paths, slashes and all', async () => {
    const { result } = await complete(support, 'file:///{+path}', {
      name: 'path',
      value: 'handbook/te',
    });
    const values = (result?.['completion'] as { values: string[] }).values;
    expect(values.length).toBeGreaterThan(0);
    for (const value of values)
      expect(value.startsWith('handbook/te')).toBe(true);
    expect(values).toContain('handbook/teams/');
  });

  it.each([
    [
      'an unknown prompt',
      { type: 'ref/prompt', name: 'no-such-prompt' },
      'tag',
      /unknown prompt/,
    ],
    [
      'an unknown template',
      { type: 'ref/resource', uri: 'notes:///{x}' },
      'x',
      /unknown resource template/,
    ],
    [
      'a malformed template',
      { type: 'ref/resource', uri: 'notes:///{tag' },
      'tag',
      /unknown resource template/,
    ],
    [
      'a variable the template lacks',
      { type: 'ref/resource', uri: 'notes:///{tag}/{slug}' },
      'nope',
      /has no variable/,
    ],
    ['an unknown ref type', { type: 'ref/tool', name: 'x' }, 'tag', /ref/],
  ])('answers %s with -32602', async (_name, ref, argument, message) => {
    const { error } = await call(support.url, 'completion/complete', {
      ref,
      argument: { name: argument, value: '' },
    });
    expect(error).toMatchObject({
      code: -32602,
      message: match.stringMatching(message),
    });
  });

  it('answers a template the role cannot see exactly like one that does not exist', async () => {
    const hidden = await complete(nobody, 'notes:///{tag}/{slug}', {
      name: 'tag',
      value: '',
    });
    const missing = await complete(nobody, 'notes:///{nothing}/{here}', {
      name: 'nothing',
      value: '',
    });
    expect(hidden.error).toEqual(missing.error);
    expect(hidden.error?.code).toBe(-32602);
  });
});
