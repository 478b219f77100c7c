// What the WAL change source writes to pgmcp.changes for decoded rows (migrations/0041): each row
// named by its table's primary key, in key order, as the capture triggers name it. A table's key
// is looked up once per description the server sends of it (pgoutput sends a new one after any
// change to the table's definition), so a batch reaches PostgreSQL as parallel arrays it inserts
// without parsing or reordering anything per row.
import type pg from 'pg';
import type { DecodedChange, TupleText } from './pgoutput.js';
import type { DecodedTransaction } from './replication-stream.js';

/** A table as the log names it: `schema.table` quoted as format('%I.%I') quotes it, and its key. */
interface TableKey {
  readonly relation: string;
  /** The primary key's columns in key order; none when the table is gone or has no key. */
  readonly columns: readonly string[];
  /**
   * Why the WAL cannot name some of the table's changes by their key, and whether inserts are among
   * them (a table with no key) or only updates and deletions (a replica identity without the key,
   * whose old rows come without it); none when it can.
   */
  readonly unnamed?: { readonly why: string; readonly insertsToo: boolean };
}

/** One row of pgmcp.changes, with the commit position of the transaction it came from. */
interface LoggedRow {
  readonly lsn: string;
  readonly relation: string;
  readonly kind: DecodedChange['kind'];
  readonly detail: string;
}

// Each table the descriptions name, with its primary key's columns in key order, as the catalog
// has them when the batch is logged (the capture triggers read the key when the row changes), and
// whether its replica identity carries that key into the WAL's old rows: FULL does, DEFAULT does
// with a primary key, USING INDEX does when the index's key columns hold the primary key's.
const TABLE_KEYS = `
select d.description, format('%I.%I', d.schema_name, d.table_name) as relation,
       c.oid is not null as present, c.relreplident::text as identity, pk.columns,
       c.relreplident = 'f' or (c.relreplident = 'd' and pk.attnums <> '{}')
         or (c.relreplident = 'i'
             and exists (select from pg_index r
                          where r.indrelid = c.oid and r.indisreplident
                            and (r.indkey::smallint[])[0:r.indnkeyatts - 1] @> pk.attnums)) as names_old
  from unnest($1::int[], $2::text[], $3::text[]) as d(description, schema_name, table_name)
  left join (pg_namespace n join pg_class c on c.relnamespace = n.oid)
         on n.nspname = d.schema_name and c.relname = d.table_name
 cross join lateral (
       select coalesce(array_agg(a.attname::text order by k.position), '{}') as columns,
              coalesce(array_agg(k.attnum), '{}') as attnums
         from pg_index i
        cross join lateral unnest(i.indkey::smallint[]) with ordinality as k(attnum, position)
         join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
        where i.indrelid = c.oid and i.indisprimary) as pk`;

/** Why a table present in the catalog cannot have all its changes named; undefined when it can. */
function unnamedWhy(row: {
  columns: string[];
  identity: string;
  names_old: boolean;
}): TableKey['unnamed'] {
  if (row.columns.length === 0)
    return { why: 'it has no primary key', insertsToo: true };
  if (row.names_old) return undefined;
  const identity =
    row.identity === 'n'
      ? 'REPLICA IDENTITY NOTHING'
      : 'REPLICA IDENTITY USING INDEX on an index without its primary key';
  return {
    why: `${identity}: the WAL does not carry the key of its updated and deleted rows (ALTER TABLE … REPLICA IDENTITY DEFAULT)`,
    insertsToo: false,
  };
}

/** The keys of the tables one replication stream describes; its descriptions are numbered by it. */
export class TableKeys {
  readonly #known = new Map<number, TableKey>();

