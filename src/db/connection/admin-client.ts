// Start-up and CLI work on a database's administrative login, one short-lived client at a time.
import type pg from 'pg';
import type { DatabaseHandle } from '../pool.js';

/** A read-write client of the administrative login, for start-up and CLI work. */
export type AdminClient = pg.Client;

/** Run `work` on a fresh administrative client of `db`, ended afterwards whatever happens. */
export async function withAdminClient<T>(
  db: DatabaseHandle,
  work: (client: AdminClient) => Promise<T>,
): Promise<T> {
  const client = await db.connectAdmin();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
