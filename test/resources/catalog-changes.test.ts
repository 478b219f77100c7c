// The pull path for changes: pg://{database}?changes_since={token} answers the URIs the role may
// read that changed since a token, whatever happened to the live listener in between.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';

let sql: pg.Client;
let database: string;
let support: TestServer;
const RUN = Date.now().toString(36);

interface Pulled {
  changes: { uri: string; kind: string }[];
  token: string;
  next: string;
  more: boolean;
}

async function pull(uri: string): Promise<Pulled> {
  const { result, error } = await call(support.url, 'resources/read', { uri });
  expect(error).toBeUndefined();
  const [content] = result?.['contents'] as {
    mimeType: string;
    text: string;
  }[];
  expect(content?.mimeType).toBe('application/json');
  return JSON.parse(content?.text ?? '{}') as Pulled;
}

/** Every change from `uri` on, page by page, until a page says no more. */
async function pullAll(uri: string): Promise<{ uris: string[]; next: string }> {
  const uris: string[] = [];
  let page = await pull(uri);
  uris.push(...page.changes.map((change) => change.uri));
  while (page.more) {
    page = await pull(page.next);
    uris.push(...page.changes.map((change) => change.uri));
  }
  return { uris, next: page.next };
}

async function store(name: string, readers: string): Promise<string> {
  const uri = `notes:///pull-${RUN}/${name}`;
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers) values ($1, $2, 'x', $3)`,
    [uri, name, readers],
  );
  return uri;
}

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  database = new URL(testDatabaseUrl()).pathname.slice(1);
  support = await startTestServer({
    principal: { role: 'support', claims: {} },
    live: {},
    pageSize: 3,
  });
});

afterAll(async () => {
  await support.close();
  await sql.query(`delete from pgmcp.resources where uri like $1`, [
    `notes:///pull-${RUN}/%`,
  ]);
  await sql.end();
});

describe('changes since a token', () => {
  it('answer an empty token with only the current token, and list the template by a name with "change"', async () => {
    const first = await pull(`pg://${database}?changes_since=`);
    expect(first.changes).toEqual([]);
    expect(first.more).toBe(false);
    expect(first.next).toBe(
      `pg://${database}?changes_since=${encodeURIComponent(first.token)}`,
    );
    const templates: { uriTemplate: string; name: string }[] = [];
    let cursor: string | undefined;
    do {
      const { result } = await call(
        support.url,
        'resources/templates/list',
        cursor === undefined ? {} : { cursor },
      );
      templates.push(...(result?.['resourceTemplates'] as typeof templates));
      cursor = result?.['nextCursor'] as string | undefined;
    } while (cursor !== undefined);
    expect(templates).toContainEqual(
      expect.objectContaining({
        uriTemplate: 'pg://{database}{?changes_since}',
        name: 'changes',
      }),
    );
  });

  it('pull every readable change across a listener restart, nothing lost, in pages, and none the role may not read', async () => {
    const { next: start } = await pullAll(`pg://${database}?changes_since=`);
    const before = [
      await store('a', '{support}'),
      await store('b', '{support}'),
    ];
    await store('hidden', '{finance}');
    // The live listener's connection dies and comes back; the pull path does not depend on it.
    await sql.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
        where application_name like 'pgmcp-listener/%' and datname = current_database()`,
    );
    const after = [
      await store('c', '{support}'),
      await store('d', '{public}'),
      await store('e', '{support}'),
    ];
    const { uris, next } = await pullAll(start);
    const mine = uris.filter((uri) => uri.startsWith(`notes:///pull-${RUN}/`));
    expect(new Set(mine)).toEqual(new Set([...before, ...after]));
    // Read again from the last token: nothing new that was already read in full is missed later.
    const late = await store('f', '{support}');
    const again = await pullAll(next);
    expect(again.uris).toContain(late);
    expect(again.uris).not.toContain(`notes:///pull-${RUN}/hidden`);
  });

  it('refuses a token from before a new capture epoch (changes may be missing from the log), saying to re-list', async () => {
    const { next } = await pull(`pg://${database}?changes_since=`);
    // What a new WAL slot, a transaction too large to log row by row, or a switch of source does.
    await sql.query('select pgmcp.begin_capture_epoch()');
    const stale = await call(support.url, 'resources/read', { uri: next });
    expect(stale.error?.code).toBe(-32602);
    expect(stale.error?.message).toContain('captured anew');
    expect(stale.error?.message).toContain('re-list with resources/list');
    const fresh = await pull(`pg://${database}?changes_since=`);
    await store('after-epoch', '{support}');
    expect((await pullAll(fresh.next)).uris).toContain(
      `notes:///pull-${RUN}/after-epoch`,
    );
  });

  it('refuse a token older than the retention, saying to re-list, and a malformed token', async () => {
    const old = await call(support.url, 'resources/read', {
      uri: `pg://${database}?changes_since=1.1.1.1.0.0`,
    });
    expect(old.error?.code).toBe(-32602);
    expect(old.error?.message).toContain('re-list with resources/list');
    const bad = await call(support.url, 'resources/read', {
      uri: `pg://${database}?changes_since=nonsense`,
    });
    expect(bad.error?.code).toBe(-32602);
    expect(bad.error?.message).toContain('Invalid change token');
  });
});
