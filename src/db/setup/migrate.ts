// Forward-only SQL migrations from migrations/, each in its own transaction, under an advisory lock.
// Each applied file's SHA-256 is recorded; a file changed after it was applied stops start-up.
import { createHash } from 'node:crypto';
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
 * An applied migration's file differs from what was applied: the database does not hold what the
 * file says, and re-running or skipping it would both be wrong. The CLI exits with code 2.
 */
export class MigrationChangedError extends Error {
  constructor(
    readonly file: string,
    recorded: string,
    current: string,
  ) {
    super(
      `migration ${file} has changed since it was applied to this database ` +
        `(recorded sha256 ${recorded}, the file now has ${current}). pgmcp never re-runs or skips an applied migration: ` +
        `restore migrations/${file} as it was applied (the pgmcp release that applied it has it), or, if you have checked ` +
        `that the change alters nothing the database holds (comments only), accept it with ` +
        `UPDATE pgmcp.migrations SET checksum = '${current}' WHERE name = '${file}';`,
    );
    this.name = 'MigrationChangedError';
  }
}

interface MigrationFile {
  readonly name: string;
  readonly text: string;
  readonly checksum: string;
}

interface AppliedRow {
  readonly name: string;
  readonly checksum: string | null;
}

/** The SHA-256 (hex) of a migration file's bytes, as recorded in pgmcp.migrations.checksum. */
export function migrationChecksum(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

async function readMigrations(directory: string): Promise<MigrationFile[]> {
  const names = (await readdir(directory))
    .filter((file) => MIGRATION_FILE.test(file))
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const bytes = await readFile(path.join(directory, name));
      return {
        name,
        text: bytes.toString('utf8'),
        checksum: migrationChecksum(bytes),
      };
    }),
  );
}

/**
 * Earlier checksums of migration files whose comments were reworded after release (the SQL is
 * byte for byte the same): a database that applied the earlier text is not refused.
 */
const REWORDED_COMMENTS: Readonly<Record<string, readonly string[]>> = {
  // Issue 33: a measured figure left the comment for docs/benchmarks.md.
  '0027_legacy_session_check_by_select.sql': [
    'e60f4b88fc6ed4bb670ffcbdd5cedb87c5ac650204191cba83a2f8f92185d13e',
  ],
};

/** Throw MigrationChangedError for the first applied migration whose file no longer matches. */
function verifyApplied(files: MigrationFile[], applied: AppliedRow[]): void {
  for (const row of applied) {
    const file = files.find((candidate) => candidate.name === row.name);
    if (
      file !== undefined &&
      row.checksum !== null &&
      row.checksum !== file.checksum &&
      !(REWORDED_COMMENTS[row.name] ?? []).includes(row.checksum)
    )
      throw new MigrationChangedError(row.name, row.checksum, file.checksum);
  }
}

/** Applied migrations, or undefined before the first run; checksums null where none is recorded. */
async function appliedRows(
  client: pg.Client,
): Promise<{ rows: AppliedRow[]; mayUpgrade: boolean } | undefined> {
  const { rows } = await client.query<{
    exists: boolean;
    has_checksum: boolean;
    owner: boolean;
  }>(
    `select to_regclass('pgmcp.migrations') is not null as exists,
            exists (select from pg_attribute where attrelid = to_regclass('pgmcp.migrations')
                     and attname = 'checksum' and not attisdropped) as has_checksum,
            coalesce((select pg_has_role(c.relowner, 'USAGE') from pg_class c
                       where c.oid = to_regclass('pgmcp.migrations')), false) as owner`,
  );
  const state = rows[0];
  if (state?.exists !== true) return undefined;
  const applied = await client.query<AppliedRow>(
    state.has_checksum
      ? 'select name, checksum from pgmcp.migrations'
      : 'select name, null::text as checksum from pgmcp.migrations',
  );
  return { rows: applied.rows, mayUpgrade: state.owner };
}

/**
 * Apply pending migrations in name order. Two processes starting at once serialize on the lock;
 * the second finds nothing left to do. A failing migration rolls back alone and stops the run.
 * An applied migration whose file changed throws MigrationChangedError before anything is applied.
 */
export async function runMigrations(
  client: pg.Client,
  directory: string,
  log: (line: string) => void,
): Promise<MigrationReport> {
  const files = await readMigrations(directory);
  // Nothing to do is decided without DDL or locks, so an unprivileged login (the authenticator)
  // can start a server on an up-to-date database.
  const before = await appliedRows(client);
  if (before !== undefined) {
    verifyApplied(files, before.rows);
    const pending = files.some(
      (file) => !before.rows.some((row) => row.name === file.name),
    );
    const unrecorded = before.rows.some((row) => row.checksum === null);
    if (!pending && (!unrecorded || !before.mayUpgrade)) {
      if (unrecorded)
        log(
          'warning: pgmcp.migrations has no checksums yet; run pgmcp migrate as the administrative login to record them',
        );
      return { applied: [], alreadyApplied: before.rows.length };
    }
  }
  await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    const done = await recordedUnderLock(client, files);
    const known = new Set(files.map((file) => file.name));
    const unknown = [...done].filter((name) => !known.has(name));
    if (unknown.length > 0) {
      log(
        `warning: the database has migrations this pgmcp does not know (${unknown.join(', ')}); is it older than the last one that migrated?`,
      );
    }
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file.name)) continue;
      await applyOne(client, file);
      log(`applied migration ${file.name}`);
      applied.push(file.name);
    }
    return { applied, alreadyApplied: done.size };
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
  }
}

/**
 * Under the lock: create or upgrade pgmcp.migrations, record missing checksums, verify the rest.
 * Returns the names of the applied migrations.
 */
async function recordedUnderLock(
  client: pg.Client,
  files: MigrationFile[],
): Promise<Set<string>> {
  await client.query(`create schema if not exists pgmcp`);
  await client.query(
    `create table if not exists pgmcp.migrations (name text primary key, applied_at timestamptz not null default now(), checksum text)`,
  );
  await client.query(
    `alter table pgmcp.migrations add column if not exists checksum text`,
  );
  // Rows applied before checksums were recorded: what text they ran is not knowable, so the
  // file as it is now becomes the reference, and later edits to it are caught from here on.
  for (const file of files) {
    await client.query(
      'update pgmcp.migrations set checksum = $2 where name = $1 and checksum is null',
      [file.name, file.checksum],
    );
  }
  const { rows } = await client.query<AppliedRow>(
    'select name, checksum from pgmcp.migrations',
  );
  verifyApplied(files, rows);
  return new Set(rows.map((row) => row.name));
}

async function applyOne(client: pg.Client, file: MigrationFile): Promise<void> {
  await client.query('begin');
  try {
    await client.query(file.text);
    await client.query(
      'insert into pgmcp.migrations (name, checksum) values ($1, $2)',
      [file.name, file.checksum],
    );
    await client.query('commit');
  } catch (error) {
    await client.query('rollback');
    throw new Error(
      `migration ${file.name} failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}
