// stdio: a real child process (bin/pgmcp.js serve --stdio) speaking newline-delimited JSON.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import { META, testDatabaseUrl } from '../setup/harness.js';
import { assertValidResponse } from '../setup/spec-schema.js';

interface Child {
  process: ChildProcessWithoutNullStreams;
  lines: Record<string, unknown>[];
  stderr: string[];
  send(line: string): void;
  waitFor(
    predicate: (message: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>>;
  exit: Promise<number | null>;
}

const children: Child[] = [];

function startChild(): Child {
  const child = spawn(
    process.execPath,
    [
      path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'),
      'serve',
      '--stdio',
      '--no-migrate',
    ],
    {
      env: { ...process.env, DATABASE_URL: testDatabaseUrl() },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const lines: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  const waiters: (() => void)[] = [];
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      // Every stdout line must be one JSON-RPC message (logs belong on stderr).
      lines.push(
        JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>,
      );
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf('\n');
    }
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr.on('data', (chunk: Buffer) =>
    stderr.push(chunk.toString('utf8')),
  );
  const exit = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => resolve(code)),
  );
  const handle: Child = {
    process: child,
    lines,
    stderr,
    send: (line) => child.stdin.write(`${line}\n`),
    async waitFor(predicate) {
      for (;;) {
        const found = lines.find(predicate);
        if (found !== undefined) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    exit,
  };
  children.push(handle);
  return handle;
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
});
