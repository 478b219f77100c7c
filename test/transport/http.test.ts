// Streamable HTTP: the endpoint's HTTP rules, the MCP header matrix, DNS rebinding, bad input.
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  META,
  call,
  mcpHeaders,
  postRaw,
  startTestServer,
  type TestServer,
} from '../setup/harness.js';
import { match } from '../setup/matchers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    maxBodyBytes: 64 * 1024,
    allowedOrigins: ['https://app.example.com'],
  });
});

afterAll(async () => {
  await server.close();
});

const readBody = (uri: string, id: number | string = 1) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'resources/read',
    params: { _meta: META, uri },
  });

/** A raw HTTP request with full control over Host and the body (fetch forbids setting Host). */
function rawRequest(options: {
  method?: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}): Promise<{ status: number; body: string }> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: options.method ?? 'POST',
        headers: options.headers,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    if (options.body !== undefined) request.write(options.body);
    request.end();
  });
}

/** `promise`, or a failure naming the wait if it takes longer than `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`not settled within ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('HTTP endpoint', () => {
  it('answers PUT with 405; GET and DELETE without a session with 400 (legacy sessions own them)', async () => {
    const put = await fetch(server.url, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST, DELETE');
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(server.url, { method });
      expect(response.status, method).toBe(400);
      expect(await response.json(), method).toMatchObject({
        error: { code: -32600, data: { code: 'SESSION_REQUIRED' } },
      });
    }
  });

  it('accepts a notification with 202 and no body (even without Mcp-Method)', async () => {
    const response = await postRaw(
      server.url,
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'x' },
      }),
      {
        'Content-Type': 'application/json',
        'MCP-Protocol-Version': '2026-07-28',
      },
    );
    expect(response.status).toBe(202);
    expect(response.text).toBe('');
  });

  it('refuses a body over the limit with 413, before parsing, by Content-Length or by counting', async () => {
    const big = readBody(`notes:///${'x'.repeat(70 * 1024)}`);
    const declared = await postRaw(
      server.url,
      big,
      mcpHeaders('resources/read', 'notes:///x'),
    );
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({
      error: { code: -32600, data: { code: 'PAYLOAD_TOO_LARGE' } },
    });
    // Chunked: no Content-Length, so the server counts while reading; invalid JSON proves no parse.
    const chunked = await rawRequest({
      headers: {
        ...mcpHeaders('resources/list'),
        Host: new URL(server.url).host,
        'Transfer-Encoding': 'chunked',
      },
      body: '{'.repeat(70 * 1024),
    });
    expect(chunked.status).toBe(413);
  });

  it('lets a Node http client that sends a 5 MB body with request.end(body) read the 413, 30 times in 30', async () => {
    // The client runs in its own process, as a user's would: sharing this event loop hides the race
    // between the client reading the 413 and a reset from a server that closed with the body unread.
    const client = `
      import http from 'node:http';
      const url = new URL(process.argv[1]);
      const body = Buffer.alloc(5 * 1024 * 1024, 'x');
      const outcomes = [];
      for (let attempt = 0; attempt < 30; attempt += 1) {
        outcomes.push(await new Promise((resolve) => {
          const request = http.request(url, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'Mcp-Method': 'resources/list' },
          }, (response) => {
            response.resume();
            resolve(String(response.statusCode));
          });
          request.on('error', (error) => resolve(error.code ?? error.message));
          request.end(body);
        }));
      }
      process.stdout.write(JSON.stringify(outcomes));
    `;
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', client, server.url],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    expect(JSON.parse(output)).toEqual(Array<string>(30).fill('413'));
  }, 120_000); // 30 uploads of 5 MB from a child process

  it('bounds the drain after a 413: a client that never stops sending, or stalls, is cut off', async () => {
    const bounded = await startTestServer({
      maxBodyBytes: 1024,
      drain: { ms: 300, bytes: 256 * 1024 },
    });
    const url = new URL(bounded.url);
    try {
      // Sends forever: the byte bound closes the connection.
      const endless = http.request(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
      });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = (): void => {
        while (!endless.destroyed && endless.write(chunk));
      };
      endless.on('drain', pump);
      endless.on('error', () => undefined);
      pump();
      await within(
        10_000,
        new Promise((resolve) => endless.on('close', resolve)),
      );
      // Declares 10 MB, sends none of it: the time bound closes the connection.
      const stalled = net.connect(Number(url.port), url.hostname);
      stalled.on('error', () => undefined);
      let answer = '';
      stalled.on('data', (data: Buffer) => (answer += data.toString()));
      stalled.write(
        `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n`,
      );
      await within(
        10_000,
        new Promise((resolve) => stalled.on('close', resolve)),
      );
      expect(answer).toMatch(/^HTTP\/1\.1 413 .*\r\nConnection: close\r\n/s);
    } finally {
      await bounded.close();
    }
  });

  it('refuses a wrong Content-Type with 415 and an unacceptable Accept with 406', async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'resources/list',
      params: { _meta: META },
    });
    const wrongType = await postRaw(server.url, body, {
      ...mcpHeaders('resources/list'),
      'Content-Type': 'text/plain',
    });
    expect(wrongType.status).toBe(415);
    const wrongAccept = await postRaw(server.url, body, {
      ...mcpHeaders('resources/list'),
      Accept: 'text/html',
    });
    expect(wrongAccept.status).toBe(406);
  });

  it('answers malformed JSON with -32700, a batch and a non-request with -32600', async () => {
    const parse = await postRaw(
      server.url,
      '{"jsonrpc":',
      mcpHeaders('resources/list'),
    );
    expect(parse.status).toBe(400);
    expect(parse.body).toMatchObject({
      jsonrpc: '2.0',
      error: { code: -32700 },
    });
    expect(parse.body).not.toHaveProperty('id');
    const batch = await postRaw(
      server.url,
      JSON.stringify([
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'resources/list',
          params: { _meta: META },
        },
      ]),
      mcpHeaders('resources/list'),
    );
    expect(batch.body).toMatchObject({
      error: { code: -32600, data: { code: 'BATCH_NOT_SUPPORTED' } },
    });
    const notRequest = await postRaw(
      server.url,
      JSON.stringify({ jsonrpc: '2.0', id: 9, result: {} }),
      mcpHeaders('resources/list'),
    );
    expect(notRequest.body).toMatchObject({ id: 9, error: { code: -32600 } });
    const wrongVersion = await postRaw(
      server.url,
      JSON.stringify({ jsonrpc: '1.0', id: 'a', method: 'x' }),
      mcpHeaders('x'),
    );
    expect(wrongVersion.body).toMatchObject({
      id: 'a',
      error: { code: -32600 },
    });
  });
});

describe('MCP headers must match the body (-32020, HTTP 400)', () => {
  const uri = 'test://static-text';
  const cases: [string, Record<string, string | undefined>][] = [
    ['a missing MCP-Protocol-Version', { 'MCP-Protocol-Version': undefined }],
    [
      'an MCP-Protocol-Version that differs from _meta',
      { 'MCP-Protocol-Version': '2025-11-25' },
    ],
    ['a missing Mcp-Method', { 'Mcp-Method': undefined }],
    [
      'an Mcp-Method that differs from the body',
      { 'Mcp-Method': 'resources/list' },
    ],
    [
      'an Mcp-Method that differs only in case',
      { 'Mcp-Method': 'RESOURCES/READ' },
    ],
    ['a missing Mcp-Name on resources/read', { 'Mcp-Name': undefined }],
    [
      'an Mcp-Name that differs from params.uri',
      { 'Mcp-Name': 'test://static-binary' },
    ],
    [
      'an Mcp-Name with a broken base64 sentinel',
      { 'Mcp-Name': '=?base64?!!!?=' },
    ],
  ];
  for (const [label, overrides] of cases) {
    it(`refuses ${label} with -32020 and HTTP 400`, async () => {
      const headers: Record<string, string> = {
        ...mcpHeaders('resources/read', uri),
      };
      for (const [name, value] of Object.entries(overrides)) {
        if (value === undefined) delete headers[name];
        else headers[name] = value;
      }
      const response = await postRaw(
        server.url,
        readBody(uri, 'h1'),
        headers,
        'resources/read',
      );
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        id: 'h1',
        error: { code: -32020 },
      });
    });
  }

  it('accepts header names in any case and base64-encoded non-ASCII names', async () => {
    const headers = Object.fromEntries(
      Object.entries(mcpHeaders('resources/read', uri)).map(([k, v]) => [
        k.toLowerCase(),
        v,
      ]),
    );
    const ok = await postRaw(
      server.url,
      readBody(uri),
      headers,
      'resources/read',
    );
    expect(ok.status).toBe(200);
    const unicode = 'notes:///café/menü';
    const encoded = await postRaw(
      server.url,
      readBody(unicode),
      mcpHeaders('resources/read', unicode),
      'resources/read',
    );
    expect(encoded.body).toMatchObject({
      error: {
        code: -32602,
        data: { code: 'RESOURCE_NOT_FOUND', uri: unicode },
      },
    });
  });
});

describe('protocol errors and their HTTP status', () => {
  it('answers a request without _meta with -32602 and HTTP 400, before comparing headers', async () => {
    const response = await postRaw(
      server.url,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 101,
        method: 'server/discover',
        params: {},
      }),
      mcpHeaders('server/discover'),
      'server/discover',
    );
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      id: 101,
      error: { code: -32602, data: { code: 'MISSING_META' } },
    });
  });

  it('answers an unsupported protocol version with -32022 and HTTP 400, naming the supported and requested versions', async () => {
    const meta = {
      ...META,
      'io.modelcontextprotocol/protocolVersion': 'v999.0.0',
    };
    const response = await postRaw(
      server.url,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'server/discover',
        params: { _meta: meta },
      }),
      { ...mcpHeaders('server/discover'), 'MCP-Protocol-Version': 'v999.0.0' },
      'server/discover',
    );
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      id: 7,
      error: {
        code: -32022,
        data: { supported: ['2026-07-28'], requested: 'v999.0.0' },
      },
    });
  });

  it('answers unknown and removed methods with -32601 and HTTP 404', async () => {
    for (const method of [
      'initialize',
      'ping',
      'resources/subscribe',
      'sampling/createMessage',
      'unknown/method',
    ]) {
      const response = await postRaw(
        server.url,
        JSON.stringify({
          jsonrpc: '2.0',
          id: method,
          method,
          params: { _meta: META },
        }),
        mcpHeaders(method),
        method,
      );
      expect(response.status, method).toBe(404);
      expect(response.body, method).toMatchObject({
        id: method,
        error: { code: -32601 },
      });
    }
  });

  it('server/discover returns versions, capabilities, caching hints and serverInfo', async () => {
    const { status, result } = await call(server.url, 'server/discover');
    expect(status).toBe(200);
    expect(result).toMatchObject({
      resultType: 'complete',
      supportedVersions: ['2026-07-28'],
      capabilities: { resources: {} },
      ttlMs: match.any(Number),
      cacheScope: 'public',
      _meta: {
        'io.modelcontextprotocol/serverInfo': {
          name: 'pgmcp',
          version: match.any(String),
        },
      },
    });
  });
});

describe('DNS rebinding protection', () => {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'server/discover',
    params: { _meta: META },
  });
  const port = () => new URL(server.url).port;

  it('refuses a foreign Host or Origin with 403', async () => {
    const evilHost = await rawRequest({
      headers: { ...mcpHeaders('server/discover'), Host: 'evil.example.com' },
      body,
    });
    expect(evilHost.status).toBe(403);
    const evilOrigin = await rawRequest({
      headers: {
        ...mcpHeaders('server/discover'),
        Host: `127.0.0.1:${port()}`,
        Origin: 'http://evil.example.com',
      },
      body,
    });
    expect(evilOrigin.status).toBe(403);
    expect(JSON.parse(evilOrigin.body)).toMatchObject({
      error: { code: -32600, data: { code: 'FORBIDDEN_ORIGIN' } },
    });
  });

  it('allows loopback Host and Origin with a port, and configured origins', async () => {
    for (const origin of [
      `http://127.0.0.1:${port()}`,
      `http://localhost:${port()}`,
      'https://app.example.com',
      undefined,
    ]) {
      const headers: Record<string, string> = {
        ...mcpHeaders('server/discover'),
        Host: `localhost:${port()}`,
      };
      if (origin !== undefined) headers['Origin'] = origin;
      const response = await rawRequest({ headers, body });
      expect(response.status, origin).toBe(200);
    }
  });
});

describe('hostile input', () => {
  it('survives a corpus of malformed and hostile messages, then answers normally', async () => {
    const corpus: (string | Buffer)[] = [
      '',
      'null',
      '[]',
      '42',
      '"string"',
      '{}',
      '{"jsonrpc":"2.0"}',
      '{"jsonrpc":"2.0","id":null,"method":"resources/list"}',
      '{"jsonrpc":"2.0","id":{},"method":"resources/list"}',
      '{"jsonrpc":"2.0","id":1,"method":42}',
      '{"jsonrpc":"2.0","id":1,"method":"resources/list","params":[]}',
      '{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"_meta":"x"}}',
      `{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"_meta":${JSON.stringify(META)},"cursor":42}}`,
      `{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"_meta":${JSON.stringify(META)},"cursor":"${'A'.repeat(5000)}"}}`,
      `{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"_meta":${JSON.stringify(META)},"__proto__":{"polluted":true}}}`,
      '{"a":'.repeat(5000),
      Buffer.from([0xff, 0xfe, 0x00, 0x7b]),
      '\u0000\u0001\u0002',
      `{"jsonrpc":"2.0","id":1,"method":"${'m'.repeat(10000)}","params":{}}`,
    ];
    for (const body of corpus) {
      const response = await rawRequest({
        headers: {
          ...mcpHeaders('resources/list'),
          Host: new URL(server.url).host,
        },
        body,
      });
      expect(response.status, String(body).slice(0, 40)).toBeGreaterThanOrEqual(
        200,
      );
      expect(response.status).toBeLessThan(500);
      if (response.body !== '')
        expect(() => JSON.parse(response.body) as unknown).not.toThrow();
    }
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    const { result } = await call(server.url, 'resources/list');
    expect((result?.['resources'] as unknown[]).length).toBe(100);
  });
});
