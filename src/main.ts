// Process entry: the pgmcp CLI (serve, migrate, seed), signals and exit codes.
import { parseArgs } from 'node:util';
import { loadConfig, type Config, type ConfigFlags } from './config.js';
import { isAllowedRoleName, mintToken } from './auth/index.js';
import {
  AUTHENTICATOR_ROLE,
  EmbeddedPostgresError,
  MigrationChangedError,
  ROLE_REFUSALS,
  checkRequestRole,
  grantToAuthenticator,
  setExposed,
  listDatasets,
  type DatabaseHandle,
  type RoleVerdict,
} from './db/index.js';
import { ConfigError } from './errors.js';
import { createLogger, type Logger } from './log.js';
import {
  SEEDS_DIRECTORY,
  configuredDatabase,
  jwtSecret,
  openDatabase,
  prepareDatabase,
  startServer,
  tokenAudience,
} from './server.js';
import { SERVER_INFO } from './version.js';

const USAGE = `pgmcp ${SERVER_INFO.version}: an MCP resource server over PostgreSQL

Usage: pgmcp <command> [options]

Commands:
  serve             serve MCP over Streamable HTTP (default) or stdio
  migrate           apply pending migrations and exit
  seed <dataset>    load a dataset from seeds/ (demo, conformance, bench) and exit
  token --role R    print a development bearer token signed with the HS256 secret
  role grant <role> let pgmcp_authenticator switch to <role> for requests
  expose <table>    capture a table's row changes for live updates (unexpose removes it)

Run \`pgmcp <command> --help\` for a command's options.
Without DATABASE_URL (or PG* variables) pgmcp runs an embedded PostgreSQL with data in .pgmcp/.
`;

const COMMAND_HELP: Record<string, string> = {
  serve: `Usage: pgmcp serve [--port N] [--host H] [--stdio] [--role R] [--no-migrate] [--seed DATASET] [--allow-unsafe-login]
                   [--config FILE] [--database NAME=URL]…

Serve MCP 2026-07-28. Over HTTP the endpoint is http://HOST:PORT/mcp and every request needs a
bearer token (README "Authorization"); over stdio every request runs as --role.
  --port N               HTTP port (env PORT; default 3000; 0 picks a free port)
  --host H               HTTP bind address (env HOST; default 127.0.0.1)
  --stdio                speak newline-delimited JSON on stdin/stdout instead of HTTP (logs go to stderr)
  --role R               the Postgres role stdio requests run as (env PGMCP_ROLE; default: the login)
  --no-migrate           do not apply pending migrations at start-up
  --seed DATASET         load a dataset before serving (the embedded default loads demo once by itself)
  --allow-unsafe-login   serve HTTP even when logged in as a superuser or table owner (no RLS for it)
  --config FILE          the config file: catalog scope, row collections (env PGMCP_CONFIG;
                         docs/databases.md "The config file"; the embedded default uses
                         seeds/demo/pgmcp.config.json)
  --database NAME=URL    serve another database's catalog and rows as pg://NAME/… (repeatable;
                         env PGMCP_DATABASES, space-separated)
  -h, --help             show this help
`,
  token: `Usage: pgmcp token --role R [--ttl 1h] [--claim key=value]…

Print a development token (HS256, signed with PGMCP_JWT_SECRET or, in the embedded default, the
secret kept in .pgmcp/jwt-secret) for role R, with audience PGMCP_JWT_AUDIENCE (default
http://HOST:PORT/mcp) and any extra claims, visible to SQL as current_setting('request.jwt.claims').
  --ttl D        lifetime: a number with s, m, h or d (default 1h)
  --claim k=v    an extra claim (repeatable)
`,
  role: `Usage: pgmcp role grant <role>

GRANT <role> TO pgmcp_authenticator, so requests whose token names <role> may run as it.
Runs as the database's administrative login (DATABASE_URL, or the embedded superuser).
`,
  expose: `Usage: pgmcp expose <schema.table>
       pgmcp unexpose <schema.table>

Install (or remove) change capture on a company table: three statement-level triggers that log
its row changes to pgmcp.changes, so subscribers of its rows (pg://{database}/{schema}/{table}/rows/{key})
hear of them. Name the table as SQL would ("My Schema"."My Table" for mixed case). Serve its rows
by listing it under "collections" in the config file (docs/databases.md "Row collections"). Runs as the
database's administrative login (DATABASE_URL, or the embedded superuser), which must own the
table or be a superuser. --database NAME picks a database given with --database NAME=url.
`,
  migrate: `Usage: pgmcp migrate

Apply pending migrations from migrations/ (forward-only, each in a transaction, under an advisory
lock) to DATABASE_URL, or to the embedded PostgreSQL when none is set. An applied migration whose
file has changed since (its recorded SHA-256 differs) stops this and \`pgmcp serve\` with exit code 2.
`,
  seed: `Usage: pgmcp seed <dataset>

Apply migrations, then load seeds/<dataset>/ (idempotent). Datasets: demo, conformance, bench.
`,
};

