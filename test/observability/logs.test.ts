// Issue 35 point 3: one access-log line per request in JSON mode (never tokens, URIs or values),
// and the change feed's failures at warn, with its listener's reconnect logged and counted.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { metricsExposition } from '../../src/observability/index.js';
import {
  startTestServer,
  testDatabaseUrl,
  until,
  type TestServer,
} from '../setup/harness.js';

describe('the access log', () => {
  it('writes one JSON line per access in JSON mode, and none in text mode', () => {
    const lines: string[] = [];
    const stream = {
      write: (chunk: string) => lines.push(chunk) > 0,
    } as unknown as NodeJS.WritableStream;
    const fields = {
      method: 'tools/call',
      era: '2026-07-28',
      outcome: 'ok' as const,
      durationMs: 1.5,
      role: 'support',
      requestId: 7,
      traceId: null,
    };
    createLogger({ stream, format: 'json' }).access?.(fields);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      level: 'info',
      msg: 'access',
      ...fields,
    });
    expect('access' in createLogger({ stream, format: 'text' })).toBe(false);
  });
});

describe('the change feed', () => {
  const lines: string[] = [];
  let server: TestServer;
  let sql: pg.Client;

  /** This server's listener sessions: other test files' servers keep theirs. */
  let listeners: number[] = [];
  const listenerPids = async (): Promise<number[]> =>
    (
      await sql.query<{ pid: number }>(
        "select pid from pg_stat_activity where application_name like 'pgmcp-listener/%' and datname = current_database()",
      )
    ).rows.map((row) => row.pid);

  beforeAll(async () => {
    sql = new pg.Client({ connectionString: testDatabaseUrl() });
    await sql.connect();
    const others = new Set(await listenerPids());
    server = await startTestServer({ live: {}, logLines: lines });
    listeners = (await listenerPids()).filter((pid) => !others.has(pid));
  });

  afterAll(async () => {
    await server.close();
    await sql.end();
  });

  async function reconnects(): Promise<number> {
    const { body } = await metricsExposition();
    const line = body
      .split('\n')
      .find((entry) => entry.startsWith('pgmcp_listener_reconnects_total '));
    return Number(line?.split(' ')[1] ?? 0);
  }

  it('logs a lost listener at warn and its reconnect, and counts it', async () => {
    const before = await reconnects();
    expect(listeners.length).toBeGreaterThan(0);
    await sql.query(
      'select pg_terminate_backend(pid) from unnest($1::int[]) pid',
      [listeners],
    );
    await until(
      () =>
        lines.some((line) =>
          line.includes('info live updates: listener reconnected'),
        ),
      20_000,
      () => `the reconnect; log: ${lines.join('')}`,
    );
    expect(
      lines.some((line) =>
        line.includes('warn live updates: listener connection lost'),
      ),
    ).toBe(true);
    expect(await reconnects()).toBeGreaterThan(before);
  });
});
