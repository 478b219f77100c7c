// Apply migrations/ to a test database through pgmcp's own migrator (the same path as production).
import { createDatabase, runMigrations } from '../../src/db/index.js';
import { MIGRATIONS_DIRECTORY } from '../../src/config/index.js';
import type pg from 'pg';

/** Migrate the database at `url`, then run `more` (seeds, roles) on the same admin connection. */
export async function migrateDatabase(
  url: string,
  more?: (admin: pg.Client) => Promise<void>,
): Promise<void> {
  const db = createDatabase({
    connectionString: url,
    poolSize: 1,
    statementTimeoutMs: 60_000,
    onError: () => undefined,
  });
  const admin = await db.connectAdmin();
  try {
    await runMigrations(admin, MIGRATIONS_DIRECTORY, () => undefined);
    await more?.(admin);
  } finally {
    await admin.end();
    await db.close();
  }
}
