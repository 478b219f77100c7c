// Failover with the WAL change source (issue 36 point 4): logical slots are not kept on a standby
// before PostgreSQL 17, so once the primary is lost and its standby promoted, the WAL reader makes
// a new slot there, which starts a new capture epoch (a resync for every stream), and logs the
// changes committed on the new primary. Its own pair: the promotion cannot be undone.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type DatabaseHandle, type WalCapture } from '../../src/db/index.js';
import { waitFor, type StandbyPair } from '../setup/standby-pair.js';
import { insertLogged, startWalPair } from '../setup/wal-pair.js';

let pair: StandbyPair;
let db: DatabaseHandle | undefined;
let capture: WalCapture | undefined;
const lines: string[] = [];

/** Whether the change log of `server` has the insert of key `id` into public.failover_wal. */
const logged = (server: 'primary' | 'standby', id: number): Promise<boolean> =>
  insertLogged(pair, server, { table: 'failover_wal', id });

const epoch = async (server: 'primary' | 'standby') =>
  String(
    (await pair.sql(server, 'select pgmcp.capture_epoch()::text as e'))[0]?.[
      'e'
    ],
  );

beforeAll(async () => {
  ({ pair, db, capture } = await startWalPair('failover_wal', lines));
}, 120_000);

afterAll(async () => {
  await capture?.stop();
  await db?.close();
  pair?.close();
});

it('makes a new slot on the promoted standby, in a new capture epoch, and logs the changes committed there', async () => {
  await waitFor(() => capture?.consuming === true);
  await pair.sql('primary', `insert into failover_wal values (1, 'before')`);
  await waitFor(() => logged('primary', 1));
  const before = await epoch('primary');
  await pair.caughtUp();
  pair.stopPrimary('immediate');
  await pair.promoteStandby();
  await waitFor(() => db?.primary?.url === pair.standbyUrl);

  await waitFor(
    async () =>
      (
        await pair.sql(
          'standby',
          `select count(*)::int as n from pg_replication_slots where slot_name = '${capture?.slot}'`,
        )
      )[0]?.['n'] === 1,
  );
  await pair.sql('standby', `insert into failover_wal values (2, 'after')`);
  await waitFor(() => logged('standby', 2));
  expect(await logged('standby', 1)).toBe(true);
  expect(await epoch('standby')).not.toBe(before);
  expect(lines.some((line) => line.includes('created slot'))).toBe(true);
}, 180_000);
