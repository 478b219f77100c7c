// PGMCP_CHANGE_SOURCE=triggers for a database that may have used the WAL source before.
import type pg from 'pg';
import type { DatabaseHandle } from '../pool.js';
import {
  beginCaptureEpoch,
  dropSlot,
  slotName,
  slotRetainedBytes,
  useChangeSource,
} from './capture-slot.js';

/**
 * PGMCP_CHANGE_SOURCE=triggers: exposed tables get their capture triggers back, and a slot left by
 * the wal source is dropped (nothing would read it, and it would hold WAL forever). Changes that
 * committed under the wal source but were not logged yet are only in that slot: the switch starts
 * a new capture epoch, in the transaction that brings the triggers back, so every listener resyncs.
 */
export async function useTriggerSource(
  db: DatabaseHandle,
  log: (line: string) => void,
): Promise<void> {
  const admin = await db.connectAdmin();
  try {
    const { rows } = await admin.query<{ source: string }>(
      'select pgmcp.change_source() as source',
    );
    const moved = rows[0]?.source === 'wal' ? await leaveWalSource(admin) : 0;
    if (moved > 0)
      log(
        `live updates: ${moved} exposed tables now use capture triggers instead of the WAL`,
      );
    const slot = await slotName(admin);
    if (
      (await slotRetainedBytes(admin, slot)).exists &&
      (await dropSlot(admin, slot))
    )
      log(
        `live updates: dropped slot ${slot}, left by PGMCP_CHANGE_SOURCE=wal`,
      );
  } finally {
    await admin.end();
  }
}

/** Triggers back and a new epoch, in one transaction; how many tables moved. */
async function leaveWalSource(admin: pg.Client): Promise<number> {
  await admin.query('begin');
  try {
    const moved = await useChangeSource(admin, 'triggers');
    await beginCaptureEpoch(admin);
    await admin.query('commit');
    return moved;
  } catch (error) {
    await admin.query('rollback').catch(() => undefined);
    throw error;
  }
}
