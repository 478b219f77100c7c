// Stored prompts against the demo and conformance seeds and real roles: prompts/list, prompts/get
// rendered as the caller (links and embedded descriptions only of what its role can read), the
// errors the spec names, and completion of prompt arguments.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const DEMO_PROMPTS = ['digest', 'explain-table', 'write-query'];
const CONFORMANCE_PROMPTS = [
  'test_simple_prompt',
  'test_prompt_with_arguments',
  'test_prompt_with_embedded_resource',
  'test_prompt_with_image',
];

let support: TestServer;
let engineering: TestServer;
let finance: TestServer;
let nobody: TestServer;
let sql: pg.Client;
let database: string;

type Message = { role: string; content: Record<string, unknown> };

async function getPrompt(
  server: TestServer,
  name: string,
  args?: Record<string, string>,
) {
  // Mcp-Name mirrors params.name for prompts/get (spec §14.2).
  return call(
    server.url,
    'prompts/get',
    { name, ...(args === undefined ? {} : { arguments: args }) },
    { 'Mcp-Name': name },
  );
}

function messagesOf(result: Record<string, unknown> | undefined): Message[] {
  return (result?.['messages'] ?? []) as Message[];
}

function linksOf(result: Record<string, unknown> | undefined): string[] {
  return messagesOf(result)
    .filter((message) => message.content['type'] === 'resource_link')
    .map((message) => message.content['uri'] as string);
}

/** Every prompt name the server lists, following cursors. */
async function listAll(server: TestServer): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const { result, error } = await call(
      server.url,
      'prompts/list',
      cursor === undefined ? {} : { cursor },
    );
    expect(error).toBeUndefined();
    names.push(
      ...(result?.['prompts'] as { name: string }[]).map((p) => p.name),
    );
    cursor = result?.['nextCursor'] as string | undefined;
  } while (cursor !== undefined);
  return names;
}

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(
    `do $$ begin if not exists (select from pg_roles where rolname = 'pgmcp_test_nobody') then create role pgmcp_test_nobody nologin; end if; end $$`,
  );
  database = (
    await sql.query<{ name: string }>('select current_database() as name')
  ).rows[0]?.name as string;
  const as = (role: string) =>
    startTestServer({ principal: { role, claims: {} }, pageSize: 3 });
  [support, engineering, finance, nobody] = await Promise.all([
    as('support'),
    as('engineering'),
    as('finance'),
    as('pgmcp_test_nobody'),
  ]);
});

afterAll(async () => {
  await Promise.all(
    [support, engineering, finance, nobody].map((server) => server?.close()),
  );
  await sql?.end();
});

describe('prompts/list', () => {
  it('lists the prompts a role can read, in pages with no repeats and no cursor on the last', async () => {
    const names = await listAll(support);
    expect(names).toEqual([...DEMO_PROMPTS, ...CONFORMANCE_PROMPTS]);
    expect(new Set(names).size).toBe(names.length);
  });

  it('hides prompts whose readers the role is not among', async () => {
    expect(await listAll(nobody)).toEqual(CONFORMANCE_PROMPTS);
  });

  it('shows name, title, description and the spec fields of each argument, cacheable per caller', async () => {
    const { result } = await call(support.url, 'prompts/list');
    expect(result?.['ttlMs']).toBeGreaterThan(0);
    expect(result?.['cacheScope']).toBe('private');
    const digest = (result?.['prompts'] as Record<string, unknown>[])[0];
    expect(digest).toEqual({
      name: 'digest',
      title: 'Digest of a tag',
      description: expect.any(String) as unknown,
      arguments: [
        {
          name: 'tag',
          title: 'Tag',
          description: 'The notes tag to digest, e.g. oncall.',
          required: true,
        },
      ],
    });
  });

  it('rejects a forged cursor and a cursor of another list with -32602, never answering the first page', async () => {
    const first = await call(support.url, 'prompts/list');
    const cursor = first.result?.['nextCursor'] as string;
    const forged = `${cursor.slice(0, -2)}${cursor.endsWith('A') ? 'BB' : 'AA'}`;
    const resources = await call(support.url, 'resources/list');
    for (const bad of [
      forged,
      'v1.e30.AAAA',
      resources.result?.['nextCursor'] as string,
    ]) {
      const { error, result } = await call(support.url, 'prompts/list', {
        cursor: bad,
      });
      expect(result).toBeUndefined();
      expect(error?.code).toBe(-32602);
    }
  });
});

