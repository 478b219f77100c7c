// What shared delivery (shared-delivery.ts) reads from outside: the seq a capture trigger's wake-up
// names, and the error that says this login may not share.

/** A privilege error on the shared delivery tables or pgmcp.latest_change (42501). */
export function deniedSharing(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause)
    if (
      (cause as { code?: unknown }).code === '42501' &&
      /feed_replicas|feed_batches|latest_change/.test(cause.message)
    )
      return true;
  return false;
}

/** The seq a capture trigger's wake-up names ({"seq": …}), if any. */
export function notifiedSeq(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const seq = (payload as { seq?: unknown }).seq;
  return typeof seq === 'number' || typeof seq === 'string'
    ? String(seq)
    : undefined;
}