  /** Look up the tables of `transactions` not seen yet, in one query. */
  async learn(
    client: pg.ClientBase,
    transactions: readonly DecodedTransaction[],
  ): Promise<void> {
    const missing = new Map<number, DecodedChange>();
    for (const transaction of transactions)
      for (const change of transaction.changes)
        if (!this.#known.has(change.description))
          missing.set(change.description, change);
    if (missing.size === 0) return;
    const changes = [...missing.values()];
    const { rows } = await client.query<{
      description: number;
      relation: string;
      present: boolean;
      identity: string;
      columns: string[];
      names_old: boolean;
    }>(TABLE_KEYS, [
      changes.map((change) => change.description),
      changes.map((change) => change.schema),
      changes.map((change) => change.table),
    ]);
    // A table gone since keeps no key: its rows are skipped (there is nothing left to read them in).
    for (const row of rows) {
      const unnamed = row.present ? unnamedWhy(row) : undefined;
      this.#known.set(row.description, {
        relation: row.relation,
        columns: row.columns,
        ...(unnamed === undefined ? {} : { unnamed }),
      });
    }
  }

  /**
   * The rows `transactions` log, in commit order; learn() must have seen them. `unnamed` says, of
   * each table with a change the WAL did not name by its key, why: such a batch cannot be logged
   * row by row.
   */
  rows(transactions: readonly DecodedTransaction[]): {
    rows: LoggedRow[];
    unnamed: Map<string, string>;
  } {
    const rows: LoggedRow[] = [];
    const unnamed = new Map<string, string>();
    for (const transaction of transactions) {
      const lsn = lsnLiteral(transaction.commitLsn);
      for (const change of transaction.changes) {
        const key = this.#known.get(change.description);
        if (key === undefined) continue;
        const named =
          key.unnamed !== undefined &&
          (key.unnamed.insertsToo || change.kind !== 'created')
            ? undefined
            : changeRows(change, key, lsn);
        if (named !== undefined) rows.push(...named);
        else
          unnamed.set(
            key.relation,
            key.unnamed?.why ?? 'the WAL carried no value of its primary key',
          );
      }
    }
    return { rows, unnamed };
  }
}

/**
 * A change's rows: none when its table is gone, undefined when a key value is missing (the change
 * cannot be named); an update that changed the key is the old key deleted and the new one created,
 * as the capture triggers log it.
 */
function changeRows(
  change: DecodedChange,
  key: TableKey,
  lsn: string,
): LoggedRow[] | undefined {
  if (key.columns.length === 0) return [];
  const values = (tuple: TupleText) =>
    key.columns.map((column) => tuple[column] ?? null);
  const row = (
    kind: DecodedChange['kind'],
    named: (string | null)[],
  ): LoggedRow => ({
    lsn,
    relation: key.relation,
    kind,
    detail: JSON.stringify({
      schema: change.schema,
      table: change.table,
      key: named,
    }),
  });
  const next = values(change.key);
  if (next.includes(null)) return undefined;
  if (change.old === undefined) return [row(change.kind, next)];
  const old = values(change.old);
  if (old.includes(null)) return undefined;
  if (old.every((value, index) => value === next[index]))
    return [row(change.kind, old)];
  return [row('deleted', old), row('created', next)];
}

/** What logTransactions did with a batch. */
export interface LoggedBatch {
  /** Rows logged; -1 when every transaction was a replay, 0 when logged as a new epoch. */
  readonly logged: number;
  /** Each table with a change not named by its key (the batch is a new epoch then), and why. */
  readonly unnamed: ReadonlyMap<string, string>;
}

/**
 * Log decoded transactions (in commit order) in one transaction, each once: one whose commit is at
 * or before the last logged is a replay and is skipped. A batch holding a transaction whose rows
 * were not kept (`overflowed`), or a change the WAL did not name by its key (a table whose replica
 * identity does not carry its primary key, or that has none), is logged as a new capture epoch
 * instead (migrations/0042): every stream resyncs, which covers the rows of the whole batch.
 */
export async function logTransactions(
  client: pg.ClientBase,
  keys: TableKeys,
  transactions: readonly DecodedTransaction[],
): Promise<LoggedBatch> {
  const last = transactions.at(-1);
  if (last === undefined) return { logged: 0, unnamed: new Map() };
  let unnamed: ReadonlyMap<string, string> = new Map();
  if (!transactions.some((transaction) => transaction.overflowed === true)) {
    await keys.learn(client, transactions);
    const batch = keys.rows(transactions);
    if (batch.unnamed.size === 0)
      return { logged: await logRows(client, last, batch.rows), unnamed };
    unnamed = batch.unnamed;
  }
  const { rows } = await client.query<{ epoch: string }>(
    'select pgmcp.log_wal_resync($1::pg_lsn)::text as epoch',
    [lsnLiteral(last.commitLsn)],
  );
  return { logged: rows[0]?.epoch === '-1' ? -1 : 0, unnamed };
}

async function logRows(
  client: pg.ClientBase,
  last: DecodedTransaction,
  rows: readonly LoggedRow[],
): Promise<number> {
  const { rows: result } = await client.query<{ logged: number }>(
    `select pgmcp.log_wal_rows($1::pg_lsn, $2::pg_lsn[], $3::text[], $4::text[], $5::jsonb[])
              as logged`,
    [
      lsnLiteral(last.commitLsn),
      rows.map((row) => row.lsn),
      rows.map((row) => row.relation),
      rows.map((row) => row.kind),
      rows.map((row) => row.detail),
    ],
  );
  return result[0]?.logged ?? 0;
}

function lsnLiteral(position: bigint): string {
  return `${(position >> 32n).toString(16)}/${(position & 0xffffffffn).toString(16)}`;
}
