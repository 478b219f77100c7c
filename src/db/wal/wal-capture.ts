// The WAL change source (PGMCP_CHANGE_SOURCE=wal): one replica at a time reads the database's
// logical slot and logs each transaction's row changes to pgmcp.changes, which the change feed reads
// as it reads the triggers' rows; every replica watches the slot's bound.
import type pg from 'pg';
import { METRICS } from '../../observability/index.js';
import type { DatabaseHandle } from '../pool.js';
import {
  CHANGE_PUBLICATION,
  ensureSlot,
  slotKeepLimit,
  slotName,
  useChangeSource,
} from './capture-slot.js';
import { logTransactions, TableKeys } from './logged-rows.js';
import {
  openReplicationStream,
  WAL_ROW_LIMITS,
  type DecodedTransaction,
  type ReplicationStream,
} from './replication-stream.js';
import { abortableSleep } from './abortable-sleep.js';
import { createSlotWatch } from './slot-watch.js';

export interface WalCaptureOptions {
  /** The database, on a login with REPLICATION (or a superuser) that owns the exposed tables. */
  readonly db: DatabaseHandle;
  /** Its name in logs and metrics. */
  readonly name: string;
  /** Most WAL the slot may hold back; past it the slot is dropped, and listeners resync. */
  readonly slotMaxBytes: number;
  readonly log: (line: string) => void;
  readonly warn: (line: string) => void;
  /** How often a replica that does not hold the slot tries to take it (default 5 s). */
  readonly retryMs?: number;
  /** How often the slot's retained WAL is checked (default 10 s). */
  readonly watchMs?: number;
  /** How long a check of the slot may take to connect, and each of its statements (default 10 s). */
  readonly checkTimeoutMs?: number;
  /**
   * Most row changes kept of one transaction, and logged in one statement
   * (PGMCP_WAL_MAX_TRANSACTION_ROWS): a larger transaction is logged as a new capture epoch.
   */
  readonly maxTransactionRows?: number;
  /** Most row changes waiting to be logged before the slot is no longer read (PGMCP_WAL_MAX_PENDING_ROWS). */
  readonly maxPendingRows?: number;
}

