// Issue 36 point 1: the config file's standbys, their documented defaults, and the mistakes that
// stop the server at start-up with a message naming the file and the field.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';

const BASE = { DATABASE_URL: 'postgres://unused@127.0.0.1/unused' };
const folder = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-standbys-'));

afterAll(() => rmSync(folder, { recursive: true, force: true }));

function withFile(contents: unknown, env: Record<string, string> = {}) {
  const file = path.join(folder, `config-${Math.random()}.json`);
  writeFileSync(file, JSON.stringify(contents));
  return () => loadConfig({}, { ...BASE, PGMCP_CONFIG: file, ...env });
}

describe('config file standbys', () => {
  it('has none without the key', () => {
    expect(withFile({})().standbys).toBeUndefined();
  });

  it('fills in the documented defaults', () => {
    const url = 'postgres://login:secret@standby-1:5433/app';
    expect(withFile({ standbys: { servers: [{ url }] } })().standbys).toEqual({
      servers: [{ database: undefined, url }],
      maxLagMs: 10_000,
      maxLagBytes: undefined,
      waitMs: 1000,
      pollMs: 500,
      whenUnavailable: 'primary',
      failover: 'follow',
    });
  });

  it('takes every setting, and standbys of a --database', () => {
    const config = withFile(
      {
        standbys: {
          servers: [{ database: 'hr', url: 'postgresql://h/hr' }],
          maxLagMs: 0,
          maxLagBytes: 1024,
          waitMs: 0,
          pollMs: 50,
          whenUnavailable: 'fail',
          failover: 'off',
        },
      },
      { PGMCP_DATABASES: 'hr=postgres://h/hr' },
    )();
    expect(config.standbys).toEqual({
      servers: [{ database: 'hr', url: 'postgresql://h/hr' }],
      maxLagMs: 0,
      maxLagBytes: 1024,
      waitMs: 0,
      pollMs: 50,
      whenUnavailable: 'fail',
      failover: 'off',
    });
  });

  it.each([
    [{ servers: [] }, 'standbys.servers'],
    [{ servers: [{ url: 'mysql://x/y' }] }, 'standbys.servers.0.url'],
    [{ servers: [{ url: 'postgres://x/y', port: 1 }] }, 'standbys.servers.0'],
    [
      { servers: [{ url: 'postgres://x/y' }], whenUnavailable: 'retry' },
      'standbys.whenUnavailable',
    ],
    [{ servers: [{ url: 'postgres://x/y' }], pollMs: 1 }, 'standbys.pollMs'],
    [
      { servers: [{ url: 'postgres://x/y' }], failover: 'promote' },
      'standbys.failover',
    ],
    [
      { servers: [{ url: 'postgres://x/y' }], maxLagMs: -1 },
      'standbys.maxLagMs',
    ],
  ])('refuses %j, naming %s', (standbys, field) => {
    const load = withFile({ standbys });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(field);
  });

  it('refuses a standby of a database that is not given, without printing its URL', () => {
    const load = withFile({
      standbys: {
        servers: [{ database: 'crm', url: 'postgres://u:hunter2@h/crm' }],
      },
    });
    expect(load).toThrow(/names database "crm", which is not given/);
    expect(load).not.toThrow(/hunter2/);
  });
});
