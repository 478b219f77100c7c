// Which server is a database's primary now (issue 36 point 4): the configured primary, or the
// standby an orchestrator promoted when the primary was lost. New connections for writes, LISTEN
// and the WAL slot go to the current target; a switch is told to whoever follows it.
import pg from 'pg';
import { METRICS } from '../../observability/index.js';
import { replicaApplicationName } from '../connection/application-name.js';

/** What the target follows, and where it tells of a move. */
export interface PrimaryTargetOptions {
  /** The configured primary first, then the standbys: the servers a primary may move to. */
  readonly candidates: readonly string[];
  /** The metrics' database label. */
  readonly database: string;
  /** How often the current target is checked; a failed connection checks it at once. */
  readonly checkMs: number;
  /** A candidate that does not answer within this long is taken for unreachable. */
  readonly probeTimeoutMs: number;
  /** A URL safe to print (no password). */
  readonly redact: (url: string) => string;
  /** Where a move is told, once per move. */
  readonly log: (message: string) => void;
}

/** What a probe found: unreachable, or in recovery or not, and the timeline it writes WAL on. */
interface Probe {
  readonly url: string;
  readonly reachable: boolean;
  readonly writable: boolean;
  readonly timeline: number;
}

// The timeline is read from the WAL file being written (as db/own-tables/changes.ts does):
// pg_control_checkpoint() reports the new timeline only after the checkpoint that follows a
// promotion, so a promoted standby and its returning old primary could look alike until then.
const PROBE = `select pg_is_in_recovery() as recovery,
  case when pg_is_in_recovery() then 0
       else ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::integer
  end as timeline`;

/**
 * The current primary of one database. A target that is unreachable or in recovery makes it probe
 * every candidate and move to the writable one on the highest timeline, never to one on a lower
 * timeline than the target was seen on (an old primary started again after a failover). With no
 * writable candidate it stays and keeps checking; a reachable, writable target is never left.
 */
export class PrimaryTarget {
  readonly #options: PrimaryTargetOptions;
  #url: string;
  /** The highest timeline the current target was seen writing on. */
  #timeline = 0;
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;
  /** One session to the current target for the timer's checks, rather than one per check. */
  #session: Promise<pg.Client> | undefined;
  #closed = false;
  readonly #listeners = new Set<(from: string, to: string) => void>();

  constructor(options: PrimaryTargetOptions) {
    if (options.candidates[0] === undefined)
      throw new Error('a primary target needs the configured primary');
    this.#options = options;
    this.#url = options.candidates[0];
    this.#gauge();
  }

  /** The URL new connections to the primary use. */
  get url(): string {
    return this.#url;
  }

