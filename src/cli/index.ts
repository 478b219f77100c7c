// Public surface of cli/: each command by the word that runs it, the flag parser, the usage.
import { EXPOSE_COMMAND } from './expose-command.js';
import type { CliCommand } from './flags.js';
import { MIGRATE_COMMAND } from './migrate-command.js';
import { ROLE_COMMAND } from './role-command.js';
import { SEED_COMMAND } from './seed-command.js';
import { SELFTEST_COMMAND } from './selftest-command.js';
import { SERVE_COMMAND } from './serve-command.js';
import { TOKEN_COMMAND } from './token-command.js';

export { parseFlags, UsageError, type CliCommand } from './flags.js';
export { USAGE } from './usage.js';

/** Every command, by the word that runs it (unexpose is expose's, undoing). */
export const COMMANDS: ReadonlyMap<string, CliCommand> = new Map([
  ['serve', SERVE_COMMAND],
  ['migrate', MIGRATE_COMMAND],
  ['seed', SEED_COMMAND],
  ['token', TOKEN_COMMAND],
  ['role', ROLE_COMMAND],
  ['selftest', SELFTEST_COMMAND],
  ['expose', EXPOSE_COMMAND],
  ['unexpose', EXPOSE_COMMAND],
]);
