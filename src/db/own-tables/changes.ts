// The change log (migrations/0004_capture_changes.sql): read by listeners in xid-horizon order,
// authorized per role through its row-level security, pruned on a schedule.
import { sql } from 'kysely';
import {
  builder,
  prepare,
  type PreparedQuery,
} from '../connection/prepared.js';
import type { DatabaseHandle } from '../pool.js';

export type ChangeKind = 'created' | 'updated' | 'deleted' | 'schema';

/**
 * One logged change. `uri` is set for stored resources; rows of exposed tables and schema changes
 * have none, and `detail` names what they touched ({schema, table, key} or {schema, table,
 * command, objectType}).
 */
export interface ChangeRow {
  readonly seq: string;
  readonly txid: bigint;
  readonly relation: string;
  readonly uri: string | null;
  readonly kind: ChangeKind;
  readonly detail: unknown;
}

/**
 * Which history of the database a page was read from. Within one history the system identifier
 * and timeline stay and the WAL position only grows; a restore, a failover or a crash that lost
 * commits breaks one of these (or moves transaction ids back below what was read).
 */
export interface DatabaseHistory {
  /** pg_control_system().system_identifier; null where the login may not call it. */
  readonly systemId: string | null;
  /** The timeline WAL is written on (it changes when a standby is promoted). */
  readonly timeline: number;
  /** pg_current_wal_lsn() as a byte position. */
  readonly walLsn: bigint;
  /**
   * The WAL change source's slot epoch (migration 0037): it grows when the slot is created anew,
   * after it was dropped or lost, and changes made meanwhile never reached the log.
   */
  readonly captureEpoch: string;
}

export interface ChangePage {
  /** Every transaction below this id had finished when the page was read. */
  readonly snapshotXmin: bigint;
  readonly history: DatabaseHistory;
  readonly rows: ChangeRow[];
}

/** Where a page starts: after (txid, seq); the start of the horizon when undefined. */
export interface ChangePosition {
  readonly txid: bigint;
  readonly seq: string;
}

interface PageRow {
  system_id: string | null;
  timeline: number;
  wal_lsn: string;
  insert_lsn: string;
  capture_epoch: string;
  snapshot_xmin: string;
  seq: string | null;
  txid: string | null;
  relation: string | null;
  uri: string | null;
  kind: ChangeKind | null;
  detail: unknown;
}

/**
 * One page of changes by transactions at or after `horizon`, in (txid, seq) order after `after`.
 * Runs as the login through pgmcp.read_changes (SECURITY DEFINER): the listener sees the whole log;
 * who may hear of each change is decided later, per role (CHANGE_VISIBILITY).
 */
export async function readChangePage(
  db: DatabaseHandle,
  {
    horizon,
    after,
    limit,
  }: {
    readonly horizon: bigint;
    readonly after: ChangePosition | undefined;
    readonly limit: number;
  },
): Promise<ChangePage> {
  const values = [
    horizon.toString(),
    (after?.txid ?? 0n).toString(),
    after?.seq ?? '0',
    limit,
  ];
  // The primary's moves so far: a position read on a former one raises no floor.
  const moves = db.floor?.moves;
  let rows: PageRow[];
  try {
    ({ rows } = await db.pool.query<PageRow>({
      ...(systemIdDenied.has(db) ? READ_CHANGES : READ_CHANGES_WITH_SYSTEM_ID),
      values,
    }));
  } catch (error) {
    // A cluster may revoke pg_control_system() from PUBLIC; the timeline, WAL position and
    // transaction ids still tell histories apart.
    if (
      (error as { code?: unknown }).code !== '42501' ||
      systemIdDenied.has(db)
    )
      throw error;
    systemIdDenied.add(db);
    ({ rows } = await db.pool.query<PageRow>({ ...READ_CHANGES, values }));
  }
  const first = rows[0];
  if (first === undefined)
    throw new Error('pgmcp.read_changes returned no row');
  // Issue 36 point 1: every change read here committed before this position was taken (the insert
  // position: an asynchronous commit is visible before its WAL is written), so a standby read
  // after the notifications these rows become must have replayed this far.
  if (rows.some((row) => row.seq !== null))
    db.floor?.raiseFloor(BigInt(first.insert_lsn), moves);
  return {
    snapshotXmin: BigInt(first.snapshot_xmin),
    history: {
      systemId: first.system_id,
      timeline: first.timeline,
      walLsn: BigInt(first.wal_lsn),
      captureEpoch: first.capture_epoch,
    },
    rows: rows
      .filter((row) => row.seq !== null)
      .map((row) => ({
        seq: row.seq as string,
        txid: BigInt(row.txid as string),
        relation: row.relation as string,
        uri: row.uri,
        kind: row.kind as ChangeKind,
        detail: row.detail,
      })),
  };
}