  /**
   * Survey every candidate now, then check the target every checkMs. A process that starts after a
   * failover begins at the configured primary, which may be the old one started again writable:
   * the survey moves it to the writable candidate on the highest timeline, as a running process
   * would have moved.
   */
  start(): void {
    this.#checking = this.#survey().finally(() => {
      this.#checking = undefined;
    });
    this.#timer = setInterval(() => void this.check(), this.#options.checkMs);
    this.#timer.unref();
  }

  /**
   * Check the target, and move when it is lost; one check at a time, so the connection failures
   * of a lost server (every pooled session fails at once) start one check, not one each.
   */
  check(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#checking ??= this.#checkOnce().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  /** Call `listener` after every move, with the old and the new URL; returns its removal. */
  onMove(listener: (from: string, to: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#checking;
    this.#dropSession();
    for (const url of new Set(this.#options.candidates))
      METRICS.primaryCandidate.remove({
        database: this.#options.database,
        server: serverLabel(url),
      });
  }

  /** Every candidate at once; the writable one on the highest timeline, the current on a tie. */
  async #survey(): Promise<void> {
    const current = await this.#probeCurrent();
    const others = await this.#probeOthers();
    const best = [current, ...others]
      .filter((found) => found.writable)
      .sort((a, b) => b.timeline - a.timeline)[0];
    if (best === undefined || this.#closed) return;
    if (best.url === this.#url || best.timeline === current.timeline)
      this.#timeline = Math.max(this.#timeline, current.timeline);
    else this.#move(best);
  }

  async #probeOthers(): Promise<Probe[]> {
    return Promise.all(
      this.#options.candidates
        .filter((url) => url !== this.#url)
        .map((url) => probe(url, this.#options.probeTimeoutMs)),
    );
  }

  async #checkOnce(): Promise<void> {
    const current = await this.#probeCurrent();
    if (current.writable) {
      this.#timeline = Math.max(this.#timeline, current.timeline);
      return;
    }
    const others = await this.#probeOthers();
    const best = others
      .filter((found) => found.writable && found.timeline >= this.#timeline)
      .sort((a, b) => b.timeline - a.timeline)[0];
    if (best === undefined || this.#closed) return;
    this.#move(best);
  }

  /** Ask the current target on the kept session; a failure drops it, and the next check opens one. */
  async #probeCurrent(): Promise<Probe> {
    const url = this.#url;
    try {
      this.#session ??= connectProbe(url, this.#options.probeTimeoutMs);
      return { url, reachable: true, ...(await ask(await this.#session)) };
    } catch {
      this.#dropSession();
      return { url, reachable: false, writable: false, timeline: 0 };
    }
  }

  #dropSession(): void {
    const session = this.#session;
    this.#session = undefined;
    void session?.then(
      (client) => client.end().catch(() => undefined),
      () => undefined,
    );
  }

  #move(to: Probe): void {
    this.#dropSession();
    const from = this.#url;
    this.#url = to.url;
    this.#timeline = to.timeline;
    METRICS.primarySwitches.inc({ database: this.#options.database });
    this.#gauge();
    const { redact } = this.#options;
    this.#options.log(
      `primary moved from ${redact(from)} to ${redact(to.url)} (timeline ${to.timeline})`,
    );
    // One follower failing must not keep the others from moving, nor escape as a rejection.
    for (const listener of this.#listeners)
      try {
        listener(from, to.url);
      } catch (error) {
        this.#options.log(
          `following the primary to ${redact(to.url)} failed for one connection (${error instanceof Error ? error.message : String(error)})`,
        );
      }
  }

  #gauge(): void {
    for (const url of new Set(this.#options.candidates))
      METRICS.primaryCandidate.set(
        { database: this.#options.database, server: serverLabel(url) },
        url === this.#url ? 1 : 0,
      );
  }
}

/** Whether `url` answers, whether it is in recovery, and its timeline; never throws. */
async function probe(url: string, timeoutMs: number): Promise<Probe> {
  let client: pg.Client | undefined;
  try {
    client = await connectProbe(url, timeoutMs);
    return { url, reachable: true, ...(await ask(client)) };
  } catch {
    return { url, reachable: false, writable: false, timeline: 0 };
  } finally {
    await client?.end().catch(() => undefined);
  }
}

/** A session for probes: it gives up on a server that does not answer within `timeoutMs`. */
async function connectProbe(
  url: string,
  timeoutMs: number,
): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    // A server that accepts the connection but never answers is as lost as one that refuses it.
    query_timeout: timeoutMs,
    fallback_application_name: replicaApplicationName('pgmcp-failover'),
  });
  // A session lost between checks fails the next check's query, which drops it.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return client;
}

/** Whether the server takes writes, and the timeline it writes WAL on (0 in recovery). */
async function ask(
  client: pg.Client,
): Promise<{ writable: boolean; timeline: number }> {
  const { rows } = await client.query<{ recovery: boolean; timeline: number }>(
    PROBE,
  );
  return {
    writable: rows[0]?.recovery === false,
    timeline: rows[0]?.timeline ?? 0,
  };
}

/** host:port of a postgres:// URL, without user or password (the standby metrics' labels). */
export function serverLabel(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}`;
  } catch {
    return 'server';
  }
}
