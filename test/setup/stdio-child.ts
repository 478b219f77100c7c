// A real `pgmcp serve --stdio` child process for tests, speaking newline-delimited JSON.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/version.js';

export interface StdioChild {
  process: ChildProcessWithoutNullStreams;
  /** Every stdout line so far, parsed (a line that is not JSON fails the test: logs go to stderr). */
  lines: Record<string, unknown>[];
  stderr: string[];
  send(line: string): void;
  /** The first line (past or future) matching `predicate`. */
  waitFor(
    predicate: (message: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>>;
  exit: Promise<number | null>;
}

/** Start `pgmcp serve --stdio --no-migrate` with `env` over this process's environment. */
export function startStdioChild(env: Record<string, string>): StdioChild {
  const child = spawn(
    process.execPath,
    [
      path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'),
      'serve',
      '--stdio',
      '--no-migrate',
    ],
    {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const lines: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  const waiters: (() => void)[] = [];
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      lines.push(
        JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>,
      );
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf('\n');
    }
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr.on('data', (chunk: Buffer) =>
    stderr.push(chunk.toString('utf8')),
  );
  const exit = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => resolve(code)),
  );
  return {
    process: child,
    lines,
    stderr,
    send: (line) => child.stdin.write(`${line}\n`),
    async waitFor(predicate) {
      for (;;) {
        const found = lines.find(predicate);
        if (found !== undefined) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    exit,
  };
}
