// The built server (`bin/pgmcp.js serve`) as a child process, as the e2e tests and the benchmarks
// run it: on port 0, without migrating, as the login the URL names, with only the given environment.
import { spawn, type ChildProcess } from 'node:child_process';
import { PROJECT_ROOT } from '../../src/version.js';

/** A started server: its process, its MCP endpoint, its admin listener (when asked for). */
export interface BuiltServer {
  readonly child: ChildProcess;
  /** The MCP endpoint, as the banner prints it. */
  readonly url: string;
  /** The admin listener's base URL; undefined unless env sets PGMCP_ADMIN_PORT. */
  readonly adminUrl: string | undefined;
  /** Everything it wrote to stdout and stderr so far. */
  readonly output: () => string;
}

export interface BuiltServerOptions {
  /** More `serve` flags (`--config <file>`, say). */
  readonly args?: readonly string[];
  /** Told of the process as soon as it is spawned, before it serves (to kill it in afterAll). */
  readonly onSpawn?: (child: ChildProcess) => void;
}

const SERVING = /serving MCP 2026-07-28 at (http:\/\/[^\s"]+)/;
const ADMIN = /admin listener \(metrics, probes\) on (http:\/\/[^\s"]+)/;

/**
 * Spawn `pgmcp serve --port 0 --no-migrate --allow-unsafe-login` with `env` and PATH only (nothing
 * else of this process's environment reaches it). Resolves once it serves, and once its admin
 * listener is up too when env sets PGMCP_ADMIN_PORT; rejects with its output if it exits first.
 */
export function spawnBuiltServer(
  env: Readonly<Record<string, string | undefined>>,
  options: BuiltServerOptions = {},
): Promise<BuiltServer> {
  const child = spawn(
    process.execPath,
    [
      'bin/pgmcp.js',
      'serve',
      '--port',
      '0',
      '--no-migrate',
      // Test clusters' only login is their superuser.
      '--allow-unsafe-login',
      ...(options.args ?? []),
    ],
    {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env['PATH'], ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  options.onSpawn?.(child);
  const wantsAdmin = env['PGMCP_ADMIN_PORT'] !== undefined;
  let output = '';
  return new Promise((resolve, reject) => {
    // A server that neither serves nor exits is stopped, so the caller fails instead of hanging.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`pgmcp serve did not serve within 60 s: ${output}`));
    }, 60_000);
    timer.unref();
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const url = SERVING.exec(output)?.[1];
      const adminUrl = ADMIN.exec(output)?.[1];
      if (url !== undefined && (adminUrl !== undefined || !wantsAdmin)) {
        clearTimeout(timer);
        resolve({ child, url, adminUrl, output: () => output });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`pgmcp serve exited with ${code}: ${output}`));
    });
    // A spawn that fails (no node binary, say) emits 'error', and no 'exit'.
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