/** Databases whose login may not call pg_control_system(). */
const systemIdDenied = new WeakSet<DatabaseHandle>();

// The timeline is the first 8 hex digits of the current WAL file's name (pg_control_checkpoint()
// would report it only after the next checkpoint).
const historyColumns = (systemId: string) =>
  `${systemId} as system_id,
   ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::integer as timeline,
   (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as wal_lsn,
   (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as insert_lsn,
   pgmcp.capture_epoch()::text as capture_epoch`;
const READ_CHANGES_TEXT = (systemId: string) =>
  `select ${historyColumns(systemId)},
          snapshot_xmin::text, seq::text, txid::text, relation, uri, kind, detail
     from pgmcp.read_changes($1::xid8, $2::xid8, $3::bigint, $4::integer)`;
const READ_CHANGES_WITH_SYSTEM_ID = {
  name: 'pgmcp_read_changes',
  text: READ_CHANGES_TEXT(
    '(select system_identifier::text from pg_control_system())',
  ),
};
const READ_CHANGES = {
  name: 'pgmcp_read_changes_without_system_id',
  text: READ_CHANGES_TEXT('null::text'),
};

/** The xmin of a fresh snapshot: where a listener starting now begins. */
export async function currentHorizon(db: DatabaseHandle): Promise<bigint> {
  const { rows } = await db.pool.query<{ xmin: string }>(
    'select pg_snapshot_xmin(pg_current_snapshot())::text as xmin',
  );
  return BigInt(rows[0]?.xmin ?? '0');
}

/** Issue 35: the change log's size on disk (table, indexes, TOAST), a catalog read, not a scan. */
export async function changeLogBytes(db: DatabaseHandle): Promise<number> {
  const { rows } = await db.pool.query<{ bytes: string }>(
    "select pg_total_relation_size('pgmcp.changes')::text as bytes",
  );
  return Number(rows[0]?.bytes ?? 0);
}

