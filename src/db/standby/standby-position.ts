// A standby's position: its check, bounded in time (standby-set.ts polls each standby with it:
// whether it is still in recovery, how far it has replayed, its WAL page size), and whether it
// has replayed past a floor.
import type pg from 'pg';
import { withTimeout } from '../connection/time-bound.js';

const POSITION = {
  name: 'pgmcp_standby_position',
  text: `select pg_is_in_recovery() as recovery,
                (coalesce(pg_last_wal_replay_lsn(), '0/0') - '0/0'::pg_lsn)::text as replay,
                current_setting('wal_block_size')::int as block_size`,
};

/** What the check reads. */
export interface StandbyPosition {
  readonly recovery: boolean;
  readonly replay: string;
  readonly block_size: number;
}

/** The least time a standby has to answer its position check before it is down. */
export const CHECK_ANSWER_MS = 5000;

/**
 * The standby's position, or a failure when it does not answer within `boundMs`: a standby gone
 * silent without a reset (a host lost, packets dropped) is down within it, and the poll that asks
 * every standby goes on. Its check stays on its connection until the standby answers or TCP gives
 * up; no other is started meanwhile, so a silent standby holds one connection.
 */
export async function askPosition(
  standby: { readonly pool: pg.Pool; checking: Promise<void> | undefined },
  boundMs: number,
): Promise<StandbyPosition> {
  if (standby.checking !== undefined)
    throw new Error('its last position check has not been answered');
  const asked = standby.pool.query<StandbyPosition>(POSITION);
  const checking = asked.then(
    () => undefined,
    () => undefined,
  );
  standby.checking = checking;
  void checking.then(() => {
    if (standby.checking === checking) standby.checking = undefined;
  });
  const { rows } = await withTimeout(
    asked,
    boundMs,
    `no answer within ${boundMs} ms`,
  );
  if (rows[0] === undefined) throw new Error('no row');
  return rows[0];
}

/** The long WAL page header's size: the most a page's first record starts past the page. */
const PAGE_HEADER_BYTES = 40n;

/** Whether `standby` has replayed past `floor` (a position inside a page header counts as its page's start). */
export function caughtUp(
  standby: { readonly replayLsn: bigint; readonly blockSize: bigint },
  floor: bigint,
): boolean {
  const { replayLsn, blockSize } = standby;
  if (replayLsn >= floor) return true;
  return replayLsn % blockSize === 0n && floor - replayLsn <= PAGE_HEADER_BYTES;
}

/** Why a poll failed, without anything a connection string holds. */
export function reasonOf(error: unknown): string {
  const { code, message } = (error ?? {}) as {
    code?: unknown;
    message?: unknown;
  };
  const text = typeof message === 'string' ? message : String(error);
  return typeof code === 'string' ? `${code}: ${text}` : text;
}
