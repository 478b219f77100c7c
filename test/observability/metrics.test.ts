// Issue 35 point 1: the admin listener's Prometheus exposition. Counters move with traffic, labels
// stay bounded (no URIs, no role names), and `promtool check metrics` accepts the exposition.
import { expectPromtoolAccepts } from '../setup/promtool.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startAdminListener,
  type AdminListener,
} from '../../src/observability/index.js';
import { PrimaryTarget } from '../../src/db/standby/primary-target.js';
import {
  call,
  postRaw,
  startTestServer,
  type TestServer,
} from '../setup/harness.js';

let server: TestServer;
let admin: AdminListener;

beforeAll(async () => {
  server = await startTestServer({
    principal: { role: 'support', claims: { sub: 'metrics-test' } },
    maxBodyBytes: 4096,
  });
  admin = await startAdminListener({
    host: '127.0.0.1',
    port: 0,
    ready: () => ({ ok: true, detail: {} }),
    log: () => undefined,
  });
});

afterAll(async () => {
  await admin.close();
  await server.close();
});

async function scrape(): Promise<string> {
  const response = await fetch(`${admin.url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  return response.text();
}

/** The value of the series `name{labels}` (labels in exposition order), 0 when absent. */
function value(exposition: string, series: string): number {
  const line = exposition
    .split('\n')
    .find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('the admin listener', () => {
  it('serves /livez, /healthz and /readyz beside /metrics, and 404 elsewhere', async () => {
    for (const path of ['/livez', '/healthz', '/readyz'])
      expect((await fetch(`${admin.url}${path}`)).status).toBe(200);
    expect((await fetch(`${admin.url}/mcp`)).status).toBe(404);
    expect(
      (await fetch(`${admin.url}/metrics`, { method: 'POST' })).status,
    ).toBe(405);
  });

  it('counts requests, tool calls with rows and bytes, audit writes, pool use and limits as traffic comes', async () => {
    const before = await scrape();
    const list = await call(server.url, 'resources/list');
    expect(list.error).toBeUndefined();
    const query = await call(server.url, 'tools/call', {
      name: 'query',
      arguments: { sql: 'select g from generate_series(1, 3) g' },
    });
    expect(query.result?.['isError']).toBeUndefined();
    const unknown = await call(server.url, 'resources/read', {
      uri: 'notes:///no/such-note-for-metrics',
    });
    expect(unknown.error).toBeDefined();
    const tooLarge = await postRaw(server.url, 'x'.repeat(8192), {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    });
    expect(tooLarge.status).toBe(413);
    const after = await scrape();

    const moved = (series: string): number =>
      value(after, series) - value(before, series);
    expect(
      moved(
        'mcp_server_operation_duration_seconds_count{mcp_method_name="resources/list",mcp_protocol_version="2026-07-28",outcome="ok",error_type=""}',
      ),
    ).toBe(1);
    expect(
      moved(
        'mcp_server_operation_duration_seconds_count{mcp_method_name="resources/read",mcp_protocol_version="2026-07-28",outcome="error",error_type="RESOURCE_NOT_FOUND"}',
      ),
    ).toBe(1);
    expect(moved('pgmcp_tool_calls_total{tool="query",outcome="ok"}')).toBe(1);
    expect(moved('pgmcp_tool_rows_total{tool="query"}')).toBe(3);
    expect(
      moved('pgmcp_tool_result_bytes_total{tool="query"}'),
    ).toBeGreaterThan(0);
    expect(moved('pgmcp_audit_writes_total{result="written"}')).toBe(1);
    expect(moved('pgmcp_pool_wait_seconds_count')).toBeGreaterThan(0);
    expect(moved('pgmcp_limits_hit_total{limit="PAYLOAD_TOO_LARGE"}')).toBe(1);
    expect(
      value(after, 'pgmcp_pool_connections{state="total"}'),
    ).toBeGreaterThan(0);
    // Bounded labels: no URI and no role name in any series.
    expect(after).not.toContain('no/such-note-for-metrics');
    expect(after).not.toContain('support');
  });

  it("labels a database's primary candidates by host:port, never with their credentials", async () => {
    // Made, not started: the candidates' gauge is set from the start, before any check.
    const target = new PrimaryTarget({
      candidates: [
        'postgres://pgmcp:metrics-secret@db-a:5432/app',
        'postgres://pgmcp:metrics-secret@db-b:6432/app',
      ],
      database: 'metrics',
      checkMs: 1000,
      probeTimeoutMs: 1000,
      redact: (url) => url,
      log: () => undefined,
    });
    const exposition = await scrape();
    await target.close();
    expect(
      value(
        exposition,
        'pgmcp_primary_candidate{database="metrics",server="db-a:5432"}',
      ),
    ).toBe(1);
    expect(exposition).toContain(
      'pgmcp_primary_candidate{database="metrics",server="db-b:6432"} 0',
    );
    expect(exposition).toContain('# TYPE pgmcp_primary_switches_total counter');
    expect(exposition).not.toContain('metrics-secret');
    expectPromtoolAccepts(exposition);
    // A closed database leaves no candidate behind.
    expect(await scrape()).not.toContain(
      'pgmcp_primary_candidate{database="metrics"',
    );
  });

  it('passes promtool check metrics', async () => {
    await call(server.url, 'resources/list');
    const exposition = await scrape();
    expectPromtoolAccepts(exposition);
  });
});