/** Delete log rows older than the retention period; returns how many went. */
export async function pruneChanges(
  db: DatabaseHandle,
  retentionSeconds: number,
): Promise<number> {
  const client = await db.pool.connect();
  let broken: Error | undefined;
  try {
    // The pool's sessions default to read-only; pruning is the one write.
    await client.query('begin read write');
    const { rows } = await client.query<{ pruned: string }>(
      'select pgmcp.prune_changes(make_interval(secs => $1)) as pruned',
      [retentionSeconds],
    );
    await client.query('commit');
    return Number(rows[0]?.pruned ?? 0);
  } catch (error) {
    await client.query('rollback').catch((rollbackError: unknown) => {
      broken = rollbackError as Error;
    });
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * Which of `seqs` the request role may hear of: `before` when it could read the resource before
 * the change, `after` when it can read it after, by the resources policy's own test (membership
 * of a role in `readers`), or always for a role that bypasses row-level security (a superuser or
 * BYPASSRLS login reads every resource, so it hears of every change). Rows of exposed tables and
 * schema changes carry no readers: the log's second policy (pgmcp.change_visible) shows them to a
 * role exactly when it may hear of them, so both flags are set. Run as the role
 * (runRequestQuery); the log's policies hide the rest.
 */
export const CHANGE_VISIBILITY = prepare(
  'pgmcp_change_visibility',
  (args: { seqs: readonly string[] }) =>
    builder
      .selectFrom([
        'pgmcp.changes as c',
        builder
          .selectNoFrom([
            sql<string[]>`pgmcp.member_roles()`.as('roles'),
            // pg_roles is not among db/connection/schema.ts's tables.
            sql<boolean>`(select rolsuper or rolbypassrls from pg_roles where rolname = current_user)`.as(
              'bypass',
            ),
          ])
          .as('r'),
      ])
      .select((eb) => {
        const unlabelled = eb.and([
          eb('c.readers_before', 'is', null),
          eb('c.readers_after', 'is', null),
        ]);
        const visible = (readers: 'c.readers_before' | 'c.readers_after') =>
          eb
            .or([
              eb.ref('r.bypass'),
              eb.fn.coalesce(eb(readers, '&&', eb.ref('r.roles')), unlabelled),
            ])
            .$castTo<boolean>();
        return [
          eb.cast<string>('c.seq', 'text').as('seq'),
          visible('c.readers_before').as('before'),
          visible('c.readers_after').as('after'),
          // A stored resource marked sensitive (migration 0016): heard of only after consent.
          eb
            .exists(
              eb
                .selectFrom('pgmcp.resources as s')
                .select(sql<number>`1`.as('one'))
                .where('s.uri', '=', eb.ref('c.uri'))
                .where(sql<boolean>`s.sensitive`),
            )
            .$castTo<boolean>()
            .as('sensitive'),
        ];
      })
      .where((eb) =>
        eb(
          'c.seq',
          '=',
          eb.fn.any(eb.cast<string[]>(eb.val(args.seqs), sql`bigint[]`)),
        ),
      ),
);

/**
 * Which of `uris` exist and the request role may read, in the order given. A `file:`-style
 * directory URI (ending in "/") counts when the role can read something under it; `upperBounds`
 * holds each directory's exclusive prefix bound, null for other URIs.
 */
export const READABLE_URIS: PreparedQuery<
  { uris: readonly string[]; upperBounds: readonly (string | null)[] },
  { uri: string }
> = {
  name: 'pgmcp_readable_uris',
  text: `select x.uri
           from unnest($1::text[], $2::text[]) with ordinality as x(uri, upper_bound, position)
          where exists (select from pgmcp.resources r where r.uri = x.uri)
             or (x.upper_bound is not null
                 and exists (select from pgmcp.resources r
                              where r.uri > x.uri and r.uri < x.upper_bound))
          order by x.position`,
  values: (args) => [args.uris, args.upperBounds],
};

/** One page of the pull path's change log, as the request role may read it (CHANGES_SINCE). */
export interface PulledChangeRow {
  /** The database's clock (epoch seconds) and snapshot xmin when the page was read. */
  readonly now: string;
  readonly xmin: string;
  /** The primary's WAL insert position then, as a byte count (what standby reads must pass). */
  readonly insert_lsn: string;
  /** The capture epoch then (pgmcp.capture_epoch(): a new one may have missed changes). */
  readonly epoch: string;
  readonly seq: string | null;
  readonly txid: string | null;
  readonly uri: string | null;
  readonly kind: ChangeKind | null;
  readonly detail: unknown;
}

/**
 * Changes the request role may read (the log's row-level security decides, as for the fan-out)
 * by transactions at or after `horizon`, after (`afterTxid`, `afterSeq`) in (txid, seq) order, at
 * most `limit`; always one row at least, carrying the clock, snapshot xmin, insert position and
 * capture epoch.
 * On the primary: a chain of pages continues from one page's snapshot, so a page read on a server
 * that had replayed less than the one before could skip a transaction for good.
 */
export const CHANGES_SINCE: PreparedQuery<
  { horizon: string; afterTxid: string; afterSeq: string; limit: number },
  PulledChangeRow
> = {
  name: 'pgmcp_changes_since',
  text: `select extract(epoch from now())::bigint::text as now,
                pg_snapshot_xmin(pg_current_snapshot())::text as xmin,
                (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as insert_lsn,
                pgmcp.capture_epoch()::text as epoch,
                c.seq::text, c.txid::text, c.uri, c.kind, c.detail
           from (select) one
           left join lateral (
             select seq, txid, uri, kind, detail from pgmcp.changes
              where txid >= $1::xid8 and (txid, seq) > ($2::xid8, $3::bigint)
              order by txid, seq
              limit $4) c on true`,
  values: (args) => [args.horizon, args.afterTxid, args.afterSeq, args.limit],
  onPrimary: true,
};
