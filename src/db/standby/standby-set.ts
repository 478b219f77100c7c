// A database's hot standbys (docs/databases.md "Standbys"): their pools, how far each has replayed,
// and which one a read may use. A read goes to a standby that is up, within the lag bounds, and
// past the floor: the primary's WAL insert position when the change feed last read changes, so a
// read that follows a notification sees the change it was told of (issue 36 point 1).
import type pg from 'pg';
import { ProtocolError } from '../../errors.js';
import { METRICS } from '../../observability/index.js';
import { serverLabel } from './primary-target.js';
import type { StandbyOptions } from './standby-options.js';
import {
  askPosition,
  caughtUp,
  CHECK_ANSWER_MS,
  reasonOf,
} from './standby-position.js';

/** up: reads may go to it; the others send reads to the primary (or refuse them). */
export type StandbyState = 'starting' | 'up' | 'lagging' | 'down' | 'promoted';

/** One standby: its pool and what the last poll found. */
export interface Standby {
  /** host:port, for logs, metrics and results (never the credentials). */
  readonly label: string;
  readonly pool: pg.Pool;
  state: StandbyState;
  /** pg_last_wal_replay_lsn() as a byte position. */
  replayLsn: bigint;
  /** The WAL page size (wal_block_size): a record never ends inside a page header. */
  blockSize: bigint;
  lagMs: number;
  lagBytes: number;
  refreshing: Promise<void> | undefined;
  /** Its position check under way, until the standby answers it (or the connection ends). */
  checking: Promise<void> | undefined;
}

/**
 * Why a read on a standby failed: its connection lost (the standby is down until a poll finds it),
 * another server fault, or a read the standby cannot run (always retried on the primary).
 */
export interface StandbyFault {
  readonly why: string;
  readonly connectionLost: boolean;
  readonly unsuitable: boolean;
  /** Unsuitable for this role (its key): its reads skip the standby for UNSUITABLE_MS. */
  readonly role?: string;
}

/**
 * The floor of a database's standbys: the change feed raises it to the primary's WAL position as it
 * reads changes, and no read goes to a standby that has not replayed past it.
 */
export interface ReadFloor {
  /**
   * Raise the floor to `lsn`, read on the primary when `moves` (below) was `seenAt`: a position
   * read on a former primary (the read began before a move) is not one the standbys will pass.
   */
  raiseFloor(lsn: bigint, seenAt?: number): void;
  /** How many times the primary has moved. */
  readonly moves: number;
}

/** How a StandbySet reaches the servers: a pool per standby, the primary's WAL position. */
export interface StandbyServers {
  readonly poolFor: (url: string) => pg.Pool;
  readonly primaryLsn: () => Promise<bigint>;
}

const REPLAY = {
  name: 'pgmcp_standby_replay',
  text: `select (coalesce(pg_last_wal_replay_lsn(), '0/0') - '0/0'::pg_lsn)::text as replay`,
};

/** How often a read waiting for a standby to pass the floor asks for its replay position again. */
const WAIT_STEP_MS = 10;
/** Primary WAL positions kept for measuring lag in time, at most. */
const MAX_SAMPLES = 1000;
/** Distinct reads a standby could not run that are remembered as told, at most. */
const MAX_TOLD = 100;
/**
 * How long a standby is skipped for a role it cannot serve (its stored functions missing): `pgmcp
 * role grant` runs in another process, and what it makes reaches the standby by replication, so
 * nothing here hears of it; the standby is asked again after this.
 */
const UNSUITABLE_MS = 30_000;

/** The standbys of one database; made by createDatabase, closed with it. */
export class StandbySet implements ReadFloor {
  readonly #options: StandbyOptions;
  readonly #servers: StandbyServers;
  readonly #standbys: Standby[];
  /** The primary's WAL positions, oldest first, and when each was read: lag in time. */
  readonly #samples: { at: number; lsn: bigint }[] = [];
  #floor = 0n;
  /** Moves of the primary so far: a poll that began before one keeps no position of the former. */
  #epoch = 0;
  #next = 0;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #firstPoll: Promise<void> | undefined;
  /** Reads a standby could not run, told once each (MAX_TOLD of them, the newest). */
  readonly #told = new Set<string>();
  /** Standby label and role key → until when that role's reads skip the standby. */
  readonly #unsuitable = new Map<string, number>();

