// pgmcp role grant <role>: let pgmcp_authenticator switch to a role for requests.
import { isAllowedRoleName } from '../auth/index.js';
import { loadConfig } from '../config/index.js';
import {
  AUTHENTICATOR_ROLE,
  grantToAuthenticator,
  withAdminClient,
} from '../db/index.js';
import type { Logger } from '../log.js';
import { openDatabase } from '../app/index.js';
import { UsageError, type CliCommand, type ParsedFlags } from './flags.js';

const HELP = `Usage: pgmcp role grant <role>

GRANT <role> TO pgmcp_authenticator, so requests whose token names <role> may run as it.
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
  } finally {
    await open.close();
  }
}
