// The bench's turn-taking: ABBA order, and pairs that keep each side in its place.
import { describe, expect, it } from 'vitest';
import { alternate } from '../../bench/alternate.js';

describe('bench alternation', () => {
  it('runs the measured side first every other round, and pairs each round as [baseline, measured]', async () => {
    const calls: string[] = [];
    let count = 0;
    const side = (name: string) => () => {
      count += 1;
      calls.push(name);
      return Promise.resolve(`${name}${count}`);
    };
    const pairs = await alternate(4, side('base'), side('ours'));
    expect(calls).toEqual([
      'base',
      'ours',
      'ours',
      'base',
      'base',
      'ours',
      'ours',
      'base',
    ]);
    expect(pairs).toEqual([
      ['base1', 'ours2'],
      ['base4', 'ours3'],
      ['base5', 'ours6'],
      ['base8', 'ours7'],
    ]);
  });

  it('runs nothing for no rounds', async () => {
    const never = () => Promise.reject(new Error('ran'));
    await expect(alternate(0, never, never)).resolves.toEqual([]);
  });
});
