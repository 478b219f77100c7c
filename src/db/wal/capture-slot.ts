// The WAL change source's database side (migrations/0037): which source exposed tables use, the
// logical slot pgmcp manages and its bound (decoded rows are logged by logged-rows.ts).
import type pg from 'pg';
import { ConfigError } from '../../errors.js';

/** The publication `pgmcp expose` adds tables to under the wal source. */
export const CHANGE_PUBLICATION = 'pgmcp_changes';

/** Where a database's changes come from (PGMCP_CHANGE_SOURCE). */
export type ChangeSourceKind = 'triggers' | 'wal';

/**
 * Move this database's exposed tables to `source` (triggers, or the publication), and check what
 * the wal source needs: wal_level = logical. Returns how many tables moved.
 */
export async function useChangeSource(
  client: pg.Client,
  source: ChangeSourceKind,
): Promise<number> {
  if (source === 'wal') {
    const { rows } = await client.query<{ wal_level: string }>(
      'show wal_level',
    );
    if (rows[0]?.wal_level !== 'logical')
      throw new ConfigError(
        `PGMCP_CHANGE_SOURCE=wal needs wal_level = logical (it is ${rows[0]?.wal_level ?? 'unknown'}): set it in postgresql.conf and restart PostgreSQL, or use PGMCP_CHANGE_SOURCE=triggers (docs/operations.md "Choosing a change source").`,
      );
  }
  const { rows } = await client.query<{ moved: number }>(
    'select pgmcp.use_change_source($1) as moved',
    [source],
  );
  return rows[0]?.moved ?? 0;
}

/** The slot's name: slots are per cluster, so each database has its own. */
export async function slotName(client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ name: string }>(
    `select left('pgmcp_' || regexp_replace(lower(current_database()), '[^a-z0-9_]', '_', 'g'), 54)
            || '_' || left(md5(current_database()), 8) as name`,
  );
  return rows[0]?.name ?? 'pgmcp_changes';
}

/** max_slot_wal_keep_size in bytes, or -1 when PostgreSQL lets a slot keep WAL without bound. */
export async function slotKeepLimit(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ bytes: string }>(
    `select case when setting::bigint < 0 then -1
                 else setting::bigint * 1024 * 1024 end::text as bytes
       from pg_settings where name = 'max_slot_wal_keep_size'`,
  );
  return Number(rows[0]?.bytes ?? -1);
}

/**
 * Make sure the slot exists and can be read: create it when missing, drop and recreate it when
 * PostgreSQL invalidated it (wal_status 'lost'), and finish a creation a crashed run left
 * (migrations/0040). A new slot starts a new epoch, and listeners resync (what committed while
 * there was none was never decoded). Returns whether it is new.
 */
export async function ensureSlot(
  client: pg.Client,
  slot: string,
): Promise<boolean> {
  // Replicas starting together take turns: the second then finds the slot and starts no epoch.
  await client.query(
    `select pg_advisory_lock(hashtext('pgmcp.change_capture'), hashtext($1))`,
    [slot],
  );
  try {
    return await ensureSlotLocked(client, slot);
  } finally {
    await client.query(
      `select pg_advisory_unlock(hashtext('pgmcp.change_capture'), hashtext($1))`,
      [slot],
    );
  }
}

async function ensureSlotLocked(
  client: pg.Client,
  slot: string,
): Promise<boolean> {
  const { rows } = await client.query<{
    found: boolean;
    lost: boolean;
    pending: boolean;
  }>(
    `select s.slot_name is not null as found, coalesce(s.wal_status = 'lost', false) as lost,
            c.slot_pending as pending
       from pgmcp.change_capture c
       left join pg_replication_slots s on s.slot_name = $1`,
    [slot],
  );
  const state = rows[0];
  if (state?.found === true && !state.lost) {
    // Created by a run that crashed before finishing: its epoch was never started after it.
    if (!state.pending) return false;
    await client.query('select pgmcp.finish_slot_creation()');
    return true;
  }
  // Marked before the create, so that a crash before the epoch starts is finished on the next run.
  await client.query('select pgmcp.begin_slot_creation()');
  if (state?.found === true) await dropSlot(client, slot);
  try {
    await client.query(
      `select pg_create_logical_replication_slot($1, 'pgoutput')`,
      [slot],
    );
  } catch (error) {
    // A replica of a version without the lock created it first and starts the epoch itself: the
    // mark set here is taken back, else a later check would start another epoch (a needless
    // resync) while that replica reads the slot.
    if ((error as { code?: string }).code === '42710') {
      await client.query(
        'update pgmcp.change_capture set slot_pending = false',
      );
      return false;
    }
    throw error;
  }
  await client.query('select pgmcp.finish_slot_creation()');
  return true;
}

/**
 * Start a new capture epoch (changes may be missing from the log: every stream resyncs, older
 * changes_since tokens are refused) and wake the listeners with it, as a logged batch does.
 */
export async function beginCaptureEpoch(client: pg.ClientBase): Promise<void> {
  await client.query(
    `select pg_notify('pgmcp_changes', json_build_object('epoch', pgmcp.begin_capture_epoch())::text)`,
  );
}

/** Drop the slot, ending the session that reads it first; false when it was already gone. */
export async function dropSlot(
  client: pg.Client,
  slot: string,
): Promise<boolean> {
  await client.query(
    `select pg_terminate_backend(active_pid) from pg_replication_slots
      where slot_name = $1 and active_pid is not null`,
    [slot],
  );
  for (let attempt = 0; ; attempt += 1) {
    try {
      const { rowCount } = await client.query(
        `select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = $1`,
        [slot],
      );
      return (rowCount ?? 0) > 0;
    } catch (error) {
      // 55006: the terminated reader has not let go yet.
      if ((error as { code?: string }).code !== '55006' || attempt >= 50)
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * How much WAL the slot holds back from the position decoding restarts at (`retained`), and how
 * much of it its reader has not confirmed (`unconfirmed`); null: no such slot, or it holds none it
 * can still use. The two differ by what a transaction still open when its reader confirmed keeps:
 * decoding restarts at that transaction's start.
 */
export async function slotRetainedBytes(
  client: pg.Client,
  slot: string,
): Promise<{
  exists: boolean;
  retained: number | null;
  unconfirmed: number | null;
  lost: boolean;
}> {
  const { rows } = await client.query<{
    retained: string | null;
    unconfirmed: string | null;
    wal_status: string | null;
  }>(
    `select (pg_current_wal_lsn() - restart_lsn)::bigint::text as retained,
            (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint::text as unconfirmed, wal_status
       from pg_replication_slots where slot_name = $1`,
    [slot],
  );
  const row = rows[0];
  if (row === undefined)
    return { exists: false, retained: null, unconfirmed: null, lost: false };
  return {
    exists: true,
    retained: row.retained === null ? null : Number(row.retained),
    unconfirmed: row.unconfirmed === null ? null : Number(row.unconfirmed),
    lost: row.wal_status === 'lost',
  };
}
