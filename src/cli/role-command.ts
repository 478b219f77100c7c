// pgmcp role grant <role>: let pgmcp_authenticator switch to a role for requests.
import { isAllowedRoleName } from '../auth/index.js';
import { loadConfig } from '../config/index.js';
import {
  AUTHENTICATOR_ROLE,
  grantToAuthenticator,
  storeRoleFunctions,
  withAdminClient,
} from '../db/index.js';
import type { Logger } from '../log.js';
import { openDatabase } from '../app/index.js';
import { UsageError, type CliCommand, type ParsedFlags } from './flags.js';

const HELP = `Usage: pgmcp role grant <role>

GRANT <role> TO pgmcp_authenticator, so requests whose token names <role> may run as it, and
make the role's query and explain functions in pgmcp's schema, which hot standbys need to run
those tools (docs/databases.md "Standbys").
Runs as the database's administrative login (DATABASE_URL, or the embedded superuser).
`;

export const ROLE_COMMAND: CliCommand = {
  name: 'role',
  help: HELP,
  options: {},
  run: role,
};

async function role(flags: ParsedFlags, logger: Logger): Promise<void> {
  const { positionals } = flags;
  const [action, roleName] = positionals;
  if (action !== 'grant' || roleName === undefined || positionals.length !== 2)
    throw new UsageError('usage: pgmcp role grant <role>');
  if (!isAllowedRoleName(roleName))
    throw new UsageError(
      `${JSON.stringify(roleName)} is not a role requests may run as`,
    );
  const config = loadConfig({}, process.env);
  const open = await openDatabase(config, logger);
  try {
    await withAdminClient(open.db, (client) =>
      grantToAuthenticator(client, roleName),
    );
    logger.info(`granted ${roleName} to ${AUTHENTICATOR_ROLE}`);
    await withAdminClient(open.db, (client) =>
      storeRoleFunctions(client, roleName),
    ).then(
      () =>
        logger.info(
          `made ${roleName}'s query and explain functions for standbys`,
        ),
      (error: unknown) =>
        logger.warn(
          `${roleName}'s query and explain functions for standbys were not made (${String(error)}): on a standby those tools run on the primary for it; run this as pgmcp's schema owner or a superuser`,
        ),
    );
  } finally {
    await open.close();
  }
}
