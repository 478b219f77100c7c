// Issue 35 point 2: with OTEL_EXPORTER_OTLP_ENDPOINT set, each MCP request is a span named per the
// MCP semantic conventions, continuing the caller's W3C trace (header or _meta), with children for
// authentication, the tool and the database transaction; PostgreSQL sees the trace id.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing } from '../../src/observability/index.js';
import { call, startTestServer, type TestServer } from '../setup/harness.js';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** A loopback OTLP/HTTP receiver (JSON protocol): every span it was sent. */
const received: ExportedSpan[] = [];
let receiver: http.Server;
let tracing: { stop(): Promise<void> } | undefined;
let server: TestServer;
const saved: Record<string, string | undefined> = {};

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const META_TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

beforeAll(async () => {
  receiver = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      const payload = JSON.parse(body) as {
        resourceSpans: { scopeSpans: { spans: ExportedSpan[] }[] }[];
      };
      for (const resource of payload.resourceSpans)
        for (const scope of resource.scopeSpans) received.push(...scope.spans);
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) =>
    receiver.listen(0, '127.0.0.1', resolve),
  );
  const { port } = receiver.address() as AddressInfo;
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'pgmcp-test',
  };
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  tracing = startTracing(process.env);
  server = await startTestServer({
    principal: { role: 'support', claims: { sub: 'tracing-test' } },
  });
});

afterAll(async () => {
  await server.close();
  await tracing?.stop();
  for (const [name, value] of Object.entries(saved))
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  await new Promise((resolve) => receiver.close(resolve));
});

function attribute(span: ExportedSpan, key: string): unknown {
  const value = span.attributes.find((entry) => entry.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

describe('traces', () => {
  it('is off when no OTEL_* variable asks for it', () => {
    expect(startTracing({})).toBeUndefined();
    expect(startTracing({ OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('exports request spans with their children, continuing the header or _meta trace, and names the trace in application_name', async () => {
    expect(tracing).toBeDefined();
    const query = await call(
      server.url,
      'tools/call',
      {
        name: 'query',
        arguments: { sql: "select current_setting('application_name') as app" },
      },
      { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    );
    expect(query.error).toBeUndefined();
    const list = await call(server.url, 'resources/list', {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        traceparent: `00-${META_TRACE_ID}-${PARENT_ID}-01`,
      },
    });
    expect(list.error).toBeUndefined();
    await tracing?.stop();
    tracing = undefined;

    // The trace id reached PostgreSQL, transaction-local, in application_name.
    const rows = (query.result?.['structuredContent'] as { rows: string[][] })
      .rows;
    expect(rows[0]?.[0]).toMatch(
      new RegExp(`^pgmcp trace=${TRACE_ID}/[0-9a-f]{16}$`),
    );

    const call_ = received.find((span) => span.name === 'tools/call query');
    expect(call_).toBeDefined();
    if (call_ === undefined) return;
    expect(call_.traceId).toBe(TRACE_ID);
    expect(call_.parentSpanId).toBe(PARENT_ID);
    expect(call_.kind).toBe(2); // SERVER
    expect(attribute(call_, 'mcp.method.name')).toBe('tools/call');
    expect(attribute(call_, 'gen_ai.tool.name')).toBe('query');
    expect(attribute(call_, 'mcp.protocol.version')).toBe('2026-07-28');
    expect(attribute(call_, 'jsonrpc.request.id')).toBeDefined();
    const childrenOf = (parent: ExportedSpan) =>
      received.filter((span) => span.parentSpanId === parent.spanId);
    expect(
      childrenOf(call_)
        .map((span) => span.name)
        .sort(),
    ).toEqual(['authenticate', 'execute_tool query']);

    const listed = received.find((span) => span.name === 'resources/list');
    expect(listed).toBeDefined();
    if (listed === undefined) return;
    expect(listed.traceId).toBe(META_TRACE_ID);
    expect(listed.parentSpanId).toBe(PARENT_ID);
    const transactions = childrenOf(listed).filter(
      (span) => span.name === 'db transaction',
    );
    expect(transactions.length).toBeGreaterThan(0);
    expect(attribute(transactions[0] as ExportedSpan, 'db.system.name')).toBe(
      'postgresql',
    );
  });
});
