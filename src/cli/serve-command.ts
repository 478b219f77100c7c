// pgmcp serve: start the server, print the banner, stop on SIGINT/SIGTERM (a second one exits now).
import { loadConfig, type ConfigFlags } from '../config/index.js';
import { startTracing } from '../observability/index.js';
import type { Logger } from '../log.js';
import { startServer, type RunningServer } from '../server.js';
import {
  UsageError,
  booleanFlag,
  listFlag,
  stringFlag,
  type CliCommand,
  type ParsedFlags,
} from './flags.js';
import { selftest } from './selftest-command.js';
import { serveBanner } from './serve-banner.js';

const HELP = `Usage: pgmcp serve [--port N] [--host H] [--stdio] [--role R] [--no-migrate] [--seed DATASET] [--allow-unsafe-login]
                   [--config FILE] [--database NAME=URL]…

Serve MCP 2026-07-28 (with SELFTEST=1 in the environment: run pgmcp selftest instead). Over HTTP the endpoint is http://HOST:PORT/mcp and every request needs a
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
`;

export const SERVE_COMMAND: CliCommand = {
  name: 'serve',
  help: HELP,
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    stdio: { type: 'boolean' },
    'no-migrate': { type: 'boolean' },
    seed: { type: 'string' },
    role: { type: 'string' },
    'allow-unsafe-login': { type: 'boolean' },
    config: { type: 'string' },
    database: { type: 'string', multiple: true },
  },
  run: serve,
};

/** The config flags serve's command line gives. */
function configFlags(flags: ParsedFlags): ConfigFlags {
  return {
    port: stringFlag(flags, 'port'),
    host: stringFlag(flags, 'host'),
    stdio: booleanFlag(flags, 'stdio'),
    migrate: booleanFlag(flags, 'no-migrate') === true ? false : undefined,
    seed: stringFlag(flags, 'seed'),
    role: stringFlag(flags, 'role'),
    allowUnsafeLogin: booleanFlag(flags, 'allow-unsafe-login'),
    config: stringFlag(flags, 'config'),
    databases: listFlag(flags, 'database'),
  };
}

async function serve(flags: ParsedFlags, logger: Logger): Promise<void> {
  if (flags.positionals.length > 0)
    throw new UsageError(
      `serve takes no arguments (got ${flags.positionals.join(' ')})`,
    );
  const config = loadConfig(configFlags(flags), process.env);
  // SELFTEST=1 npm start: the self-test instead of serving (the same flags, nothing served).
  if (process.env['SELFTEST'] === '1') {
    await selftest(config, logger);
    return;
  }
  // Issue 35: traces only when OTEL_* asks for them; flushed when the process stops.
  const tracing = startTracing(process.env);
  // Signals are handled from before start-up: a Ctrl-C while the embedded PostgreSQL starts, or
  // one sent the moment the banner appears, must still stop everything (a second one exits now).
  const signals = handleSignals(logger, tracing);
  const server = await startServer(config, logger);
  signals.started(server);
  if (signals.stopRequested()) return;
  if (server.url !== undefined) {
    process.stdout.write(await serveBanner(config, server.url));
  } else {
    logger.info('serving MCP 2026-07-28 on stdio');
  }
  await server.done;
  await server.stop();
  await tracing?.stop().catch(() => undefined);
}

/**
 * SIGTERM drains the server once it has started (issue 35, docs/operations.md
 * "Observing and draining"), SIGINT stops it; either exits 0 then, and a second signal exits at
 * once. `started` hands over the
 * server, and stops it if a signal came during start-up.
 */
function handleSignals(
  logger: Logger,
  tracing: { stop(): Promise<void> } | undefined,
): {
  started(server: RunningServer): void;
  stopRequested(): boolean;
} {
  let server: RunningServer | undefined;
  let stopRequested = false;
  let signals = 0;
  let drain = false;
  const shutdown = (): void => {
    if (server === undefined) return; // start-up finishes first, then sees stopRequested
    void (drain ? server.drain() : server.stop())
      .then(() => tracing?.stop().catch(() => undefined))
      .then(
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
    // SIGTERM (an orchestrator) drains; Ctrl-C at a terminal (SIGINT) stops at once, as before.
    drain = signal === 'SIGTERM';
    shutdown();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    started(running) {
      server = running;
      if (stopRequested) shutdown();
    },
    stopRequested: () => stopRequested,
  };
}
