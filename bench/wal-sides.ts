// The WAL bench's three sides (bench/wal.ts): nothing reading the WAL, an inert pgoutput consumer,
// pgmcp's WAL source; each run around one round of writes, with what its readers cost meanwhile.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { startWalCapture, type DatabaseHandle } from '../src/db/index.js';
import {
  openReplicationStream,
  WAL_ROW_LIMITS,
} from '../src/db/wal/replication-stream.js';

export const INERT_SLOT = 'bench_inert';
export const INERT_PUBLICATION = 'bench_inert';
// /proc/<pid>/stat counts CPU time in clock ticks (sysconf(_SC_CLK_TCK), 100 on Linux).
const TICK_MS = 10;

export type Side = 'none' | 'inert' | 'capture';

/** One side's round: the writers' rate, and what reading the WAL cost meanwhile. */
export interface SideRound {
  readonly perSecond: number;
  /**
   * CPU milliseconds per 1,000 updates, from the writes' start until the reader confirmed the
   * last of them: its walsender backend, its log session's backend (pgmcp's source only), this
   * Node process (which decodes and logs).
   */
  readonly cpuPerThousand: {
    readonly walsender: number;
    readonly log: number;
    readonly node: number;
  };
  /** Milliseconds after the writes ended until the slot was confirmed past them. */
  readonly drainMs: number;
  /** pgmcp's source: the batches it logged (one NOTIFY each), and their rows. */
  readonly batches: number;
  readonly rowsLogged: number;
}

/** What a reader is while the writers run: the backends to watch and how to stop it. */
interface Reader {
  readonly slot: string | undefined;
  readonly logPids: readonly number[];
  stop(): Promise<void>;
}

/** Run one round of `write` with a side reading the WAL (or none); `withCapture` for the latency. */
export function walSides(
  db: DatabaseHandle,
  url: string,
): {
  run(side: Side, write: () => Promise<number>): Promise<SideRound>;
  withCapture<T>(work: () => Promise<T>): Promise<T>;
} {
  const sql = new pg.Client({ connectionString: url });
  const connected = sql.connect();
  const startReader = (side: Side): Promise<Reader> => {
    if (side === 'capture') return startCapture(db, sql);
    if (side === 'inert') return startInert(db, sql);
    return Promise.resolve({
      slot: undefined,
      logPids: [],
      stop: () => Promise.resolve(),
    });
  };
  return {
    async run(side, write) {
      await connected;
      const reader = await startReader(side);
      try {
        return await measureRound(sql, reader, write);
      } finally {
        await reader.stop();
      }
    },
    async withCapture(work) {
      await connected;
      const reader = await startCapture(db, sql);
      try {
        return await work();
      } finally {
        await reader.stop();
        await sql.end();
      }
    },
  };
}

/** pgmcp's WAL source, reading its slot, with its log session. */
async function startCapture(
  db: DatabaseHandle,
  sql: pg.Client,
): Promise<Reader> {
  const capture = await startWalCapture({
    db,
    name: 'bench',
    slotMaxBytes: 2 ** 40,
    log: () => undefined,
    warn: () => undefined,
    retryMs: 100,
  });
  while (!capture.consuming) await sleep(20);
  await activePid(sql, capture.slot);
  return {
    slot: capture.slot,
    logPids: await logSessions(sql),
    async stop() {
      await capture.stop();
      // A fresh slot each round: what the other sides' rounds wrote is no backlog for this one.
      await freshSlot(sql, capture.slot, false);
    },
  };
}

/** The inert consumer: pgmcp's stream reader with a hand-over that does nothing, on a new slot. */
async function startInert(db: DatabaseHandle, sql: pg.Client): Promise<Reader> {
  await freshSlot(sql, INERT_SLOT, true);
  const stream = openReplicationStream({
    session: db.sessionConfig('bench-inert'),
    slot: INERT_SLOT,
    publication: INERT_PUBLICATION,
    ...WAL_ROW_LIMITS,
    onTransactions: () => Promise.resolve(),
  });
  await activePid(sql, INERT_SLOT);
  return { slot: INERT_SLOT, logPids: [], stop: () => stream.stop() };
}

