// search: full-text search over stored resources and the catalog as the caller's role, answered in
// the ChatGPT connector shape plus resource_links; no result, snippet or count from what the role
// cannot read.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';

let support: TestServer;
let finance: TestServer;
let sql: pg.Client;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  support = await startTestServer({
    principal: { role: 'support', claims: {} },
  });
  finance = await startTestServer({
    principal: { role: 'finance', claims: {} },
  });
});

afterAll(async () => {
  await Promise.all([support.close(), finance.close()]);
  await sql.end();
});

interface Answer {
  results: { id: string; title: string; url: string; snippet: string }[];
  more: number;
}

async function search(server: TestServer, query: string) {
  const { result, error } = await call(server.url, 'tools/call', {
    name: 'search',
    arguments: { query },
  });
  expect(error).toBeUndefined();
  expect(result?.['isError']).toBeUndefined();
  return {
    structured: result?.['structuredContent'] as Answer,
    content: result?.['content'] as Record<string, unknown>[],
  };
}

/** URIs of stored resources only `readers` may read (seed facts, read as the superuser). */
async function onlyReadableBy(readers: string[]): Promise<Set<string>> {
  const { rows } = await sql.query<{ uri: string }>(
    'select uri from pgmcp.resources where readers = $1::text[]',
    [readers],
  );
  return new Set(rows.map((row) => row.uri));
}

describe('search', () => {
  it("finds a finance note for finance, and for support nothing of finance's, not even a count", async () => {
    const financeOnly = await onlyReadableBy(['finance']);
    const { rows } = await sql.query<{ title: string; uri: string }>(
      "select title, uri from pgmcp.resources where readers = array['finance'] and title is not null order by uri limit 1",
    );
    const note = rows[0] as { title: string; uri: string };
    const found = await search(finance, `"${note.title}"`);
    expect(found.structured.results.map((result) => result.id)).toContain(
      note.uri,
    );
    const hidden = await search(support, `"${note.title}"`);
    for (const result of hidden.structured.results)
      expect(financeOnly.has(result.id)).toBe(false);
    const supportCanRead = await sql.query<{ n: string }>(
      `select count(*)::text as n from pgmcp.resources
       where readers && array['support', 'public'] and title = $1`,
      [note.title],
    );
    if (supportCanRead.rows[0]?.n === '0')
      expect(
        hidden.structured.results.filter(
          (result) => result.title === note.title,
        ),
      ).toEqual([]);
  });

  it('answers the connector contract: one JSON text of results, then a resource_link per result', async () => {
    const { structured, content } = await search(support, 'refund');
    expect(structured.results.length).toBeGreaterThan(0);
    expect(JSON.parse((content[0] as { text: string }).text)).toEqual({
      results: structured.results.map(({ id, title, url }) => ({
        id,
        title,
        url,
      })),
    });
    const links = content.filter((block) => block['type'] === 'resource_link');
    expect(links.map((link) => link['uri'])).toEqual(
      structured.results.map((result) => result.id),
    );
    for (const result of structured.results) expect(result.url).toBe(result.id);
  });

  it('returns 20 results by default and says how many more matched', async () => {
    const { structured, content } = await search(support, 'refund');
    const { rows } = await sql.query<{ n: string }>(
      `select count(*)::text as n from pgmcp.resources
       where readers && array['support', 'public']
         and pgmcp.search_document(title, description, text) @@ websearch_to_tsquery('english', 'refund')`,
    );
    const readable = Number(rows[0]?.n);
    expect(readable).toBeGreaterThan(20);
    expect(structured.results).toHaveLength(20);
    expect(structured.more).toBeGreaterThanOrEqual(readable - 20);
    expect(String(content.at(-1)?.['text'])).toContain(
      `${structured.more} more matched`,
    );
  });

  it('highlights the matched words in the snippet', async () => {
    const { structured } = await search(support, 'refund');
    expect(structured.results[0]?.snippet.toLowerCase()).toContain('**refund');
  });

  it('finds relations by name for a role that may read them, and not for one that may not', async () => {
    const invoices = 'pg://pgmcp_test/finance/invoices';
    const forFinance = await search(finance, 'invoices');
    expect(forFinance.structured.results.map((result) => result.id)).toContain(
      invoices,
    );
    const forSupport = await search(support, 'invoices');
    expect(
      forSupport.structured.results.map((result) => result.id),
    ).not.toContain(invoices);
  });
});

describe('search and sensitive data', () => {
  it('never returns a resource marked sensitive, nor a snippet of it, even to a role that may read it', async () => {
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers, sensitive)
       values ('notes:///search-test/payroll', 'payroll', 'quarzite payroll figures', '{finance}', true)`,
    );
    try {
      const { structured, content } = await search(finance, 'quarzite payroll');
      expect(structured.results.map((found) => found.id)).not.toContain(
        'notes:///search-test/payroll',
      );
      expect(JSON.stringify(content)).not.toContain('quarzite');
      // The same row, not sensitive, is found: the filter is what kept it out.
      await sql.query(
        "update pgmcp.resources set sensitive = false where uri = 'notes:///search-test/payroll'",
      );
      const plain = await search(finance, 'quarzite payroll');
      expect(plain.structured.results.map((found) => found.id)).toContain(
        'notes:///search-test/payroll',
      );
    } finally {
      await sql.query(
        "delete from pgmcp.resources where uri = 'notes:///search-test/payroll'",
      );
    }
  });
});
