// The pgmcp CLI: help on every command, usage and configuration errors that say how to fix them.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/version.js';

function pgmcp(args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'), ...args], {
    env: { PATH: process.env['PATH'], ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('pgmcp CLI', () => {
  it.each([[['--help']], [['serve', '--help']], [['migrate', '--help']], [['seed', '--help']]])('prints help for %j', (args) => {
    const result = pgmcp(args);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/Usage: pgmcp/);
  });

  it('rejects an unknown command or flag with exit code 2 and the usage', () => {
    expect(pgmcp(['frobnicate'])).toMatchObject({ status: 2, stderr: expect.stringContaining('unknown command "frobnicate"') });
    expect(pgmcp(['serve', '--prot', '1'])).toMatchObject({ status: 2, stderr: expect.stringContaining("Unknown option '--prot'") });
    expect(pgmcp(['seed', 'nope'])).toMatchObject({ status: 2, stderr: expect.stringContaining('demo') });
  });

  it('fails at start-up on bad configuration, naming the setting', () => {
    const badPort = pgmcp(['serve'], { PORT: 'abc', DATABASE_URL: 'postgres://x@127.0.0.1:1/x' });
    expect(badPort.status).toBe(2);
    expect(badPort.stderr).toContain('PORT (--port) must be a whole number');
    const badUrl = pgmcp(['serve'], { DATABASE_URL: 'mysql://x' });
    expect(badUrl.stderr).toContain('DATABASE_URL must be a postgres:// or postgresql:// URL');
    const exposed = pgmcp(['serve', '--host', '0.0.0.0'], { DATABASE_URL: 'postgres://x@127.0.0.1:1/x' });
    expect(exposed.status).toBe(2);
    expect(exposed.stderr).toContain('PGMCP_ALLOWED_HOSTS');
    const secret = pgmcp(['serve'], { DATABASE_URL: 'postgres://x@127.0.0.1:1/x', PGMCP_CURSOR_SECRETS: 'short' });
    expect(secret.stderr).toContain('at least 16 characters');
  });

  it('reports an unreachable database without a stack trace and without the password', () => {
    const result = pgmcp(['migrate'], { DATABASE_URL: 'postgres://someone:s3cret-pw@127.0.0.1:1/nowhere' });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('ECONNREFUSED');
    expect(result.stderr).not.toContain('s3cret-pw');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
