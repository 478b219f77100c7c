// How every comparison in the bench takes turns: baseline and pgmcp (or no triggers and triggers),
// in ABBA order, so that whatever drifts during a figure (the heap, caches, the database's dead
// rows, a checkpoint) falls on both sides instead of always on the side that runs second.

/** `rounds` pairs [baseline, measured], every other round with the measured side first. */
export async function alternate<TBase, TMeasured>(
  rounds: number,
  baseline: () => Promise<TBase>,
  measured: () => Promise<TMeasured>,
): Promise<[TBase, TMeasured][]> {
  const pairs: [TBase, TMeasured][] = [];
  for (let round = 0; round < rounds; round += 1) {
    if (round % 2 === 0) {
      const base = await baseline();
      pairs.push([base, await measured()]);
    } else {
      const ours = await measured();
      pairs.push([await baseline(), ours]);
    }
  }
  return pairs;
}
