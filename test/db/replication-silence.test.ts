// A replication stream whose server goes silent without closing the connection (its walsender
// stopped: a black hole) fails once it has heard nothing for twice wal_sender_timeout, so the WAL
// reader connects again rather than wait for ever. A private logical cluster: a backend is stopped.
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  openReplicationStream,
  WAL_ROW_LIMITS,
  type ReplicationStream,
} from '../../src/db/wal/replication-stream.js';
import {
  startLogicalCluster,
  type LogicalCluster,
} from '../setup/logical-cluster.js';
import { waitFor } from '../setup/standby-pair.js';

const SLOT = 'pgmcp_silence_test';
const PUBLICATION = 'pgmcp_silence_test';
const APPLICATION = 'pgmcp-silence-test';
let cluster: LogicalCluster;
let stream: ReplicationStream | undefined;
let frozen: number | undefined;

async function sql(text: string): Promise<pg.QueryResultRow[]> {
  const client = new pg.Client({ connectionString: cluster.url });
  await client.connect();
  try {
    return (await client.query<pg.QueryResultRow>(text)).rows;
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  cluster = await startLogicalCluster();
  await sql(`create publication ${PUBLICATION}`);
  await sql(`select pg_create_logical_replication_slot('${SLOT}', 'pgoutput')`);
}, 120_000);

afterAll(async () => {
  if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
  await stream?.stop();
  await cluster?.stop();
});

it('fails a stream whose server has sent nothing for twice its wal_sender_timeout', async () => {
  stream = openReplicationStream({
    session: {
      connectionString: cluster.url,
      fallback_application_name: APPLICATION,
      // The bound is read from the walsender's own setting: 1 s gives a 2 s bound.
      options: '-c wal_sender_timeout=1s',
      keepAlive: true,
    },
    slot: SLOT,
    publication: PUBLICATION,
    ...WAL_ROW_LIMITS,
    onTransactions: () => Promise.resolve(),
  });
  const found: { pid?: number } = {};
  await waitFor(async () => {
    const rows = await sql(
      `select pid from pg_stat_replication where application_name = '${APPLICATION}'`,
    );
    found.pid = rows[0]?.['pid'] as number | undefined;
    return found.pid !== undefined;
  });
  frozen = found.pid;
  if (frozen !== undefined) process.kill(frozen, 'SIGSTOP');
  await expect(stream.done).rejects.toThrow(/the server sent nothing for/);
}, 120_000);
