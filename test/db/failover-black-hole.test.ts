// Failover from a primary lost without a reset (a black hole: its processes stopped, its sockets
// open, nothing answered): the sessions held on it would wait for ever, so a move of the primary
// ends them. The WAL reader reads the slot on the promoted standby, and the feed leader's session
// is dropped, so leadership is taken again there. Its own pair: the promotion cannot be undone.
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  createFeedLeadership,
  type DatabaseHandle,
  type FeedLeadership,
  type WalCapture,
} from '../../src/db/index.js';
import { waitFor, type StandbyPair } from '../setup/standby-pair.js';
import { insertLogged, startWalPair } from '../setup/wal-pair.js';

let pair: StandbyPair;
let db: DatabaseHandle | undefined;
let capture: WalCapture | undefined;
let leadership: FeedLeadership | undefined;
const lost: unknown[] = [];
const lines: string[] = [];

/** Whether the change log of the promoted standby has the insert of key `id`. */
const loggedOnStandby = (id: number): Promise<boolean> =>
  insertLogged(pair, 'standby', { table: 'black_hole', id });

beforeAll(async () => {
  ({ pair, db, capture } = await startWalPair('black_hole', lines));
  leadership = createFeedLeadership(db.feed, (error) => lost.push(error));
}, 120_000);

afterAll(async () => {
  // Thawed and stopped first: nothing then waits on its frozen sessions.
  pair?.stopPrimary('immediate');
  await capture?.stop();
  await leadership?.close();
  await db?.close();
  pair?.close();
});

it('leaves a black-holed primary for the promoted standby: the WAL reader reads a slot there, and the leader session is dropped and taken again there', async () => {
  await waitFor(() => capture?.consuming === true);
  expect(await leadership?.tryLead()).toBe(true);
  await pair.sql('primary', `insert into black_hole values (1, 'before')`);
  await pair.caughtUp();
  pair.freezePrimary();
  await pair.promoteStandby();
  await waitFor(() => db?.primary?.url === pair.standbyUrl);

  await waitFor(
    async () =>
      (
        await pair.sql(
          'standby',
          `select count(*)::int as n from pg_replication_slots where slot_name = '${capture?.slot}' and active`,
        )
      )[0]?.['n'] === 1,
  );
  await pair.sql('standby', `insert into black_hole values (2, 'after')`);
  await waitFor(() => loggedOnStandby(2));

  await waitFor(() => lost.length === 1);
  expect(String(lost[0])).toContain('the primary moved');
  expect(leadership?.leading).toBe(false);
  expect(await leadership?.tryLead()).toBe(true);
  const locks = await pair.sql(
    'standby',
    `select count(*)::int as n from pg_locks l join pg_stat_activity a using (pid)
      where l.locktype = 'advisory' and l.granted and a.application_name like 'pgmcp-leader%'`,
  );
  expect(locks[0]?.['n']).toBe(1);
}, 240_000);
