// What the replication stream sends a walsender, and reads of its settings.

/**
 * A standby status update ('r'): `position` as written, flushed and applied, so the slot's
 * confirmed_flush_lsn moves to it; `replyRequested` asks the server for a keepalive at once.
 */
export function standbyStatusUpdate(
  position: bigint,
  replyRequested: boolean,
): Buffer {
  const update = Buffer.alloc(34);
  update.write('r', 0);
  update.writeBigUInt64BE(position, 1);
  update.writeBigUInt64BE(position, 9);
  update.writeBigUInt64BE(position, 17);
  // Microseconds since 2000-01-01.
  update.writeBigInt64BE(BigInt(Date.now() - 946_684_800_000) * 1000n, 25);
  update.writeUInt8(replyRequested ? 1 : 0, 33);
  return update;
}

/** A duration as SHOW prints it ("60s", "1min", "500ms", "0") in milliseconds. */
export function durationMs(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h|d)?\s*$/.exec(text);
  if (match === null) return 0;
  const scale: Record<string, number> = {
    ms: 1,
    s: 1000,
    min: 60_000,
    h: 3_600_000,
    d: 86_400_000,
  };
  return Number(match[1]) * (scale[match[2] ?? 'ms'] ?? 1);
}
