// The WAL source's slot must not hold WAL without bound while its reader is gone or stuck: every
// replica checks it (docs/operations.md "Choosing a change source"), drops it past
// PGMCP_WAL_SLOT_MAX_BYTES of WAL its reader has not confirmed, and warns first.
import pg from 'pg';
import { METRICS } from '../../observability/index.js';
import { withTimeout } from '../connection/time-bound.js';
import {
  beginCaptureEpoch,
  dropSlot,
  slotRetainedBytes,
} from './capture-slot.js';
import type { DatabaseHandle } from '../pool.js';

/** What the checks need of the WAL source's options (wal-capture.ts). */
export interface SlotWatchOptions {
  readonly db: Pick<DatabaseHandle, 'sessionConfig'>;
  /** The database's name in logs and metrics. */
  readonly name: string;
  readonly slotMaxBytes: number;
  /** How long a check may take to connect, and each of its statements (default 10 s). */
  readonly checkTimeoutMs?: number | undefined;
  readonly warn: (line: string) => void;
}

/** What one check leaves for the next: whether the present state was warned of. */
interface WatchState {
  warned: 'half' | 'held' | undefined;
  /** The source stopped: a check still running drops nothing. */
  stopped: boolean;
}

/** The bound's checks: one at a time, a call while one runs shares it; stop() ends them. */
export interface SlotWatch {
  watch(): Promise<void>;
  readonly busy: boolean;
  /** No check after this one drops the slot; resolves once the one running (if any) is over. */
  stop(): Promise<void>;
}

export function createSlotWatch(
  options: SlotWatchOptions,
  slot: string,
): SlotWatch {
  const state: WatchState = { warned: undefined, stopped: false };
  const timeoutMs = options.checkTimeoutMs ?? 10_000;
  let running: Promise<void> | undefined;
  return {
    get busy() {
      return running !== undefined;
    },
    watch() {
      running ??= withTimeout(
        checkSlot(options, { slot, state }),
        CHECK_DEADLINES * timeoutMs,
        `the check did not finish within ${CHECK_DEADLINES * timeoutMs} ms`,
      ).finally(() => {
        running = undefined;
      });
      return running;
    },
    async stop() {
      state.stopped = true;
      await running?.catch(() => undefined);
    },
  };
}

/**
 * A check's deadline, in check timeouts: its connect and its statements are each bounded, but a
 * server that stops answering after the check connected answers neither them nor the goodbye; the
 * check is then given up (its session is left to TCP) and the next tick checks again.
 */
const CHECK_DEADLINES = 3;

/**
 * One check of the slot's bound, on a session of its own that gives up on a server that does not
 * answer (the timer's next tick checks again) rather than wait for ever.
 */
async function checkSlot(
  options: SlotWatchOptions,
  { slot, state }: { slot: string; state: WatchState },
): Promise<void> {
  const timeoutMs = options.checkTimeoutMs ?? 10_000;
  const session = options.db.sessionConfig('pgmcp-wal-check');
  const client = new pg.Client({
    ...session,
    options: `${session.options} -c statement_timeout=${timeoutMs}`,
    connectionTimeoutMillis: timeoutMs,
    // A statement whose answer does not come (the server gone silent) fails here as well.
    query_timeout: timeoutMs,
    keepAliveInitialDelayMillis: timeoutMs,
  });
  // A connection lost after the check is of no consequence; one lost during it fails its query.
  client.on('error', () => undefined);
  try {
    await client.connect();
    const facts = await slotRetainedBytes(client, slot);
    const retained = facts.retained ?? 0;
    METRICS.walSlotRetainedBytes.set({ database: options.name }, retained);
    const unconfirmed = facts.unconfirmed ?? retained;
    if (unconfirmed > options.slotMaxBytes && !state.stopped) {
      await dropPastBound(client, options, { slot, unconfirmed });
      state.warned = undefined;
      return;
    }
    warn(options, state, { slot, retained, unconfirmed });
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Its reader gone or stuck past the bound: the slot is dropped, and a new epoch begins at once
 * (every stream resyncs for what it will not hear), besides the one the next slot starts with.
 */
async function dropPastBound(
  client: pg.Client,
  options: SlotWatchOptions,
  { slot, unconfirmed }: { slot: string; unconfirmed: number },
): Promise<void> {
  if (!(await dropSlot(client, slot))) return;
  METRICS.walSlotDrops.inc();
  await beginCaptureEpoch(client);
  options.warn(
    `live updates: slot ${slot} held ${unconfirmed} bytes of WAL its reader had not confirmed, more than PGMCP_WAL_SLOT_MAX_BYTES (${options.slotMaxBytes}); dropped it: a new one is created, and every stream is told its resources may have changed`,
  );
}

/**
 * Warn once per state: past half the bound of unconfirmed WAL (it will be dropped), or past the
 * bound held only by a transaction still open (its reader is current: not dropped for that, since
 * a new slot could not start before that transaction ends; max_slot_wal_keep_size bounds it).
 */
function warn(
  options: SlotWatchOptions,
  state: WatchState,
  facts: { slot: string; retained: number; unconfirmed: number },
): void {
  const { slot, retained, unconfirmed } = facts;
  const max = options.slotMaxBytes;
  const now =
    unconfirmed > max / 2 ? 'half' : retained > max ? 'held' : undefined;
  if (now !== undefined && now !== state.warned) {
    METRICS.walSlotWarnings.inc();
    options.warn(
      now === 'half'
        ? `live updates: slot ${slot} holds ${unconfirmed} bytes of WAL its reader has not confirmed, over half of PGMCP_WAL_SLOT_MAX_BYTES (${max}); at the limit it is dropped`
        : `live updates: slot ${slot} holds ${retained} bytes of WAL, more than PGMCP_WAL_SLOT_MAX_BYTES (${max}), though its reader is current: a transaction open since before them keeps the position decoding restarts from; the slot is kept (max_slot_wal_keep_size bounds it)`,
    );
  }
  state.warned = now;
}