export interface WalCapture {
  /** The slot this database's changes are read from. */
  readonly slot: string;
  /** This replica reads the slot now. */
  readonly consuming: boolean;
  /** Check the slot's bound now (tests; the timer does it on its own). */
  watch(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Move exposed tables to the publication, check the slot (its bound, a lost one recreated), then
 * keep trying to read it: a slot is read by one connection at a time, so another replica's
 * reader that dies is replaced within `retryMs`.
 */
export async function startWalCapture(
  options: WalCaptureOptions,
): Promise<WalCapture> {
  const admin = await options.db.connectAdmin();
  let slot: string;
  try {
    const moved = await useChangeSource(admin, 'wal');
    if (moved > 0)
      options.log(
        `live updates: ${moved} exposed tables of ${options.name} now publish their changes (${CHANGE_PUBLICATION}) instead of capture triggers`,
      );
    slot = await slotName(admin);
    if ((await slotKeepLimit(admin)) < 0)
      options.warn(
        `live updates: max_slot_wal_keep_size is unbounded in ${options.name}: while no pgmcp runs, slot ${slot} keeps WAL without limit; set it (docs/operations.md "Choosing a change source")`,
      );
  } finally {
    await admin.end();
  }
  const state = { stopped: false, consuming: false };
  const watcher = createSlotWatch(options, slot);
  await watcher
    .watch()
    .catch((error: unknown) =>
      options.warn(
        `live updates: checking slot ${slot} failed (${describe(error)})`,
      ),
    );
  const stopping = new AbortController();
  const reader = consumeSlot(options, { slot, state, signal: stopping.signal });
  const timer = setInterval(() => {
    // A check still running (a slow or unreachable server) is not joined by another session.
    if (watcher.busy) return;
    watcher.watch().catch((error: unknown) => {
      options.warn(
        `live updates: checking slot ${slot} failed (${describe(error)})`,
      );
    });
  }, options.watchMs ?? 10_000);
  timer.unref();
  return {
    slot,
    get consuming() {
      return state.consuming;
    },
    watch: () => watcher.watch(),
    async stop() {
      state.stopped = true;
      clearInterval(timer);
      stopping.abort();
      await Promise.all([reader, watcher.stop()]);
      METRICS.walSlotRetainedBytes.remove({ database: options.name });
    },
  };
}

/** What reading the slot shares: its name, whether it is read now or stopped, the stop signal. */
interface SlotReading {
  readonly slot: string;
  readonly state: { stopped: boolean; consuming: boolean };
  readonly signal: AbortSignal;
}

/** Read the slot until stopped, retrying after every failure or while another replica reads it. */
async function consumeSlot(
  options: WalCaptureOptions,
  { slot, state, signal }: SlotReading,
): Promise<void> {
  let lastProblem: string | undefined;
  while (!state.stopped) {
    let moved = false;
    try {
      moved = await readOnce(options, { slot, state, signal });
    } catch (error) {
      // 55006 (object in use): another replica reads the slot.
      const waiting = (error as { code?: string }).code === '55006';
      const problem = waiting
        ? `slot ${slot} is read by another replica; trying again every ${(options.retryMs ?? 5000) / 1000} s`
        : `reading slot ${slot} failed (${describe(error)}); retrying`;
      // Said once until it changes; a replica waiting for the slot is not a failure.
      if (!state.stopped && problem !== lastProblem)
        (waiting ? options.log : options.warn)(`live updates: ${problem}`);
      lastProblem = problem;
    } finally {
      state.consuming = false;
    }
    // Left for a moved primary: read the slot there now, not after a wait.
    if (!state.stopped && !moved)
      await abortableSleep(options.retryMs ?? 5000, signal);
  }
}

/** Whether the primary moved since this was made, and a promise that resolves when it does. */
interface MoveWatch {
  readonly moved: boolean;
  readonly happened: Promise<void>;
  /** Call `action` on a move (at once if one happened). */
  onMove(action: () => void): void;
  stop(): void;
}

function watchMoves(db: DatabaseHandle): MoveWatch {
  let moved = false;
  let told: () => void = () => undefined;
  const happened = new Promise<void>((resolve) => {
    told = resolve;
  });
  const actions: (() => void)[] = [];
  const unfollow = db.primary?.onMove(() => {
    moved = true;
    told();
    for (const action of actions.splice(0)) action();
  });
  return {
    get moved() {
      return moved;
    },
    happened,
    onMove: (action) => (moved ? action() : void actions.push(action)),
    stop: () => unfollow?.(),
  };
}

/**
 * One connection's life: ensure the slot, stream it, log each transaction before acknowledging.
 * A primary lost without a reset (a black hole) would keep it waiting for ever: a move ends it
 * (true: left for the new primary), and the loop reads the slot there.
 */
async function readOnce(
  options: WalCaptureOptions,
  reading: SlotReading,
): Promise<boolean> {
  const moves = watchMoves(options.db);
  try {
    const connecting = options.db.connectAdmin();
    const writer = await Promise.race([
      connecting,
      moves.happened.then(() => undefined),
    ]);
    if (writer === undefined) {
      // Still connecting to the old primary: that session is ended whenever it opens.
      connecting.then((late) => late.end()).catch(() => undefined);
      return true;
    }
    return await streamSlot(options, { reading, writer, moves });
  } finally {
    moves.stop();
  }
}

/** Stream the slot through `writer` until the stream fails, the reader stops or the primary moves. */
async function streamSlot(
  options: WalCaptureOptions,
  {
    reading: { slot, state, signal },
    writer,
    moves,
  }: { reading: SlotReading; writer: pg.Client; moves: MoveWatch },
): Promise<boolean> {
  let stream: ReplicationStream | undefined;
  const stop = () => void stream?.stop();
  // Both sessions end on a move: a statement the writer waits on fails, and so does the stream.
  moves.onMove(() => {
    stop();
    void writer.end().catch(() => undefined);
  });
  try {
    if (await ensureSlot(writer, slot))
      options.warn(
        `live updates: created slot ${slot} for ${options.name}; changes made while there was none are not in the log, so every stream is told its resources may have changed`,
      );
    stream = openReplicationStream({
      session: options.db.sessionConfig('pgmcp-wal'),
      slot,
      publication: CHANGE_PUBLICATION,
      maxTransactionRows:
        options.maxTransactionRows ?? WAL_ROW_LIMITS.maxTransactionRows,
      maxPendingRows: options.maxPendingRows ?? WAL_ROW_LIMITS.maxPendingRows,
      onTransactions: logBatches(options, writer),
    });
    signal.addEventListener('abort', stop);
    // Stopped or moved while the stream was being opened: before anything could end it.
    if (signal.aborted || moves.moved) stop();
    state.consuming = true;
    await stream.done;
    return moves.moved;
  } catch (error) {
    if (moves.moved) return true;
    throw error;
  } finally {
    signal.removeEventListener('abort', stop);
    const ended = Promise.all([
      stream?.stop(),
      writer.end().catch(() => undefined),
    ]);
    // A moved-from server may never answer a goodbye: not waited for.
    if (!moves.moved) await ended;
  }
}

/**
 * A stream's hand-over: each batch logged through `writer` (a batch with a transaction too large to
 * keep, or a change not named by its key, is logged as a new epoch, and said so).
 */
function logBatches(
  options: WalCaptureOptions,
  writer: pg.Client,
): (transactions: readonly DecodedTransaction[]) => Promise<void> {
  // Per stream: the server numbers its descriptions of tables anew on each connection.
  const keys = new TableKeys();
  const limit = options.maxTransactionRows ?? WAL_ROW_LIMITS.maxTransactionRows;
  // A table left with such an identity is told of once per stream, not with every batch.
  const told = new Set<string>();
  return async function logBatch(transactions) {
    const { logged, unnamed } = await logTransactions(
      writer,
      keys,
      transactions,
    );
    if (logged < 0) return;
    METRICS.walTransactions.inc(transactions.length);
    const overflowed = transactions.some(
      (transaction) => transaction.overflowed === true,
    );
    if (overflowed || unnamed.size > 0)
      METRICS.walResyncs.inc({
        database: options.name,
        reason: overflowed ? 'large_transaction' : 'unnamed_key',
      });
    if (overflowed)
      options.warn(
        `live updates: a transaction in ${options.name} changed more than ${limit} rows (PGMCP_WAL_MAX_TRANSACTION_ROWS); its rows are not logged one by one, and every stream is told its resources may have changed`,
      );
    for (const [table, why] of unnamed) {
      if (told.has(table)) continue;
      told.add(table);
      options.warn(
        `live updates: a change to ${table} in ${options.name} cannot be named by its primary key (${why}); its batch is not logged row by row, and every stream is told its resources may have changed (each such batch, until the table is fixed)`,
      );
    }
  };
}

function describe(error: unknown): string {
  const code =
    typeof error === 'object' && error !== null
      ? (error as { code?: unknown }).code
      : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' ? `${code}: ${message}` : message;
}
