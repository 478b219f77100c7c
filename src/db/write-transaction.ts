// Writes the server's login makes beside requests (audit rows, legacy sessions): each in its own
// read-write transaction, since the pool's sessions default to read-only.
import type pg from 'pg';
import { connectClient, type DatabaseHandle } from './pool.js';
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
