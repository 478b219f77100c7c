// pgmcp migrate: apply pending migrations, then say how requests should log in.
import { loadConfig } from '../config/index.js';
import {
  AUTHENTICATOR_ROLE,
  ENABLE_AUTHENTICATOR_LOGIN_HINT,
  authenticatorLogin,
  withAdminClient,
  type DatabaseHandle,
} from '../db/index.js';
import type { Logger } from '../log.js';
import { openDatabase, prepareDatabase } from '../app/index.js';
import { UsageError, type CliCommand, type ParsedFlags } from './flags.js';

const HELP = `Usage: pgmcp migrate

Apply pending migrations from migrations/ (forward-only, each in a transaction, under an advisory
lock) to DATABASE_URL, or to the embedded PostgreSQL when none is set. An applied migration whose
file has changed since (its recorded SHA-256 differs) stops this and \`pgmcp serve\` with exit code 2.
`;

export const MIGRATE_COMMAND: CliCommand = {
  name: 'migrate',
  help: HELP,
  options: {},
  run: migrate,
};

async function migrate(flags: ParsedFlags, logger: Logger): Promise<void> {
  if (flags.positionals.length > 0)
    throw new UsageError(`migrate takes no arguments`);
  const config = loadConfig({}, process.env);
  const open = await openDatabase(config, logger);
  try {
    await prepareDatabase(open.db, logger, { migrate: true });
    if (open.embedded === undefined)
      await explainAuthenticator(open.db, logger);
  } finally {
    await open.close();
  }
}

/** After `pgmcp migrate`: say how requests should log in (README "Authorization"). */
async function explainAuthenticator(
  db: DatabaseHandle,
  logger: Logger,
): Promise<void> {
  const role = await withAdminClient(db, authenticatorLogin);
  if (role === undefined) {
    logger.warn(
      `${AUTHENTICATOR_ROLE} does not exist (this login may not create roles): as an administrator run CREATE ROLE ${AUTHENTICATOR_ROLE} NOLOGIN NOINHERIT, then pgmcp migrate again`,
    );
    return;
  }
  process.stdout.write(
    `Requests should log in as ${AUTHENTICATOR_ROLE}${role.canLogin ? '' : ` (not yet able to log in)`}:\n` +
      (role.canLogin ? '' : `  ${ENABLE_AUTHENTICATOR_LOGIN_HINT}\n`) +
      `  pgmcp role grant <role>        # for each Postgres role a token may name\n` +
      `  DATABASE_URL=postgres://${AUTHENTICATOR_ROLE}:<password>@<host>/<db> pgmcp serve\n`,
  );
}
