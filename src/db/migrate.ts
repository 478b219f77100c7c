// Forward-only SQL migrations from migrations/, each in its own transaction, under an advisory lock.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';

/** Advisory lock key shared by every pgmcp process migrating the same database ("pgmcp" in ASCII). */
const MIGRATION_LOCK_KEY = 0x70676d6370;
const MIGRATION_FILE = /^\d{4}_[a-z0-9_]+\.sql$/;

export interface MigrationReport {
  readonly applied: string[];
  readonly alreadyApplied: number;
}

/**
 * Apply pending migrations in name order. Two processes starting at once serialize on the lock;
 * the second finds nothing left to do. A failing migration rolls back alone and stops the run.
 */
export async function runMigrations(
  client: pg.Client,
  directory: string,
  log: (line: string) => void,
): Promise<MigrationReport> {
  const files = (await readdir(directory))
    .filter((file) => MIGRATION_FILE.test(file))
    .sort();
  // Nothing to do is decided without DDL or locks, so an unprivileged login (the authenticator)
  // can start a server on an up-to-date database.
  const recorded = await client.query<{ exists: boolean }>(
    "select to_regclass('pgmcp.migrations') is not null as exists",
  );
  if (recorded.rows[0]?.exists === true) {
    const applied = (
      await client.query<{ name: string }>('select name from pgmcp.migrations')
    ).rows.map((row) => row.name);
    if (files.every((file) => applied.includes(file)))
      return { applied: [], alreadyApplied: applied.length };
  }
  await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    await client.query(`create schema if not exists pgmcp`);
    await client.query(
      `create table if not exists pgmcp.migrations (name text primary key, applied_at timestamptz not null default now())`,
    );
    const done = new Set(
      (
        await client.query<{ name: string }>(
          'select name from pgmcp.migrations',
        )
      ).rows.map((row) => row.name),
    );
    const unknown = [...done].filter((name) => !files.includes(name));
    if (unknown.length > 0) {
      log(
        `warning: the database has migrations this pgmcp does not know (${unknown.join(', ')}); is it older than the last one that migrated?`,
      );
    }
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      const text = await readFile(path.join(directory, file), 'utf8');
      await client.query('begin');
      try {
        await client.query(text);
        await client.query('insert into pgmcp.migrations (name) values ($1)', [
          file,
        ]);
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw new Error(
          `migration ${file} failed: ${error instanceof Error ? error.message : String(error)}`,
          {
            cause: error,
          },
        );
      }
      log(`applied migration ${file}`);
      applied.push(file);
    }
    return { applied, alreadyApplied: done.size };
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
  }
}