/** One round of writes under `reader`, then until its slot is confirmed past them. */
async function measureRound(
  sql: pg.Client,
  reader: Reader,
  write: () => Promise<number>,
): Promise<SideRound> {
  const walsender =
    reader.slot === undefined ? undefined : await activePid(sql, reader.slot);
  const pids = [
    ...(walsender === undefined ? [] : [walsender]),
    ...reader.logPids,
  ];
  const before = new Map(pids.map((pid) => [pid, ticks(pid)]));
  const updatesBefore = await updatesSoFar(sql);
  const batches = await countBatches(sql);
  const nodeBefore = process.cpuUsage();
  const perSecond = await write();
  const ended = performance.now();
  if (reader.slot !== undefined) await confirmedPast(sql, reader.slot);
  const drainMs = performance.now() - ended;
  const node = process.cpuUsage(nodeBefore);
  const heard = await batches.stop();
  // Each update adds 1 to one row's v: the sum counts the committed ones exactly.
  const perThousand = 1000 / ((await updatesSoFar(sql)) - updatesBefore);
  const spent = (pid: number) =>
    (ticks(pid) - (before.get(pid) ?? 0)) * TICK_MS * perThousand;
  return {
    perSecond,
    cpuPerThousand: {
      walsender: walsender === undefined ? 0 : spent(walsender),
      log: reader.logPids.reduce((sum, pid) => sum + spent(pid), 0),
      node: ((node.user + node.system) / 1000) * perThousand,
    },
    drainMs,
    batches: heard.batches,
    rowsLogged: heard.rows,
  };
}

async function updatesSoFar(sql: pg.Client): Promise<number> {
  const { rows } = await sql.query<{ total: string }>(
    'select sum(v)::text as total from bench.items',
  );
  return Number(rows[0]?.total ?? 0);
}

/** Listen to the source's NOTIFY (one per logged batch, with its row count) until stop(). */
async function countBatches(
  sql: pg.Client,
): Promise<{ stop(): Promise<{ batches: number; rows: number }> }> {
  const heard = { batches: 0, rows: 0 };
  const listener = (message: pg.Notification) => {
    if (message.channel !== 'pgmcp_changes') return;
    heard.batches += 1;
    heard.rows +=
      (JSON.parse(message.payload ?? '{}') as { rows?: number }).rows ?? 0;
  };
  sql.on('notification', listener);
  await sql.query('listen pgmcp_changes');
  return {
    async stop() {
      await sql.query('unlisten pgmcp_changes');
      sql.off('notification', listener);
      return heard;
    },
  };
}

/** The backend reading `slot` once it reads it. */
async function activePid(sql: pg.Client, slot: string): Promise<number> {
  for (;;) {
    const { rows } = await sql.query<{ pid: number | null }>(
      'select active_pid as pid from pg_replication_slots where slot_name = $1',
      [slot],
    );
    const pid = rows[0]?.pid;
    if (pid !== undefined && pid !== null) return pid;
    await sleep(20);
  }
}

/** pgmcp's source's own sessions in this database (its log session): every pgmcp-admin backend. */
async function logSessions(sql: pg.Client): Promise<number[]> {
  const { rows } = await sql.query<{ pid: number }>(
    `select pid from pg_stat_activity
      where datname = current_database() and application_name like 'pgmcp-admin/%'`,
  );
  return rows.map((row) => row.pid);
}

/** Until `slot` is confirmed past everything written so far. */
async function confirmedPast(sql: pg.Client, slot: string): Promise<void> {
  const { rows } = await sql.query<{ lsn: string }>(
    'select pg_current_wal_lsn()::text as lsn',
  );
  const target = rows[0]?.lsn ?? '0/0';
  for (;;) {
    const { rows: done } = await sql.query<{ past: boolean }>(
      `select confirmed_flush_lsn >= $2::pg_lsn as past
         from pg_replication_slots where slot_name = $1`,
      [slot, target],
    );
    if (done[0]?.past !== false) return;
    await sleep(10);
  }
}

/** Drop `slot` if it exists (once its stopped reader let go), and create it again when `create`. */
async function freshSlot(
  sql: pg.Client,
  slot: string,
  create: boolean,
): Promise<void> {
  for (;;) {
    const { rows } = await sql.query<{ active: boolean }>(
      'select active from pg_replication_slots where slot_name = $1',
      [slot],
    );
    if (rows[0] === undefined) break;
    if (!rows[0].active) {
      await sql.query('select pg_drop_replication_slot($1)', [slot]);
      break;
    }
    await sleep(20);
  }
  if (create)
    await sql.query(
      `select pg_create_logical_replication_slot($1, 'pgoutput')`,
      [slot],
    );
}

/** utime + stime of process `pid` in clock ticks (0 once it is gone). */
function ticks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
