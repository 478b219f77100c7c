// pgmcp selftest (and `SELFTEST=1 npm start`): start what serving starts, without a transport, and
// run the checks a user would through the server's own request path; one line each, exit 0 only
// when all pass.
import { tokenlessPrincipal } from '../app/index.js';
import { loadConfig, type Config, type ConfigFlags } from '../config/index.js';
import { commitProbeResource } from './statements/probe-resource.js';
import type { Logger } from '../log.js';
import { startApp } from '../server.js';
import {
  UsageError,
  booleanFlag,
  listFlag,
  stringFlag,
  type CliCommand,
  type ParsedFlags,
} from './flags.js';
import { formatResult, runSelftest } from './selftest-checks.js';

const HELP = `Usage: pgmcp selftest [--role R] [--no-migrate] [--seed DATASET] [--config FILE] [--database NAME=URL]…

Check a pgmcp deployment the way a client would, against the configured database and through the
server's own request path, then exit (0 only when every check passes). Serves nothing.
  - every resources/list page is disjoint from the others, and the last has no nextCursor
  - a forged cursor is rejected (-32602), not answered with the first page
  - a resource template is listed, and a resource it matches is read
  - the digest prompt answers one resource_link per resource of a tag the role can read
  - the search and fetch tools answer
  - a committed change arrives on a listen stream (a probe resource, pgmcp-selftest:///…, is
    committed through the login and deleted again; a login that may not, such as the serve
    login, is told the GRANT and policy a DBA runs to let it, for probe rows only)
One line per check: "pass <check>: …" or "fail <check>: <reason>". SELFTEST=1 npm start does the same.
  --role R               run every request as this Postgres role (env PGMCP_ROLE; default: the login)
  --no-migrate           do not apply pending migrations first
  --seed DATASET         load a dataset first (the embedded default loads demo once by itself)
  --config FILE          the config file (env PGMCP_CONFIG)
  --database NAME=URL    another database, as serve takes it (repeatable)
  -h, --help             show this help
`;

export const SELFTEST_COMMAND: CliCommand = {
  name: 'selftest',
  help: HELP,
  options: {
    role: { type: 'string' },
    'no-migrate': { type: 'boolean' },
    seed: { type: 'string' },
    config: { type: 'string' },
    database: { type: 'string', multiple: true },
  },
  async run(flags: ParsedFlags, logger: Logger): Promise<void> {
    if (flags.positionals.length > 0)
      throw new UsageError(
        `selftest takes no arguments (got ${flags.positionals.join(' ')})`,
      );
    const configFlags: ConfigFlags = {
      role: stringFlag(flags, 'role'),
      migrate: booleanFlag(flags, 'no-migrate') === true ? false : undefined,
      seed: stringFlag(flags, 'seed'),
      config: stringFlag(flags, 'config'),
      databases: listFlag(flags, 'database'),
    };
    await selftest(loadConfig(configFlags, process.env), logger);
  },
};

/**
 * Run every check against `config`'s database and write one line per check to stdout; sets the
 * exit code to 1 when any fails.
 */
export async function selftest(config: Config, logger: Logger): Promise<void> {
  const running = await startApp(config, logger);
  try {
    const results = await runSelftest({
      dispatcher: running.app.dispatcher,
      principal: tokenlessPrincipal(config),
      commitProbe: (uri, readers) =>
        commitProbeResource(running.adminDb, uri, readers),
    });
    for (const result of results) process.stdout.write(formatResult(result));
    const failed = results.filter((result) => !result.ok).length;
    process.stdout.write(
      failed === 0
        ? `selftest: all ${results.length} checks passed\n`
        : `selftest: ${failed} of ${results.length} checks failed\n`,
    );
    if (failed > 0) process.exitCode = 1;
  } finally {
    await running.stop();
  }
}
