// Migrations (forward-only, advisory-locked) and the pgmcp.resources table contract.
import { readFileSync, readdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MigrationChangedError, runMigrations } from '../../src/db/index.js';
import { MIGRATIONS_DIRECTORY } from '../../src/config/index.js';
import { testDatabaseUrl } from '../setup/harness.js';

const SCRATCH = 'pgmcp_migrate_test';
let scratchUrl: string;

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin(async (client) => {
    await client.query(`drop database if exists ${SCRATCH} with (force)`);
    await client.query(`create database ${SCRATCH}`);
  });
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${SCRATCH}`;
  scratchUrl = url.toString();
});

afterAll(async () => {
  await admin((client) =>
    client.query(`drop database if exists ${SCRATCH} with (force)`),
  );
});

describe('migrations', () => {
  it('two processes migrating at once serialize on the advisory lock: each migration runs once', async () => {
    const clients: [pg.Client, pg.Client] = [
      new pg.Client({ connectionString: scratchUrl }),
      new pg.Client({ connectionString: scratchUrl }),
    ];
    await Promise.all(clients.map((client) => client.connect()));
    try {
      const reports = await Promise.all(
        clients.map((client) =>
          runMigrations(client, MIGRATIONS_DIRECTORY, () => undefined),
        ),
      );
      const applied = reports.flatMap((report) => report.applied);
      const { rows } = await clients[0].query<{ name: string }>(
        'select name from pgmcp.migrations order by name',
      );
      expect(applied.sort()).toEqual(rows.map((row) => row.name));
      expect(reports.some((report) => report.applied.length === 0)).toBe(true);
      const again = await runMigrations(
        clients[1],
        MIGRATIONS_DIRECTORY,
        () => undefined,
      );
      expect(again.applied).toEqual([]);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });
});

/** Every migration file with the SHA-256 of its bytes, computed here with node:crypto. */
function fileChecksums(): { name: string; checksum: string }[] {
  return readdirSync(MIGRATIONS_DIRECTORY)
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => ({
      name,
      checksum: createHash('sha256')
        .update(readFileSync(path.join(MIGRATIONS_DIRECTORY, name)))
        .digest('hex'),
    }));
}

describe('migration checksums', () => {
  async function onScratch<T>(work: (client: pg.Client) => Promise<T>) {
    const client = new pg.Client({ connectionString: scratchUrl });
    await client.connect();
    try {
      await runMigrations(client, MIGRATIONS_DIRECTORY, () => undefined);
      return await work(client);
    } finally {
      await client.end();
    }
  }
  const recorded = async (client: pg.Client) =>
    (
      await client.query<{ name: string; checksum: string | null }>(
        'select name, checksum from pgmcp.migrations order by name',
      )
    ).rows;

  it('records the SHA-256 of each applied file', async () => {
    await onScratch(async (client) => {
      expect(await recorded(client)).toEqual(fileChecksums());
    });
  });

  it('records the current files’ checksums for migrations applied before checksums existed', async () => {
    await onScratch(async (client) => {
      await client.query('alter table pgmcp.migrations drop column checksum');
      const report = await runMigrations(
        client,
        MIGRATIONS_DIRECTORY,
        () => undefined,
      );
      expect(report.applied).toEqual([]);
      expect(await recorded(client)).toEqual(fileChecksums());
    });
  });

  it('stops, naming the file and how to resolve it, when an applied migration’s file changed', async () => {
    await onScratch(async (client) => {
      const [, second] = fileChecksums();
      await client.query(
        `update pgmcp.migrations set checksum = repeat('0', 64) where name = $1`,
        [second?.name],
      );
      // A pending migration must not be applied past the mismatch either.
      const last = fileChecksums().at(-1)?.name;
      await client.query('delete from pgmcp.migrations where name = $1', [
        last,
      ]);
      const run = runMigrations(client, MIGRATIONS_DIRECTORY, () => undefined);
      await expect(run).rejects.toBeInstanceOf(MigrationChangedError);
      await expect(run).rejects.toThrow(
        new RegExp(
          `migration ${second?.name} has changed.*${second?.checksum}.*UPDATE pgmcp.migrations`,
        ),
      );
      expect((await recorded(client)).map((row) => row.name)).not.toContain(
        last,
      );
      await client.query(
        'update pgmcp.migrations set checksum = $2 where name = $1',
        [second?.name, second?.checksum],
      );
      await client.query(
        'insert into pgmcp.migrations (name, checksum) values ($1, $2)',
        [last, fileChecksums().at(-1)?.checksum],
      );
    });
  });
});

describe('migrations whose comments were reworded', () => {
  // Issue 33: 0027's comment gave a measured figure, now in docs/benchmarks.md; databases that
  // recorded the released text must still start, and only the comment may differ.
  const NAME = '0027_legacy_session_check_by_select.sql';
  const RELEASED =
    '-- cost PostgreSQL about 40 µs of CPU more than the same read in 2026-07-28; the SELECT, about 9.\n';
  const NOW =
    '-- cost PostgreSQL more CPU than the plain SELECT (docs/benchmarks.md, History).\n';
  const released = () => {
    const text = readFileSync(path.join(MIGRATIONS_DIRECTORY, NAME), 'utf8');
    expect(text).toContain(NOW);
    return createHash('sha256')
      .update(text.replace(NOW, RELEASED))
      .digest('hex');
  };

  it('accepts a database that applied the released text of a migration whose comment changed', async () => {
    const client = new pg.Client({ connectionString: scratchUrl });
    await client.connect();
    try {
      await runMigrations(client, MIGRATIONS_DIRECTORY, () => undefined);
      const current = fileChecksums().find(
        (file) => file.name === NAME,
      )?.checksum;
      await client.query(
        'update pgmcp.migrations set checksum = $2 where name = $1',
        [NAME, released()],
      );
      const report = await runMigrations(
        client,
        MIGRATIONS_DIRECTORY,
        () => undefined,
      );
      expect(report.applied).toEqual([]);
      // Any other earlier text is still refused.
      await client.query(
        "update pgmcp.migrations set checksum = repeat('1', 64) where name = $1",
        [NAME],
      );
      await expect(
        runMigrations(client, MIGRATIONS_DIRECTORY, () => undefined),
      ).rejects.toBeInstanceOf(MigrationChangedError);
      await client.query(
        'update pgmcp.migrations set checksum = $2 where name = $1',
        [NAME, current],
      );
    } finally {
      await client.end();
    }
  });
});

describe('pgmcp.resources constraints', () => {
  let sql: pg.Client;
  beforeAll(async () => {
    sql = new pg.Client({ connectionString: testDatabaseUrl() });
    await sql.connect();
  });
  afterAll(async () => {
    await sql.end();
  });

  async function rejects(values: Record<string, unknown>): Promise<string> {
    const columns = Object.keys(values);
    await sql.query('begin');
    try {
      await sql.query(
        `insert into pgmcp.resources (${columns.join(', ')}) values (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
        Object.values(values),
      );
      throw new Error('row accepted');
    } catch (error) {
      return (
        (error as { constraint?: string }).constraint ??
        (error as Error).message
      );
    } finally {
      await sql.query('rollback');
    }
  }

  it.each([
    [{ uri: 'not a uri', name: 'x', text: 't' }, 'resources_uri_valid'],
    [{ uri: 'file:///a/../b', name: 'x', text: 't' }, 'resources_uri_valid'],
    [
      { uri: 'file:///a/%2e%2e/b', name: 'x', text: 't' },
      'resources_uri_valid',
    ],
    [{ uri: 'file:///a//b', name: 'x', text: 't' }, 'resources_uri_valid'],
    [{ uri: 'notes:///x', name: 'x' }, 'resources_exactly_one_of_text_or_blob'],
    [
      { uri: 'notes:///x', name: 'x', text: 't', blob: Buffer.from('b') },
      'resources_exactly_one_of_text_or_blob',
    ],
    [
      { uri: 'notes:///x', name: 'x', text: 't', priority: 1.5 },
      'resources_priority_range',
    ],
    [
      { uri: 'notes:///x', name: 'x', text: 't', audience: ['robots'] },
      'resources_audience_valid',
    ],
    [{ uri: 'notes:///x', name: '', text: 't' }, 'resources_name_not_empty'],
    [
      { uri: 'notes:///x', name: 'x', text: 't', mime_type: 'not a mime' },
      'resources_mime_type_valid',
    ],
    [
      { uri: 'test://static-text', name: 'dup', text: 't' },
      'resources_uri_key',
    ],
  ])('rejects %j with %s', async (values, constraint) => {
    expect(await rejects(values)).toBe(constraint);
  });

  it('accepts the rows the server accepts for reading, and computes size from the content', async () => {
    await sql.query('begin');
    try {
      const { rows } = await sql.query<{ size: string }>(
        `insert into pgmcp.resources (uri, name, text) values ('notes:///contract/été', 'x', 'héllo') returning size`,
      );
      expect(rows[0]?.size).toBe('6');
    } finally {
      await sql.query('rollback');
    }
  });

  it('keeps updated_at with a trigger on every real change', async () => {
    await sql.query('begin');
    try {
      await sql.query(
        `insert into pgmcp.resources (uri, name, text, updated_at) values ('notes:///contract/touch', 'x', 'a', '2000-01-01')`,
      );
      const { rows } = await sql.query<{ updated_at: Date }>(
        `update pgmcp.resources set text = 'b' where uri = 'notes:///contract/touch' returning updated_at`,
      );
      expect(rows[0]?.updated_at.getUTCFullYear()).toBeGreaterThan(2000);
    } finally {
      await sql.query('rollback');
    }
  });
});