/**
 * Run the CLI; exits the process with 0 on success, 1 on failure, 2 on bad usage or config or an
 * applied migration whose file changed.
 */
export async function main(argv: string[]): Promise<void> {
  const logger = createLogger();
  // A bug that leaks a rejection must not take the server down with every open request: log it.
  process.on('unhandledRejection', (reason) =>
    logger.error('unhandled rejection (a bug; please report it)', reason),
  );
  const [command, ...rest] = argv;
  try {
    if (
      command === undefined ||
      command === '--help' ||
      command === '-h' ||
      command === 'help'
    ) {
      process.stdout.write(USAGE);
      return;
    }
    if (command === '--version' || command === '-v') {
      process.stdout.write(`${SERVER_INFO.version}\n`);
      return;
    }
    if (command === 'serve') await serve(rest, logger);
    else if (command === 'migrate') await oneShot(rest, 'migrate', logger);
    else if (command === 'seed') await oneShot(rest, 'seed', logger);
    else if (command === 'token') await token(rest, logger);
    else if (command === 'role') await role(rest, logger);
    else if (command === 'expose' || command === 'unexpose')
      await expose(command, rest, logger);
    else throw new UsageError(`unknown command "${command}"`);
  } catch (error) {
    process.exitCode = report(error, logger);
  }
}

class UsageError extends Error {}

const TTL_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

