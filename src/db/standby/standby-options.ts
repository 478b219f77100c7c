// What a database's standbys are configured with (config file "standbys", docs/databases.md
// "Standbys"): their URLs and the bounds that decide when a read leaves them for the primary.

/** A database's streaming standbys and when reads may use them. */
export interface StandbyOptions {
  /** postgres:// URLs of hot standbys streaming from this database. */
  readonly urls: readonly string[];
  /** A standby behind the primary for longer than this is not read from. */
  readonly maxLagMs: number;
  /** A standby more WAL bytes behind the primary than this is not read from; undefined: no bound. */
  readonly maxLagBytes: number | undefined;
  /**
   * After a change notification, how long a read waits for a standby to replay past the change
   * before it goes to the primary.
   */
  readonly waitMs: number;
  /** How often each standby's replay position and the primary's WAL position are read. */
  readonly pollMs: number;
  /** With no standby up and within the lag bounds: read from the primary, or refuse (UNAVAILABLE). */
  readonly whenUnavailable: 'primary' | 'fail';
  /**
   * Whether writes, LISTEN and the WAL slot follow a standby that was promoted (follow, the
   * default), or stay on the configured primary's URL (off: DNS or a virtual IP follows it).
   */
  readonly failover?: 'follow' | 'off';
  /** The database's name in metrics and logs; default "main". */
  readonly database?: string;
  /** A URL safe to log (its password hidden); default: host and port only. */
  readonly redact?: (url: string) => string;
  /** How often the primary is checked when failover follows it; default 1000. */
  readonly failoverCheckMs?: number;
  /** Where a standby's change of state is told (once per change); `up`: it takes reads again. */
  readonly log: (message: string, up: boolean) => void;
}

/** Which server answered a read: the primary, or a standby by its host and port. */
export interface ReadServer {
  readonly kind: 'primary' | 'standby';
  /** "primary", or the standby's host:port (never its credentials). */
  readonly name: string;
}
