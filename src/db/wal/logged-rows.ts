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
}

/** One row of pgmcp.changes, with the commit position of the transaction it came from. */
interface LoggedRow {
  readonly lsn: string;
  readonly relation: string;
  readonly kind: DecodedChange['kind'];
  readonly detail: string;
}

// Each table the descriptions name, with its primary key's columns in key order, as the catalog
// has them when the batch is logged (the capture triggers read the key when the row changes).
const TABLE_KEYS = `
select d.description, format('%I.%I', d.schema_name, d.table_name) as relation,
       array(select a.attname::text
               from pg_namespace n
               join pg_class c on c.relnamespace = n.oid
               join pg_index i on i.indrelid = c.oid and i.indisprimary
              cross join lateral unnest(i.indkey::smallint[]) with ordinality as k(attnum, position)
               join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum
              where n.nspname = d.schema_name and c.relname = d.table_name
              order by k.position) as columns
  from unnest($1::int[], $2::text[], $3::text[]) as d(description, schema_name, table_name)`;

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
      columns: string[];
    }>(TABLE_KEYS, [
      changes.map((change) => change.description),
      changes.map((change) => change.schema),
      changes.map((change) => change.table),
    ]);
    for (const row of rows)
      this.#known.set(row.description, {
        relation: row.relation,
        columns: row.columns,
      });
  }

  /** The rows `transactions` log, in commit order; learn() must have seen them. */
  rows(transactions: readonly DecodedTransaction[]): LoggedRow[] {
    const rows: LoggedRow[] = [];
    for (const transaction of transactions) {
      const lsn = lsnLiteral(transaction.commitLsn);
      for (const change of transaction.changes) {
        const key = this.#known.get(change.description);
        if (key !== undefined) rows.push(...changeRows(change, key, lsn));
      }
    }
    return rows;
  }
}

/**
 * A change's rows: none when its table has no key or a key value is missing; an update that
 * changed the key is the old key deleted and the new one created, as the capture triggers log it.
 */
function changeRows(
  change: DecodedChange,
  key: TableKey,
  lsn: string,
): LoggedRow[] {
  if (key.columns.length === 0) return [];
  const values = (tuple: TupleText) =>
    key.columns.map((column) => tuple[column] ?? null);
  const row = (
    kind: DecodedChange['kind'],
    named: (string | null)[],
  ): LoggedRow[] =>
    named.includes(null)
      ? []
      : [
          {
            lsn,
            relation: key.relation,
            kind,
            detail: JSON.stringify({
              schema: change.schema,
              table: change.table,
              key: named,
            }),
          },
        ];
  const next = values(change.key);
  if (change.old === undefined) return row(change.kind, next);
  const old = values(change.old);
  if (old.every((value, index) => value === next[index]))
    return row(change.kind, old);
  return [...row('deleted', old), ...row('created', next)];
}

/**
 * Log decoded transactions (in commit order) in one transaction, each once: one whose commit is at
 * or before the last logged is a replay and is skipped. Returns how many rows were logged, -1 when
 * every transaction was a replay. A batch holding a transaction whose rows were not kept
 * (`overflowed`) is logged as a new capture epoch instead (migrations/0042): every stream resyncs,
 * which covers the rows of the whole batch; it returns 0 then.
 */
export async function logTransactions(
  client: pg.ClientBase,
  keys: TableKeys,
  transactions: readonly DecodedTransaction[],
): Promise<number> {
  const last = transactions.at(-1);
  if (last === undefined) return 0;
  if (transactions.some((transaction) => transaction.overflowed === true)) {
    const { rows } = await client.query<{ epoch: string }>(
      'select pgmcp.log_wal_resync($1::pg_lsn)::text as epoch',
      [lsnLiteral(last.commitLsn)],
    );
    return rows[0]?.epoch === '-1' ? -1 : 0;
  }
  await keys.learn(client, transactions);
  const rows = keys.rows(transactions);
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
