// pgmcp expose / unexpose <schema.table>: install or remove a table's change capture.
import { loadConfig, type Config } from '../config/index.js';
import { withAdminClient, type DatabaseHandle } from '../db/index.js';
import { setExposed } from '../resources/index.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../log.js';
import { namedDatabase, openDatabase } from '../app/index.js';
import {
  UsageError,
  stringFlag,
  type CliCommand,
  type ParsedFlags,
} from './flags.js';

const HELP = `Usage: pgmcp expose <schema.table>
       pgmcp unexpose <schema.table>

Install (or remove) change capture on a company table: three statement-level triggers that log
its row changes to pgmcp.changes, so subscribers of its rows (pg://{database}/{schema}/{table}/rows/{key})
hear of them; or, when the database's change source is the WAL (PGMCP_CHANGE_SOURCE=wal, set by
the last pgmcp serve), membership of the publication pgmcp_changes, and no trigger. Name the table as SQL would ("My Schema"."My Table" for mixed case). Serve its rows
by listing it under "collections" in the config file (docs/databases.md "Row collections"). Runs as the
database's administrative login (DATABASE_URL, or the embedded superuser), which must own the
table or be a superuser. --database NAME picks a database given with --database NAME=url.
`;

export const EXPOSE_COMMAND: CliCommand = {
  name: 'expose',
  help: HELP,
  options: { database: { type: 'string' } },
  run: expose,
};

async function expose(
  flags: ParsedFlags,
  logger: Logger,
  invokedAs: string,
): Promise<void> {
  const [table] = flags.positionals;
  if (table === undefined || flags.positionals.length !== 1)
    throw new UsageError(`usage: pgmcp ${invokedAs} <schema.table>`);
  const exposing = invokedAs === 'expose';
  const config = loadConfig({}, process.env);
  const open = await adminTarget(config, stringFlag(flags, 'database'), logger);
  try {
    const relid = await withAdminClient(open.db, (client) =>
      setExposed(client, table, exposing),
    );
    if (relid === undefined)
      throw new ConfigError(
        `no table ${JSON.stringify(table)}: name it as SQL would, schema.table ("My Schema"."My Table" for mixed case).`,
      );
    logger.info(
      exposing
        ? `${relid}: row changes are now captured; list it under "collections" in the config file to serve its rows`
        : `${relid}: row changes are no longer captured`,
    );
  } finally {
    await open.close();
  }
}

/** The main database, or the --database entry `name`. */
async function adminTarget(
  config: Config,
  name: string | undefined,
  logger: Logger,
): Promise<{ db: DatabaseHandle; close(): Promise<void> }> {
  if (name === undefined) return openDatabase(config, logger);
  const db = namedDatabase(config, name, logger);
  if (db === undefined)
    throw new ConfigError(
      `no database ${name}: give it with PGMCP_DATABASES="${name}=postgres://…"`,
    );
  return { db, close: () => db.close() };
}