  constructor(options: StandbyOptions, servers: StandbyServers) {
    this.#options = options;
    this.#servers = servers;
    this.#standbys = options.urls.map((url) => ({
      label: serverLabel(url),
      pool: servers.poolFor(url),
      state: 'starting',
      replayLsn: 0n,
      blockSize: 8192n,
      lagMs: 0,
      lagBytes: 0,
      refreshing: undefined,
      checking: undefined,
    }));
  }

  /** Start polling: the first poll decides which standbys are up, and reads wait for it. */
  start(): void {
    this.#firstPoll = this.#poll().finally(() => {
      this.#firstPoll = undefined;
    });
    this.#timer = setInterval(() => void this.#poll(), this.#options.pollMs);
    this.#timer.unref();
  }

  /** Each standby's label and state (tests, logs). */
  get states(): { label: string; state: StandbyState }[] {
    return this.#standbys.map(({ label, state }) => ({ label, state }));
  }

  /** The change feed read changes while the primary's WAL had reached `lsn`: reads must see them. */
  raiseFloor(lsn: bigint, seenAt?: number): void {
    if (seenAt !== undefined && seenAt !== this.#epoch) return;
    if (lsn > this.#floor) this.#floor = lsn;
  }

  get moves(): number {
    return this.#epoch;
  }

  /** The WAL position reads on a standby wait for (tests, logs). */
  get floor(): bigint {
    return this.#floor;
  }

  /**
   * The primary moved to `url`: the floor and the lag samples, positions in the former primary's
   * WAL that the new one may not reach for long, start again; a standby that is the new primary
   * takes no reads from now on, before a poll finds it promoted.
   */
  primaryMoved(url: string): void {
    this.#floor = 0n;
    this.#samples.length = 0;
    this.#epoch += 1;
    for (const [index, standby] of this.#standbys.entries())
      if (this.#options.urls[index] === url)
        this.#enter(standby, 'promoted', 'it is the primary now');
  }

  /**
   * The standby a read goes to, or undefined for the primary. A standby behind the floor is waited
   * for (options.waitMs at most), then the primary answers. With none up and within the lag
   * bounds, whenUnavailable decides: the primary, or UNAVAILABLE.
   */
  async pick(role?: string): Promise<Standby | undefined> {
    if (this.#firstPoll !== undefined) await this.#firstPoll;
    const anyUp = this.#standbys.filter((standby) => standby.state === 'up');
    const up = anyUp.filter((standby) => !this.#skips(standby, role));
    if (up.length === 0 && anyUp.length > 0) {
      // Unsuitable reads go to the primary whatever whenUnavailable says, as failed() sends them.
      METRICS.standbyReads.inc({ server: 'primary', reason: 'unsuitable' });
      return undefined;
    }
    if (up.length === 0)
      return this.#noStandby(
        this.#standbys.some((standby) => standby.state === 'lagging')
          ? 'lagging'
          : 'down',
      );
    const floor = this.#floor;
    const ready = up.filter((standby) => caughtUp(standby, floor));
    if (ready.length > 0) {
      METRICS.standbyReads.inc({ server: 'standby', reason: 'caught_up' });
      this.#next = (this.#next + 1) % ready.length;
      return ready[this.#next];
    }
    const waited = await this.#waitForFloor(up, floor);
    METRICS.standbyReads.inc(
      waited === undefined
        ? { server: 'primary', reason: 'behind_change' }
        : { server: 'standby', reason: 'waited' },
    );
    return waited;
  }

  /**
   * A read on `standby` failed as a server fails (connection lost, recovery conflict): it is down
   * when the connection was lost, until a poll finds it again. Returns whether the read may go to
   * the primary instead (whenUnavailable).
   */
  failed(standby: Standby, fault: StandbyFault): boolean {
    if (fault.unsuitable) {
      if (fault.role !== undefined)
        this.#unsuitable.set(
          `${standby.label}\u0000${fault.role}`,
          performance.now() + UNSUITABLE_MS,
        );
      const told = `${standby.label}: ${fault.why}`;
      if (!this.#told.has(told)) {
        // Messages differ per statement: the oldest is forgotten (and may be told again).
        if (this.#told.size >= MAX_TOLD)
          this.#told.delete(this.#told.values().next().value as string);
        this.#told.add(told);
        this.#options.log(
          `standby ${told}: such reads go to the primary`,
          false,
        );
      }
      METRICS.standbyReads.inc({ server: 'primary', reason: 'unsuitable' });
      return true;
    }
    if (fault.connectionLost) this.#enter(standby, 'down', fault.why);
    const toPrimary = this.#options.whenUnavailable === 'primary';
    METRICS.standbyReads.inc({
      server: toPrimary ? 'primary' : 'none',
      reason: 'failed',
    });
    return toPrimary;
  }

  /** Stop polling and close the standbys' pools. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#polling?.catch(() => undefined);
    await Promise.all(this.#standbys.map((standby) => standby.pool.end()));
  }

  /** Whether `role`'s reads skip `standby` (found unsuitable within UNSUITABLE_MS). */
  #skips(standby: Standby, role: string | undefined): boolean {
    if (role === undefined) return false;
    const key = `${standby.label}\u0000${role}`;
    const until = this.#unsuitable.get(key);
    if (until === undefined) return false;
    if (performance.now() < until) return true;
    this.#unsuitable.delete(key);
    return false;
  }

  #noStandby(reason: 'lagging' | 'down'): undefined {
    if (this.#options.whenUnavailable === 'fail') {
      METRICS.standbyReads.inc({ server: 'none', reason });
      throw new ProtocolError(
        'UNAVAILABLE',
        'No standby is available within the configured lag; try again.',
      );
    }
    METRICS.standbyReads.inc({ server: 'primary', reason });
    return undefined;
  }

  /** Ask the standbys for their replay positions until one passes `floor` or the wait ends. */
  async #waitForFloor(
    up: readonly Standby[],
    floor: bigint,
  ): Promise<Standby | undefined> {
    const deadline = performance.now() + this.#options.waitMs;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      // The timer is cleared once the race is settled: one per step would otherwise stay pending
      // for up to waitMs, piling up while reads wait.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(up.map((standby) => this.#refresh(standby))),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
      const ready = up.find(
        (standby) => standby.state === 'up' && caughtUp(standby, floor),
      );
      if (ready !== undefined) return ready;
      await sleep(Math.min(WAIT_STEP_MS, deadline - performance.now()));
    }
  }

  /** Read `standby`'s replay position again; one query at a time per standby, shared by waiters. */
  #refresh(standby: Standby): Promise<void> {
    standby.refreshing ??= standby.pool
      .query<{ replay: string }>(REPLAY)
      .then(({ rows }) => {
        const replay = BigInt(rows[0]?.replay ?? '0');
        if (replay > standby.replayLsn) standby.replayLsn = replay;
      })
      .catch(() => undefined)
      .finally(() => {
        standby.refreshing = undefined;
      });
    return standby.refreshing;
  }

  #poll(): Promise<void> {
    this.#polling ??= this.#pollOnce().finally(() => {
      this.#polling = undefined;
    });
    return this.#polling;
  }

  /** The primary's WAL position, then each standby's: state, replay position, lag. */
  async #pollOnce(): Promise<void> {
    const epoch = this.#epoch;
    const primary = await this.#servers.primaryLsn().catch(() => undefined);
    if (epoch !== this.#epoch) return;
    if (primary !== undefined) {
      this.#samples.push({ at: Date.now(), lsn: primary });
      if (this.#samples.length > MAX_SAMPLES) this.#samples.splice(1, 1);
    }
    await Promise.all(
      this.#standbys.map((standby) => this.#check(standby, primary)),
    );
    const replayed = this.#standbys
      .filter((standby) => standby.state !== 'promoted')
      .map((standby) => standby.replayLsn);
    const least = replayed.reduce((a, b) => (b < a ? b : a), primary ?? 0n);
    while (this.#samples.length > 1 && (this.#samples[0]?.lsn ?? 0n) <= least)
      this.#samples.shift();
  }

  async #check(standby: Standby, primary: bigint | undefined): Promise<void> {
    let row: { recovery: boolean; replay: string; block_size: number };
    try {
      row = await askPosition(
        standby,
        Math.max(CHECK_ANSWER_MS, 4 * this.#options.pollMs),
      );
    } catch (error) {
      this.#enter(standby, 'down', reasonOf(error));
      return;
    }
    if (!row.recovery) {
      this.#enter(standby, 'promoted', 'it is no longer in recovery');
      return;
    }
    standby.replayLsn = BigInt(row.replay);
    standby.blockSize = BigInt(row.block_size);
    if (primary !== undefined)
      standby.lagBytes = Math.max(0, Number(primary - standby.replayLsn));
    const behind = this.#samples.find(
      (sample) => sample.lsn > standby.replayLsn,
    );
    standby.lagMs = behind === undefined ? 0 : Date.now() - behind.at;
    METRICS.standbyLagBytes.set({ standby: standby.label }, standby.lagBytes);
    METRICS.standbyLagSeconds.set(
      { standby: standby.label },
      standby.lagMs / 1000,
    );
    const { maxLagMs, maxLagBytes } = this.#options;
    const lagging =
      standby.lagMs > maxLagMs ||
      (maxLagBytes !== undefined && standby.lagBytes > maxLagBytes);
    this.#enter(
      standby,
      lagging ? 'lagging' : 'up',
      `${standby.lagMs} ms and ${standby.lagBytes} bytes behind the primary`,
    );
  }

  /** Move `standby` to `state`; a change is logged once and counted. */
  #enter(standby: Standby, state: StandbyState, why: string): void {
    METRICS.standbyUp.set({ standby: standby.label }, state === 'up' ? 1 : 0);
    if (standby.state === state) return;
    standby.state = state;
    METRICS.standbyTransitions.inc({ standby: standby.label, state });
    const reads =
      state === 'up'
        ? 'reads go to it'
        : this.#options.whenUnavailable === 'primary'
          ? 'its reads go to the primary'
          : 'reads are refused unless another standby can answer';
    this.#options.log(
      `standby ${standby.label} is ${state} (${why}): ${reads}`,
      state === 'up',
    );
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
