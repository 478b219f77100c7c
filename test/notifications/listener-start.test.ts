// The change feed's listener whose first connection fails: its start is refused, and nothing of it
// is left running (pg-listen's connection check, set up before that first connect, would otherwise
// reconnect for ever and keep alive a process whose start failed). Run in a child process of the
// built code, so that "nothing left" is what it is to a user: the process exits by itself.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';

/** A port nothing listens on: a server's, closed. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

it('refuses to start when its first connection fails, and leaves nothing that keeps the process alive', async () => {
  const module = pathToFileURL(
    path.join(PROJECT_ROOT, 'dist', 'src', 'notifications', 'feed-listener.js'),
  ).href;
  const url = `postgresql://postgres@127.0.0.1:${await closedPort()}/postgres`;
  const script = `
    const { startListener } = await import(${JSON.stringify(module)});
    const db = { sessionConfig: (name) => ({ connectionString: ${JSON.stringify(url)}, application_name: name }) };
    try {
      await startListener({ db, log: () => {}, warn: () => {} }, async () => {}, () => {});
      console.log('started');
    } catch (error) {
      console.log('refused: ' + error.code);
    }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // The bound is far past the listener's 10 s connection check, which would reconnect and stay.
  const exited = await new Promise<number | null | 'alive'>((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('alive');
    }, 45_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
  expect(output.trim()).toBe('refused: ECONNREFUSED');
  expect(exited).toBe(0);
}, 60_000);
