// promtool (Debian's prometheus package) judges an exposition as Prometheus does; the metrics tests
// fail, never skip, where it is missing, and say how to install it.
import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';

/** `promtool check metrics` accepts `exposition` with nothing to say. */
export function expectPromtoolAccepts(exposition: string): void {
  const check = spawnSync('promtool', ['check', 'metrics'], {
    input: exposition,
    encoding: 'utf8',
  });
  if (check.error !== undefined)
    throw new Error(
      `promtool is not installed (${check.error.message}); install it with: apt-get update && apt-get install -y --no-install-recommends prometheus`,
    );
  expect(`${check.stdout}${check.stderr}`).toBe('');
  expect(check.status).toBe(0);
}
