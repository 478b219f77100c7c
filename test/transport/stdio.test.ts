// stdio: a real child process (bin/pgmcp.js serve --stdio) speaking newline-delimited JSON.
import { afterEach, describe, expect, it } from 'vitest';
import { META, testDatabaseUrl } from '../setup/harness.js';
import { startStdioChild, type StdioChild } from '../setup/stdio-child.js';
import pg from 'pg';
import {
  assertValidNotification,
  assertValidResponse,
} from '../setup/spec-schema.js';

const children: StdioChild[] = [];

function startChild(): StdioChild {
  const child = startStdioChild({ DATABASE_URL: testDatabaseUrl() });
  children.push(child);
  return child;
}

afterEach(() => {
  for (const child of children.splice(0)) child.process.kill('SIGKILL');
});

const request = (
  id: number | string,
  method: string,
  params: Record<string, unknown> = {},
) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method,
    params: { _meta: META, ...params },
  });

describe('stdio transport', () => {
  it('answers discover, list and read, each on one stdout line', async () => {
    const child = startChild();
    child.send(request(1, 'server/discover'));
    child.send(request('two', 'resources/list'));
    child.send(request(3, 'resources/read', { uri: 'test://static-text' }));
    const discover = await child.waitFor((message) => message['id'] === 1);
    const list = await child.waitFor((message) => message['id'] === 'two');
    const read = await child.waitFor((message) => message['id'] === 3);
    assertValidResponse('server/discover', discover);
    assertValidResponse('resources/list', list);
    assertValidResponse('resources/read', read);
    expect(discover).toMatchObject({
      result: { supportedVersions: ['2026-07-28'] },
    });
    expect((list['result'] as { resources: unknown[] }).resources).toHaveLength(
      100,
    );
    expect(read).toMatchObject({
      result: {
        contents: [
          { text: 'This is the content of the static text resource.' },
        ],
      },
    });
    child.process.stdin.end();
    expect(await child.exit).toBe(0);
    expect(child.stderr.join('')).toContain('serving MCP 2026-07-28 on stdio');
  });

  it('drops the response of a request cancelled with notifications/cancelled', async () => {
    const child = startChild();
    child.send(
      `${request(10, 'resources/list')}\n${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 10 } })}`,
    );
    child.send(request(11, 'server/discover'));
    await child.waitFor((message) => message['id'] === 11);
    child.process.stdin.end();
    await child.exit;
    expect(child.lines.some((message) => message['id'] === 10)).toBe(false);
  });

  it('survives malformed and hostile lines, answering each with a JSON-RPC error, then works', async () => {
    const child = startChild();
    const hostile = [
      '{',
      'null',
      '[]',
      '[{"jsonrpc":"2.0","id":1,"method":"server/discover"}]',
      '{"jsonrpc":"2.0","id":5}',
      '{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"_meta":{}}}',
      '\u0000',
    ];
    for (const line of hostile) child.send(line);
    child.send(request(99, 'resources/read', { uri: 'file:///../etc/passwd' }));
    child.send(request(100, 'server/discover'));
    const last = await child.waitFor((message) => message['id'] === 100);
    expect(last).toHaveProperty('result');
    const traversal = await child.waitFor((message) => message['id'] === 99);
    // Requests run concurrently: the claim-less line (now the legacy era's) may answer last.
    await child.waitFor((message) => message['id'] === 6);
    expect(traversal).toMatchObject({
      error: { code: -32602, data: { code: 'INVALID_URI' } },
    });
    const errors = child.lines.filter(
      (message) => message['error'] !== undefined,
    );
    expect(errors.length).toBe(hostile.length + 1);
    for (const message of errors) assertValidResponse(undefined, message);
    child.process.stdin.end();
    expect(await child.exit).toBe(0);
  });

  it('carries listen streams on stdout, tagged by subscription id, ended by notifications/cancelled or gracefully on SIGTERM', async () => {
    const sql = new pg.Client({ connectionString: testDatabaseUrl() });
    await sql.connect();
    const uri = `notes:///stdio-live/n${process.pid}`;
    try {
      await sql.query(
        `insert into pgmcp.resources (uri, name, text, readers) values ($1, 'n', 'v1', '{public}')
         on conflict (uri) do update set text = 'v1'`,
        [uri],
      );
      const child = startChild();
      const request = (id: string, method: string, params: object) =>
        child.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id,
            method,
            params: { _meta: META, ...params },
          }),
        );
      const tagged = (id: string) => (message: Record<string, unknown>) =>
        (message['params'] as Record<string, Record<string, unknown>>)?.[
          '_meta'
        ]?.['io.modelcontextprotocol/subscriptionId'] === id;
      const updates = (id: string) =>
        child.lines.filter(
          (message) =>
            message['method'] === 'notifications/resources/updated' &&
            tagged(id)(message),
        );
      request('L1', 'subscriptions/listen', {
        notifications: { resourceSubscriptions: [uri] },
      });
      const ack = await child.waitFor(tagged('L1'));
      expect(ack).toMatchObject({
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: { resourceSubscriptions: [uri] } },
      });
      // Ordinary requests keep working beside the stream.
      request('d1', 'server/discover', {});
      await child.waitFor((message) => message['id'] === 'd1');
      await sql.query(`update pgmcp.resources set text = 'v2' where uri = $1`, [
        uri,
      ]);
      await child.waitFor(
        (message) => updates('L1').length > 0 && message === updates('L1')[0],
      );
      expect(updates('L1')[0]?.['params']).toMatchObject({ uri });

      // Cancelled: no more notifications for L1, and no response to it either.
      child.send(
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 'L1' },
        }),
      );
      request('L2', 'subscriptions/listen', {
        notifications: { resourceSubscriptions: [uri] },
      });
      await child.waitFor(tagged('L2'));
      await sql.query(`update pgmcp.resources set text = 'v3' where uri = $1`, [
        uri,
      ]);
      await child.waitFor(() => updates('L2').length > 0);
      expect(updates('L1')).toHaveLength(1);
      expect(child.lines.some((message) => message['id'] === 'L1')).toBe(false);

      // A second open stream with the same id is refused (ids tell streams apart on stdio).
      request('L2', 'subscriptions/listen', {
        notifications: { resourcesListChanged: true },
      });
      const duplicate = await child.waitFor(
        (message) => message['id'] === 'L2' && message['error'] !== undefined,
      );
      expect(duplicate['error']).toMatchObject({ code: -32600 });

      // SIGTERM ends L2 gracefully: its SubscriptionsListenResult, then exit.
      child.process.kill('SIGTERM');
      expect(await child.exit).toBe(0);
      const result = child.lines.find(
        (message) => message['id'] === 'L2' && message['result'] !== undefined,
      );
      expect(result).toMatchObject({
        result: {
          resultType: 'complete',
          _meta: { 'io.modelcontextprotocol/subscriptionId': 'L2' },
        },
      });
      for (const message of child.lines) {
        if (message['method'] !== undefined) assertValidNotification(message);
        else
          assertValidResponse(
            message['id'] === 'd1' ? 'server/discover' : 'subscriptions/listen',
            message,
          );
      }
    } finally {
      await sql.query('delete from pgmcp.resources where uri = $1', [uri]);
      await sql.end();
    }
  });
});
