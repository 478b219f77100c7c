// A primary and its streaming standby whose primary serves the WAL change source with one exposed
// table `public.<table> (id int primary key, v text)`: where the WAL source's failover tests start.
import type { DatabaseHandle, WalCapture } from '../../src/db/index.js';
import { startTestWalCapture } from './logical-cluster.js';
import { migrateDatabase } from './migrate-database.js';
import {
  pairDatabase,
  startStandbyPair,
  type StandbyPair,
} from './standby-pair.js';

export interface WalPair {
  readonly pair: StandbyPair;
  /** The primary's database, following a promoted standby (pairDatabase). */
  readonly db: DatabaseHandle;
  readonly capture: WalCapture;
}

/** Start the pair, migrate and expose `table`, and read its slot; log lines go to `lines`. */
export async function startWalPair(
  table: string,
  lines: string[],
): Promise<WalPair> {
  const pair = await startStandbyPair();
  try {
    await migrateDatabase(pair.primaryUrl, async (admin) => {
      await admin.query(
        `create table ${table} (id int primary key, v text);
         select pgmcp.expose_table('public.${table}');`,
      );
    });
    const db = pairDatabase(pair, lines);
    return { pair, db, capture: await startTestWalCapture(db, lines) };
  } catch (error) {
    pair.close();
    throw error;
  }
}

/** Whether `server`'s change log has the insert of key `id` into `public.<table>`. */
export async function insertLogged(
  pair: StandbyPair,
  server: 'primary' | 'standby',
  row: { readonly table: string; readonly id: number },
): Promise<boolean> {
  const rows = await pair.sql(
    server,
    `select count(*)::int as n from pgmcp.changes
      where relation = 'public.${row.table}' and detail->'key'->>0 = '${row.id}'`,
  );
  return rows[0]?.['n'] === 1;
}
