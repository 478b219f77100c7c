// The databases requests run on, decided from the config: which login serves requests on the main
// database, the --database ones beside it, and the refusal to serve HTTP as a login that bypasses
// row-level security.
import { stateSecret } from '../auth/index.js';
import { redactConnectionString, type Config } from '../config/index.js';
import {
  AUTHENTICATOR_ROLE,
  enableAuthenticatorLogin,
  inspectRequestLogin,
  withAdminClient,
  type DatabaseHandle,
} from '../db/index.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../log.js';
import {
  configuredDatabase,
  migrateDatabase,
  type OpenDatabase,
} from './open-database.js';

/**
 * The main database's pool for requests: the configured login's own, or for the embedded default
 * a pool logged in as pgmcp_authenticator (NOINHERIT, granted the demo roles), never as the
 * superuser that owns the cluster, so row-level security applies to every request. The password
 * is the state folder's, made on first use.
 */
export async function requestDatabase(
  config: Config,
  open: OpenDatabase,
  logger: Logger,
): Promise<DatabaseHandle> {
  if (open.embedded === undefined) return open.db;
  const password = stateSecret(config.stateDirectory, 'authenticator-password');
  await withAdminClient(open.db, (client) =>
    enableAuthenticatorLogin(client, password),
  );
  const url = new URL(open.embedded.connectionString);
  url.username = AUTHENTICATOR_ROLE;
  url.password = password;
  logger.info(
    `requests run as ${AUTHENTICATOR_ROLE} and the roles granted to it`,
  );
  return configuredDatabase(
    config,
    { connectionString: url.toString(), database: undefined },
    logger,
  );
}

/**
 * Each --database: a pool (pushed onto `opened` as it opens, for the caller to close), migrated
 * and checked like the main one. Only migrations: cursors are signed with the main database's secret.
 */
export async function openMoreDatabases(
  config: Config,
  opened: DatabaseHandle[],
  logger: Logger,
): Promise<{ name: string; db: DatabaseHandle }[]> {
  const more = [];
  for (const database of config.databases) {
    const db = configuredDatabase(
      config,
      { connectionString: database.connectionString, database: database.name },
      logger,
    );
    opened.push(db);
    // With failover, the first survey of the candidates finds the primary before anything connects.
    await db.primary?.check();
    logger.info(
      `database ${database.name}: ${redactConnectionString(database.connectionString)}`,
    );
    if (config.migrate) await migrateDatabase(db, logger);
    if (!config.stdio) await refuseUnsafeLogin(config, db, logger);
    more.push({ name: database.name, db });
  }
  return more;
}

/** Superusers and table owners bypass row-level security: refuse to serve HTTP as one, unless told to. */
export async function refuseUnsafeLogin(
  config: Config,
  db: DatabaseHandle,
  logger: Logger,
): Promise<void> {
  const facts = await inspectRequestLogin(db);
  if (!facts.superuser && !facts.ownsResources) return;
  const why = facts.superuser ? 'a superuser' : 'the owner of pgmcp.resources';
  if (config.allowUnsafeLogin) {
    logger.warn(
      `serving HTTP as ${why}: row-level security does not apply to the login itself (--allow-unsafe-login)`,
    );
    return;
  }
  throw new ConfigError(
    `refusing to serve HTTP while logged in as ${why}: PostgreSQL lets it bypass row-level security. ` +
      `Log in as ${AUTHENTICATOR_ROLE} (README "Authorization": ALTER ROLE ${AUTHENTICATOR_ROLE} LOGIN PASSWORD '…', ` +
      `then pgmcp role grant <role>), or pass --allow-unsafe-login if every caller may see everything.`,
  );
}
