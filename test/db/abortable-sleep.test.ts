// The WAL reader's wait between attempts to read the slot (src/db/wal/abortable-sleep.ts): a replica
// that does not hold the slot waits on the same stop signal every few seconds for as long as it
// runs, so a wait that ends leaves no listener on the signal.
import { getEventListeners } from 'node:events';
import { expect, it } from 'vitest';
import { abortableSleep } from '../../src/db/wal/abortable-sleep.js';

it('leaves no abort listener behind once the wait is over', async () => {
  const stopping = new AbortController();
  for (let n = 0; n < 5; n += 1) await abortableSleep(1, stopping.signal);
  expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
});

it('ends at once when the signal aborts, or has aborted', async () => {
  const stopping = new AbortController();
  const waiting = abortableSleep(3_600_000, stopping.signal);
  expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(1);
  stopping.abort();
  await waiting;
  expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
  await abortableSleep(3_600_000, stopping.signal);
});
