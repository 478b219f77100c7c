// Issue 32 points 4 and 8: the limits are settings with documented defaults, checked at start-up,
// and the config file can set a role's own query/explain call limits.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';

const BASE = { DATABASE_URL: 'postgres://unused@127.0.0.1/unused' };
const folder = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-limits-'));

afterAll(() => rmSync(folder, { recursive: true, force: true }));

function configFile(contents: unknown): string {
  const file = path.join(folder, `config-${Math.random()}.json`);
  writeFileSync(file, JSON.stringify(contents));
  return file;
}

describe('limit settings', () => {
  it('defaults to the documented limits, the tools holding half the pool', () => {
    const config = loadConfig({}, BASE);
    expect(config.limits).toEqual({
      toolCallsPerToken: 2,
      toolCallsPerRole: 4,
      toolConnections: 5,
      toolWaitMs: 1000,
      feedPoolSize: 2,
      lockTimeoutMs: 2000,
    });
    expect(config.roleLimits).toEqual({});
  });

  it('leaves the tools one connection of a one-connection pool', () => {
    const config = loadConfig({}, { ...BASE, PGMCP_POOL_SIZE: '1' });
    expect(config.limits.toolConnections).toBe(1);
  });

  it('reads every limit from the environment', () => {
    const config = loadConfig(
      {},
      {
        ...BASE,
        PGMCP_POOL_SIZE: '20',
        PGMCP_TOOL_CALLS_PER_TOKEN: '3',
        PGMCP_TOOL_CALLS_PER_ROLE: '9',
        PGMCP_TOOL_CONNECTIONS: '12',
        PGMCP_TOOL_WAIT_MS: '0',
        PGMCP_FEED_POOL_SIZE: '4',
        PGMCP_LOCK_TIMEOUT_MS: '0',
      },
    );
    expect(config.limits).toEqual({
      toolCallsPerToken: 3,
      toolCallsPerRole: 9,
      toolConnections: 12,
      toolWaitMs: 0,
      feedPoolSize: 4,
      lockTimeoutMs: 0,
    });
  });

  it('refuses at start-up a tools share larger than the pool, and limits of 0', () => {
    expect(() =>
      loadConfig(
        {},
        { ...BASE, PGMCP_POOL_SIZE: '4', PGMCP_TOOL_CONNECTIONS: '5' },
      ),
    ).toThrow(/PGMCP_TOOL_CONNECTIONS \(5\) must be at most PGMCP_POOL_SIZE/);
    expect(() =>
      loadConfig({}, { ...BASE, PGMCP_TOOL_CALLS_PER_TOKEN: '0' }),
    ).toThrow(/PGMCP_TOOL_CALLS_PER_TOKEN must be at least 1/);
    expect(() => loadConfig({}, { ...BASE, PGMCP_FEED_POOL_SIZE: '' })).toThrow(
      /PGMCP_FEED_POOL_SIZE/,
    );
  });

  it("takes a role's own call limits from the config file, and refuses unknown keys", () => {
    const config = loadConfig(
      {
        config: configFile({
          limits: { roles: { analyst: { toolCallsPerToken: 5 } } },
        }),
      },
      BASE,
    );
    expect(config.roleLimits).toEqual({ analyst: { toolCallsPerToken: 5 } });
    expect(() =>
      loadConfig(
        {
          config: configFile({
            limits: { roles: { analyst: { toolCalls: 5 } } },
          }),
        },
        BASE,
      ),
    ).toThrow(/limits\.roles\.analyst/);
    expect(() =>
      loadConfig(
        {
          config: configFile({
            limits: { roles: { analyst: { toolCallsPerRole: 0 } } },
          }),
        },
        BASE,
      ),
    ).toThrow(/limits\.roles\.analyst\.toolCallsPerRole/);
  });
});
