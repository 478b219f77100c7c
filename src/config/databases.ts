// More databases served besides the main one (--database name=url, PGMCP_DATABASES).
import { ConfigError } from '../errors.js';

/** A database served besides the main one: its catalog and collections, under `name`. */
export interface DatabaseConfig {
  readonly name: string;
  readonly connectionString: string;
}

/** "name=postgres://…" entries → databases; names are URI authorities, so a plain word each. */
export function parseDatabases(entries: readonly string[]): DatabaseConfig[] {
  const databases: DatabaseConfig[] = [];
  for (const entry of entries) {
    const equals = entry.indexOf('=');
    const name = entry.slice(0, Math.max(equals, 0));
    const connectionString = entry.slice(equals + 1);
    if (
      equals <= 0 ||
      !/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name) ||
      !/^postgres(ql)?:\/\//.test(connectionString)
    )
      throw new ConfigError(
        `--database (PGMCP_DATABASES) takes name=postgres://user:password@host/db, the name made of letters, digits, ".", "_" and "-" (got ${JSON.stringify(redactConnectionString(entry).slice(0, 80))}).`,
      );
    if (databases.some((database) => database.name === name))
      throw new ConfigError(`--database ${name} is given twice.`);
    databases.push({ name, connectionString });
  }
  return databases;
}

/**
 * A connection string safe to print: every password it can carry replaced, the one after the user
 * (an empty user included) and the `password` and `sslpassword` parameters.
 */
export function redactConnectionString(connectionString: string): string {
  return connectionString
    .replace(/(\/\/[^:/@?#]*:)[^@/?#]*@/, '$1***@')
    .replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***');
}