describe('prompts/get', () => {
  it('answers digest with one resource_link per resource of the tag the role can read', async () => {
    // Ground truth from SQL: oncall is engineering's tag; handbook is everyone's.
    const tagged = async (tag: string, role: string) =>
      (
        await sql.query<{ uri: string }>(
          `select uri from pgmcp.resources where $1 = any(tags) and $2 = any(readers) order by uri collate "C"`,
          [tag, role],
        )
      ).rows.map((row) => row.uri);
    const oncall = await getPrompt(engineering, 'digest', { tag: 'oncall' });
    const expected = await tagged('oncall', 'engineering');
    expect(expected.length).toBeGreaterThan(100);
    expect(linksOf(oncall.result)).toEqual(expected);
    const first = messagesOf(oncall.result)[0];
    expect(first?.content['type']).toBe('text');
    expect(first?.content['text']).toContain('oncall');
    // support cannot read engineering's oncall notes: the instruction, and no links.
    const hidden = await getPrompt(support, 'digest', { tag: 'oncall' });
    expect(hidden.error).toBeUndefined();
    expect(linksOf(hidden.result)).toEqual([]);
    const shared = await getPrompt(support, 'digest', { tag: 'handbook' });
    expect(linksOf(shared.result)).toEqual(await tagged('handbook', 'support'));
  });

  it('embeds the description of the table explain-table names, read as the caller', async () => {
    const { result } = await getPrompt(support, 'explain-table', {
      table: 'shop.customers',
    });
    const embedded = messagesOf(result).find(
      (message) => message.content['type'] === 'resource',
    );
    const resource = embedded?.content['resource'] as Record<string, unknown>;
    expect(resource['uri']).toBe(`pg://${database}/shop/customers`);
    expect(resource['text']).toContain('full_name');
    // A bare name that one visible schema holds means that table.
    const bare = await getPrompt(support, 'explain-table', {
      table: 'customers',
    });
    expect(JSON.stringify(bare.result)).toContain(
      `pg://${database}/shop/customers`,
    );
  });

  it('answers a table the role cannot see exactly like one that does not exist', async () => {
    // finance holds no privilege on shop.customers (seeds/demo/50_company_grants.sql).
    const hidden = await getPrompt(finance, 'explain-table', {
      table: 'shop.customers',
    });
    const missing = await getPrompt(finance, 'explain-table', {
      table: 'shop.no_such_table',
    });
    expect(hidden.error?.code).toBe(-32602);
    expect(missing.error?.code).toBe(-32602);
    expect(hidden.error?.message).toBe(
      missing.error?.message.replace('no_such_table', 'customers'),
    );
  });

  it('links the tables write-query names, or those the question mentions, and points at the query tool', async () => {
    const named = await getPrompt(finance, 'write-query', {
      question: 'What did we sell last month?',
      tables: 'shop.products, finance.invoices',
    });
    expect(linksOf(named.result)).toEqual([
      `pg://${database}/shop/products`,
      `pg://${database}/finance/invoices`,
    ]);
    expect(messagesOf(named.result)[0]?.content['text']).toContain(
      'query tool',
    );
    const mentioned = await getPrompt(support, 'write-query', {
      question: 'How many orders did each customer place?',
    });
    expect(linksOf(mentioned.result).sort()).toEqual([
      `pg://${database}/shop/customers`,
      `pg://${database}/shop/orders`,
    ]);
  });

  it('substitutes arguments and serves the conformance fixtures', async () => {
    const { result } = await getPrompt(nobody, 'test_prompt_with_arguments', {
      arg1: 'hello',
      arg2: 'world',
    });
    expect(messagesOf(result)).toEqual([
      {
        role: 'user',
        content: {
          type: 'text',
          text: "Prompt with arguments: arg1='hello', arg2='world'",
        },
      },
    ]);
    const image = await getPrompt(nobody, 'test_prompt_with_image');
    expect(messagesOf(image.result)[0]?.content).toMatchObject({
      type: 'image',
      mimeType: 'image/png',
    });
  });

  it('answers -32602 for an unknown prompt, one the role cannot read, a missing required argument and an unknown one', async () => {
    const cases = [
      await getPrompt(support, 'no-such-prompt'),
      await getPrompt(nobody, 'digest', { tag: 'oncall' }),
      await getPrompt(support, 'digest'),
      await getPrompt(support, 'digest', { tag: 'oncall', extra: 'x' }),
      await getPrompt(nobody, 'test_prompt_with_embedded_resource', {
        resourceUri: 'not a uri',
      }),
    ];
    for (const { error, result } of cases) {
      expect(result).toBeUndefined();
      expect(error?.code).toBe(-32602);
    }
    expect(cases[0]?.error?.message).toBe(
      cases[1]?.error?.message.replace('digest', 'no-such-prompt'),
    );
  });
});

