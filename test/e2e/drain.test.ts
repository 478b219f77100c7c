// Issue 35 point 4: SIGTERM drains the built server. /readyz fails at once (the MCP endpoint's and
// the admin listener's), a 5 s query still gets its answer and its audit row, an open listen
// stream ends with its final result, and the process exits 0.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import { spawnBuiltServer } from '../setup/built-server.js';
import { call, listen, testDatabaseUrl, until } from '../setup/harness.js';

const SECRET = 'drain-test-secret-0123456789abcdef';
let sql: pg.Client;
let child: ChildProcess | undefined;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
});

afterAll(async () => {
  if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
  await sql.end();
});

/** The built server on the test database, with a short drain delay; its URLs once it serves. */
async function serve(): Promise<{
  child: ChildProcess;
  url: string;
  adminUrl: string;
  output: () => string;
}> {
  const started = await spawnBuiltServer(
    {
      DATABASE_URL: testDatabaseUrl(),
      PGMCP_JWT_SECRET: SECRET,
      PGMCP_ADMIN_PORT: '0',
      PGMCP_DRAIN_DELAY_MS: '1500',
      PGMCP_SHUTDOWN_GRACE_MS: '30000',
      PGMCP_LOG_FORMAT: 'json',
    },
    {
      onSpawn: (spawned) => {
        child = spawned;
      },
    },
  );
  return { ...started, adminUrl: started.adminUrl ?? '' };
}

function bearer(role: string, url: string): Record<string, string> {
  const result = spawnSync(
    process.execPath,
    ['bin/pgmcp.js', 'token', '--role', role],
    {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env['PATH'],
        DATABASE_URL: testDatabaseUrl(),
        PGMCP_JWT_SECRET: SECRET,
        PORT: new URL(url).port,
      },
      encoding: 'utf8',
    },
  );
  expect(result.status, result.stderr).toBe(0);
  return { Authorization: `Bearer ${result.stdout.trim()}` };
}

function exitCode(process: ChildProcess): Promise<number | string | null> {
  if (process.exitCode !== null || process.signalCode !== null)
    return Promise.resolve(process.exitCode ?? process.signalCode);
  return new Promise((resolve) =>
    process.on('exit', (code, signal) => resolve(code ?? signal)),
  );
}

describe('SIGTERM', () => {
  it('fails /readyz at once, answers the 5 s query with its audit row, ends the stream cleanly and exits 0', async () => {
    const server = await serve();
    const auth = bearer('support', server.url);
    expect((await fetch(`${server.adminUrl}/readyz`)).status).toBe(200);
    const stream = await listen(
      server.url,
      { resourcesListChanged: true },
      { id: 'drain-listen', headers: auth },
    );
    expect(stream.status).toBe(200);
    await stream.waitFor((messages) => messages.length >= 1);

    // The served process's gauges: its open stream, its sessions, its change log's size.
    const metrics = await (await fetch(`${server.adminUrl}/metrics`)).text();
    expect(metrics).toContain(
      'pgmcp_open_streams{mcp_protocol_version="2026-07-28"} 1\n',
    );
    expect(metrics).toContain('pgmcp_legacy_sessions 0\n');
    expect(metrics).toMatch(/\npgmcp_change_log_bytes [1-9]\d*\n/);
    expect(metrics).toContain('pgmcp_draining 0\n');

    const marker = `drain_${randomUUID().replaceAll('-', '')}`;
    const answer = call(
      server.url,
      'tools/call',
      { name: 'query', arguments: { sql: `select pg_sleep(5) as ${marker}` } },
      auth,
    );
    // PostgreSQL shows the tool's cursor fetch, not the caller's text: wait for a pgmcp session
    // of this database sleeping.
    await until(
      async () => {
        const { rows } = await sql.query(
          "select 1 from pg_stat_activity where wait_event = 'PgSleep' and datname = current_database() and application_name like 'pgmcp/%'",
        );
        return rows.length > 0;
      },
      10_000,
      'the query running in PostgreSQL',
    );

    server.child.kill('SIGTERM');
    await until(
      async () => (await fetch(`${server.adminUrl}/readyz`)).status === 503,
      5_000,
      '/readyz to fail',
    );
    const readyz = await fetch(`${server.adminUrl}/readyz`);
    expect(await readyz.json()).toMatchObject({
      status: 'not ready',
      draining: true,
    });

    const { result, error } = await answer;
    expect(error).toBeUndefined();
    expect(result?.['isError']).toBeUndefined();
    expect(JSON.stringify(result?.['structuredContent'])).toContain(marker);
    const audit = await sql.query(
      'select action, row_count, sqlstate from pgmcp.audit where target like $1',
      [`%${marker}%`],
    );
    expect(audit.rows).toEqual([
      { action: 'query', row_count: '1', sqlstate: null },
    ]);

    await stream.ended;
    const last = stream.messages.at(-1);
    expect(last?.id).toBe('drain-listen');
    expect(last?.error).toBeUndefined();
    expect(await exitCode(server.child)).toBe(0);
    expect(server.output()).toContain('draining: /readyz answers 503');
    // Issue 35 point 3: the call's access-log line, without its token or its SQL text.
    const access = server
      .output()
      .split('\n')
      .filter((line) => line.includes('"msg":"access"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(access).toContainEqual(
      expect.objectContaining({
        level: 'info',
        method: 'tools/call',
        era: '2026-07-28',
        outcome: 'ok',
        role: 'support',
        durationMs: expect.any(Number) as number,
        requestId: expect.anything() as unknown,
        traceId: null,
      }),
    );
    expect(server.output()).not.toContain(marker);
    expect(server.output()).not.toContain(
      (auth['Authorization'] ?? '').slice('Bearer '.length),
    );
  }, 60_000);
});
