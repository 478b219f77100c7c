// Writes the server's login makes beside requests (audit rows, client sessions): each in its own
// read-write transaction, since the pool's sessions default to read-only.
import type pg from 'pg';
import { ImplicitTransaction } from '../driver/index.js';
import { connectClient, type DatabaseHandle } from '../pool.js';
import { toDatabaseError } from './sqlstate.js';

/** Run `work` between BEGIN READ WRITE and COMMIT; a connection that cannot roll back is dropped. */
export async function inWriteTransaction<T>(
  db: DatabaseHandle,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await connectClient(db);
  let broken: Error | undefined;
  try {
    await client.query('begin read write');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch((rollbackError: unknown) => {
      broken =
        rollbackError instanceof Error ? rollbackError : new Error('rollback');
    });
    throw toDatabaseError(error);
  } finally {
    client.release(broken);
  }
}

/**
 * One statement in its own read-write transaction, in one round trip when the handle drives the driver internals (db/driver/)
 * (BEGIN READ WRITE, the statement, COMMIT, then a single Sync): its rows as objects.
 */
export async function writeOneStatement<TRow>(
  db: DatabaseHandle,
  statement: {
    readonly name: string;
    readonly text: string;
    readonly values: readonly unknown[];
  },
): Promise<TRow[]> {
  if (!db.driverInternals)
    return inWriteTransaction(db, async (client) => {
      const { rows } = await client.query<TRow & object>({
        name: statement.name,
        text: statement.text,
        values: [...statement.values],
      });
      return rows;
    });
  const client = await connectClient(db);
  let broken: Error | undefined;
  const transaction = new ImplicitTransaction([
    { name: 'pgmcp_write_begin', text: 'BEGIN READ WRITE', values: [] },
    statement,
    { name: 'pgmcp_write_commit', text: 'COMMIT', values: [] },
  ]);
  try {
    void client.query(transaction as unknown as pg.Submittable);
    const results = await transaction.result;
    return (results[1] ?? []) as TRow[];
  } catch (error) {
    // The backend skipped the rest up to the Sync: the transaction is still open and failed.
    try {
      await client.query('ROLLBACK');
      if (transaction.unsafeToReuse)
        await transaction.forgetPreparedStatements(client);
    } catch (cleanUpError) {
      broken =
        cleanUpError instanceof Error ? cleanUpError : new Error('rollback');
    }
    throw toDatabaseError(error);
  } finally {
    client.release(broken);
  }
}

/** {@link writeOneStatement} for a statement run once per call site, unprepared. */
export function writeUnnamedStatement<TRow>(
  db: DatabaseHandle,
  text: string,
  values: readonly unknown[],
): Promise<TRow[]> {
  return writeOneStatement<TRow>(db, { name: '', text, values });
}