describe('completion of prompt arguments', () => {
  const complete = (
    server: TestServer,
    name: string,
    argument: { name: string; value: string },
  ) =>
    call(server.url, 'completion/complete', {
      ref: { type: 'ref/prompt', name },
      argument,
    });

  it('suggests the tags of notes the role can read', async () => {
    const engineers = await complete(engineering, 'digest', {
      name: 'tag',
      value: 'on',
    });
    expect(engineers.result?.['completion']).toMatchObject({
      values: ['oncall'],
    });
    const supporters = await complete(support, 'digest', {
      name: 'tag',
      value: 'on',
    });
    expect(supporters.result?.['completion']).toMatchObject({
      values: ['onboarding'],
    });
  });

  it('suggests the tables the role can see, completing the last of a list', async () => {
    const one = await complete(finance, 'explain-table', {
      name: 'table',
      value: 'shop.',
    });
    expect(one.result?.['completion']).toMatchObject({
      values: ['shop.order_items', 'shop.orders', 'shop.products'],
    });
    const list = await complete(finance, 'write-query', {
      name: 'tables',
      value: 'shop.orders, finance.inv',
    });
    expect(list.result?.['completion']).toMatchObject({
      values: ['shop.orders, finance.invoices'],
    });
  });

  it('answers -32602 for an unknown prompt or argument', async () => {
    for (const { error } of [
      await complete(support, 'no-such-prompt', { name: 'tag', value: '' }),
      await complete(support, 'digest', { name: 'nope', value: '' }),
    ])
      expect(error?.code).toBe(-32602);
  });
});

describe('prompts in the 2025-11-25 era', () => {
  it('lists and gets prompts through the same handlers, without 2026-only fields', async () => {
    const session = await openSession(support.url);
    const headers = sessionHeaders(session);
    const listed = await legacyPost(
      support.url,
      { method: 'prompts/list' },
      headers,
    );
    expect(listed.result?.['prompts']).toHaveLength(3);
    expect(listed.result).not.toHaveProperty('ttlMs');
    const got = await legacyPost(
      support.url,
      {
        method: 'prompts/get',
        params: { name: 'digest', arguments: { tag: 'handbook' } },
      },
      headers,
    );
    expect(messagesOf(got.result).length).toBeGreaterThan(1);
    const initialize = await legacyPost(support.url, {
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'legacy-test', version: '1.0.0' },
      },
    });
    expect(initialize.result?.['capabilities']).toMatchObject({
      prompts: { listChanged: true },
    });
  });
});
