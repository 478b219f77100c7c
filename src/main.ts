// Process entry: parse the command line, run the command (src/cli/), map errors to exit codes.
import { COMMANDS, USAGE, UsageError, parseFlags } from './cli/index.js';
import { EmbeddedPostgresError, MigrationChangedError } from './db/index.js';
import { ConfigError } from './errors.js';
import { createLogger, logFormatSetting, type Logger } from './log.js';
import { SERVER_INFO } from './version.js';

const HELP_WORDS = new Set(['--help', '-h', 'help']);

/**
 * Run the CLI; exits the process with 0 on success, 1 on failure, 2 on bad usage or config or an
 * applied migration whose file changed.
 */
export async function main(argv: string[]): Promise<void> {
  let logger: Logger;
  try {
    // Read here, not in config/: the logger must exist before the config is loaded, to report it.
    logger = createLogger({
      format: logFormatSetting(process.env['PGMCP_LOG_FORMAT']),
    });
  } catch (error) {
    process.stderr.write(`pgmcp: ${(error as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  // A bug that leaks a rejection must not take the server down with every open request: log it.
  process.on('unhandledRejection', (reason) =>
    logger.error('unhandled rejection (a bug; please report it)', reason),
  );
  try {
    await run(argv, logger);
  } catch (error) {
    process.exitCode = report(error, logger);
  }
}

async function run(argv: string[], logger: Logger): Promise<void> {
  const [name, ...args] = argv;
  if (name === undefined || HELP_WORDS.has(name)) {
    process.stdout.write(USAGE);
    return;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${SERVER_INFO.version}\n`);
    return;
  }
  const command = COMMANDS.get(name);
  if (command === undefined) throw new UsageError(`unknown command "${name}"`);
  const flags = parseFlags(command.name, args, command.options);
  if (flags.values['help'] === true) process.stdout.write(command.help);
  else await command.run(flags, logger, name);
}

/** The exit code for `error`, reported: usage and configuration briefly, a bug with its stack. */
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