async function token(args: string[], logger: Logger): Promise<void> {
  const { values, positionals } = parse('token', args, {
    role: { type: 'string' },
    ttl: { type: 'string' },
    claim: { type: 'string', multiple: true },
  });
  if (values['help'] === true) {
    process.stdout.write(COMMAND_HELP['token'] ?? '');
    return;
  }
  const roleName = values['role'];
  if (typeof roleName !== 'string' || positionals.length > 0)
    throw new UsageError('token needs --role <role>');
  const ttl = /^(\d+)([smhd])$/.exec(
    typeof values['ttl'] === 'string' ? values['ttl'] : '1h',
  );
  if (ttl === null)
    throw new UsageError('--ttl takes a number and a unit: 30m, 1h, 7d');
  const claims: Record<string, string> = {};
  for (const pair of (values['claim'] as string[] | undefined) ?? []) {
    const equals = pair.indexOf('=');
    if (equals <= 0)
      throw new UsageError(
        `--claim takes key=value (got ${JSON.stringify(pair)})`,
      );
    claims[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  const config = loadConfig({}, process.env);
  // Never create a secret here: a token signed with a new one would match no running server.
  const secret = jwtSecret(config, { create: false });
  if (secret === undefined) {
    throw new ConfigError(
      'pgmcp token signs with PGMCP_JWT_SECRET; with PGMCP_JWKS_URL, tokens come from your identity provider.',
    );
  }
  await refuseUnassumableRole(config, roleName, logger);
  const audience = tokenAudience(config);
  const minted = await mintToken({
    secret,
    role: roleName,
    claims,
    audience,
    issuer: config.auth.issuer ?? new URL(audience).origin,
    ttlSeconds: Number(ttl[1]) * (TTL_UNITS[ttl[2] ?? 'h'] ?? 3600),
  });
  process.stdout.write(`${minted}\n`);
}

/** `pgmcp token` mints only for a role the server would accept: the same check as requests'. */
async function refuseUnassumableRole(
  config: Config,
  roleName: string,
  logger: Logger,
): Promise<void> {
  if (!isAllowedRoleName(roleName))
    throw new ConfigError(
      `${JSON.stringify(roleName)} is not a role name a token may carry`,
    );
  const open = await openDatabase(config, logger);
  let verdict: RoleVerdict;
  try {
    // Embedded, the CLI logs in as the cluster's superuser; requests log in as the authenticator.
    const login = open.embedded === undefined ? undefined : AUTHENTICATOR_ROLE;
    verdict = await checkRequestRole(open.db.pool, roleName, login);
  } finally {
    await open.close();
  }
  if (verdict !== 'allowed')
    throw new ConfigError(
      `refusing to mint a token for ${JSON.stringify(roleName)}: ${ROLE_REFUSALS[verdict].replace('<role>', roleName)}`,
    );
}

async function role(args: string[], logger: Logger): Promise<void> {
  const { values, positionals } = parse('role', args, {});
  if (values['help'] === true) {
    process.stdout.write(COMMAND_HELP['role'] ?? '');
    return;
  }
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
    const client = await open.db.connectAdmin();
    try {
      await grantToAuthenticator(client, roleName);
    } finally {
      await client.end();
    }
    logger.info(`granted ${roleName} to ${AUTHENTICATOR_ROLE}`);
  } finally {
    await open.close();
  }
}

async function expose(
  command: 'expose' | 'unexpose',
  args: string[],
  logger: Logger,
): Promise<void> {
  const { values, positionals } = parse('expose', args, {
    database: { type: 'string' },
  });
  if (values['help'] === true) {
    process.stdout.write(COMMAND_HELP['expose'] ?? '');
    return;
  }
  const [table] = positionals;
  if (table === undefined || positionals.length !== 1)
    throw new UsageError(`usage: pgmcp ${command} <schema.table>`);
  const config = loadConfig({}, process.env);
  const name = values['database'];
  let open: { db: DatabaseHandle; close(): Promise<void> };
  if (typeof name === 'string') {
    const database = config.databases.find((entry) => entry.name === name);
    if (database === undefined)
      throw new ConfigError(
        `no database ${name}: give it with PGMCP_DATABASES="${name}=postgres://…"`,
      );
    const db = configuredDatabase(config, database.connectionString, logger);
    open = { db, close: () => db.close() };
  } else {
    open = await openDatabase(config, logger);
  }
  try {
    const client = await open.db.connectAdmin();
    try {
      const relid = await setExposed(client, table, command === 'expose');
      if (relid === undefined)
        throw new ConfigError(
          `no table ${JSON.stringify(table)}: name it as SQL would, schema.table ("My Schema"."My Table" for mixed case).`,
        );
      logger.info(
        command === 'expose'
          ? `${relid}: row changes are now captured; list it under "collections" in the config file to serve its rows`
          : `${relid}: row changes are no longer captured`,
      );
    } finally {
      await client.end();
    }
  } finally {
    await open.close();
  }
}

function report(error: unknown, logger: Logger): number {
  if (error instanceof UsageError) {
    process.stderr.write(`pgmcp: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (error instanceof ConfigError || error instanceof MigrationChangedError) {
    process.stderr.write(`pgmcp: ${error.message}\n`);
    return 2;
  }
  if (error instanceof EmbeddedPostgresError) {
    process.stderr.write(`pgmcp: ${error.message}\n`);
    return 1;
  }
  logger.error('pgmcp failed', error);
  return 1;
}

type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; multiple?: boolean }
>;

/** Parse flags strictly; unknown flags are a usage error. Values are strings or booleans. */
function parse(
  command: string,
  args: string[],
  options: OptionSpec,
): {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
} {
  try {
    const parsed = parseArgs({
      args,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    return {
      values: parsed.values as Record<
        string,
        string | boolean | string[] | undefined
      >,
      positionals: parsed.positionals,
    };
  } catch (error) {
    throw new UsageError(
      `${command}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

async function serve(args: string[], logger: Logger): Promise<void> {
  const { values, positionals } = parse('serve', args, {
    port: { type: 'string' },
    host: { type: 'string' },
    stdio: { type: 'boolean' },
    'no-migrate': { type: 'boolean' },
    seed: { type: 'string' },
    role: { type: 'string' },
    'allow-unsafe-login': { type: 'boolean' },
    config: { type: 'string' },
    database: { type: 'string', multiple: true },
  });
  if (values['help'] === true) {
    process.stdout.write(COMMAND_HELP['serve'] ?? '');
    return;
  }
  if (positionals.length > 0)
    throw new UsageError(
      `serve takes no arguments (got ${positionals.join(' ')})`,
    );
  const flags: ConfigFlags = {
    port: values['port'] as string | undefined,
    host: values['host'] as string | undefined,
    stdio: values['stdio'] as boolean | undefined,
    migrate: values['no-migrate'] === true ? false : undefined,
    seed: values['seed'] as string | undefined,
    role: values['role'] as string | undefined,
    allowUnsafeLogin: values['allow-unsafe-login'] as boolean | undefined,
    config: values['config'] as string | undefined,
    databases: values['database'] as string[] | undefined,
  };
  const config = loadConfig(flags, process.env);
  // Signals are handled from before start-up: a Ctrl-C while the embedded PostgreSQL starts, or
  // one sent the moment the banner appears, must still stop everything (a second one exits now).
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let stopRequested = false;
  let signals = 0;
  const shutdown = (): void => {
    if (server === undefined) return; // start-up finishes first, then sees stopRequested
    void server.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error('shutdown failed', error);
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      logger.warn(`second ${signal}: exiting now`);
      process.exit(130);
    }
    logger.info(`${signal}: shutting down`);
    stopRequested = true;
    shutdown();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  server = await startServer(config, logger);
  if (stopRequested) {
    shutdown();
    return;
  }
  if (server.url !== undefined) {
    process.stdout.write(await banner(config, server.url));
  } else {
    logger.info('serving MCP 2026-07-28 on stdio');
  }
  await server.done;
  await server.stop();
}

/** The demo role the embedded default's banner mints a token for (seeds/demo/05_roles.sql). */
const BANNER_DEMO_ROLE = 'support';

/**
 * What `serve` prints once HTTP is up: a curl that works as printed. With tokens, the embedded
 * default mints one for a demo role; elsewhere a TOKEN=… line comes first.
 */
async function banner(config: Config, url: string): Promise<string> {
  const demoSecret =
    config.auth.mode === 'jwt' && config.database.mode === 'embedded'
      ? jwtSecret(config)
      : undefined;
  let authorization = '';
  let before = '';
  let after = '';
  if (demoSecret !== undefined) {
    const audience = tokenAudience(config, Number(new URL(url).port));
    const minted = await mintToken({
      secret: demoSecret,
      role: BANNER_DEMO_ROLE,
      claims: {},
      audience,
      issuer: config.auth.issuer ?? new URL(audience).origin,
      ttlSeconds: 3600,
    });
    authorization = ` -H 'Authorization: Bearer ${minted}'`;
    after = `  the token above is role ${BANNER_DEMO_ROLE}'s for 1 h; mint more: npx pgmcp token --role <role>   (demo roles: support, engineering, finance, admin)\n`;
  } else if (config.auth.mode === 'jwt') {
    before =
      config.auth.secret === undefined
        ? `  every request needs a bearer token from your identity provider: TOKEN=<its token>\n`
        : `  every request needs a bearer token: TOKEN=$(npx pgmcp token --role <a role granted to ${AUTHENTICATOR_ROLE}>)\n`;
    authorization = ` -H "Authorization: Bearer $TOKEN"`;
  }
  return (
    `\npgmcp is serving MCP 2026-07-28 at ${url}\n` +
    before +
    `  try:    curl -s ${url}${authorization} -H 'Content-Type: application/json' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: server/discover' \\\n` +
    `            -d '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'\n` +
    after +
    `  connect an MCP host (Streamable HTTP) to ${url}; stop with Ctrl-C\n\n`
  );
}

async function oneShot(
  args: string[],
  command: 'migrate' | 'seed',
  logger: Logger,
): Promise<void> {
  const { values, positionals } = parse(command, args, {});
  if (values['help'] === true) {
    process.stdout.write(COMMAND_HELP[command] ?? '');
    return;
  }
  let dataset: string | undefined;
  if (command === 'seed') {
    const datasets = await listDatasets(SEEDS_DIRECTORY);
    if (positionals.length !== 1 || !datasets.includes(positionals[0] ?? '')) {
      throw new UsageError(`seed needs one dataset: ${datasets.join(', ')}`);
    }
    dataset = positionals[0];
  } else if (positionals.length > 0) {
    throw new UsageError(`migrate takes no arguments`);
  }
  const config = loadConfig({}, process.env);
  const open = await openDatabase(config, logger);
  try {
    await prepareDatabase(open.db, logger, { migrate: true, seed: dataset });
    if (command === 'migrate' && open.embedded === undefined)
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
  const client = await db.connectAdmin();
  try {
    const { rows } = await client.query<{ login: boolean | null }>(
      'select rolcanlogin as login from pg_roles where rolname = $1',
      [AUTHENTICATOR_ROLE],
    );
    const role = rows[0];
    if (role === undefined) {
      logger.warn(
        `${AUTHENTICATOR_ROLE} does not exist (this login may not create roles): as an administrator run CREATE ROLE ${AUTHENTICATOR_ROLE} NOLOGIN NOINHERIT, then pgmcp migrate again`,
      );
      return;
    }
    process.stdout.write(
      `Requests should log in as ${AUTHENTICATOR_ROLE}${role.login === true ? '' : ` (not yet able to log in)`}:\n` +
        (role.login === true
          ? ''
          : `  ALTER ROLE ${AUTHENTICATOR_ROLE} LOGIN PASSWORD '<choose one>';\n`) +
        `  pgmcp role grant <role>        # for each Postgres role a token may name\n` +
        `  DATABASE_URL=postgres://${AUTHENTICATOR_ROLE}:<password>@<host>/<db> pgmcp serve\n`,
    );
  } finally {
    await client.end();
  }
}
