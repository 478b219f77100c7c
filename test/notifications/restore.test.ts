// A restore under open listen streams: PostgreSQL goes back to a copy of its data directory taken
// 300 commits earlier, so transaction ids and the WAL position start again below what the feed
// has read. The feed must notice, tell every stream its view may be stale, and deliver every
// change committed afterwards. Runs its own embedded PostgreSQL (the data directory is swapped).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { expect, it } from 'vitest';
import {
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from '../../src/db/index.js';
import {
  listen,
  listenFresh,
  readiness,
  startTestServer,
  until,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';

const ROLE = 'pgmcp_restore_reader';
const LOGIN_PASSWORD = 'restore-test-login';
const URIS = Array.from(
  { length: 50 },
  (_, index) => `notes:///restore/n${String(index).padStart(2, '0')}`,
);

/** Commit one statement per transaction, each with its own parameters. */
async function commitEach(
  url: string,
  text: string,
  values: readonly unknown[][],
): Promise<void> {
  const writer = new pg.Client({ connectionString: url });
  await writer.connect();
  try {
    for (const parameters of values) await writer.query(text, parameters);
  } finally {
    await writer.end();
  }
}

/** Every subscribed URI was heard of among the stream's updates from index `from` on. */
function heardAll(stream: ListenStream, from: number): boolean {
  const heard = new Set(stream.updated().slice(from));
  return URIS.every((uri) => heard.has(uri));
}

it('notices a restore to an earlier copy, tells every stream it may be stale, and delivers every change after it', async () => {
  const state = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-restore-'));
  const data = path.join(state, 'data');
  const copy = path.join(state, 'data-copy');
  const start = (port?: number) =>
    startEmbeddedPostgres({
      stateDirectory: state,
      log: () => undefined,
      port,
    });
  let postgres: EmbeddedPostgres | undefined;
  let server: TestServer | undefined;
  const logLines: string[] = [];
  try {
    postgres = await start(54420);
    const port = postgres.port;
    const url = postgres.connectionString;
    await migrateDatabase(url, async (admin) => {
      await admin.query(`create role ${ROLE} nologin`);
      // Served as the real login (no superuser), on a cluster that keeps pg_control_system()
      // from it: the check must work from the timeline, WAL position and transaction ids alone.
      await admin.query(
        `alter role pgmcp_authenticator login password '${LOGIN_PASSWORD}'`,
      );
      await admin.query(`grant ${ROLE} to pgmcp_authenticator`);
      await admin.query(
        'revoke execute on function pg_control_system() from public',
      );
      await admin.query(
        `insert into pgmcp.resources (uri, name, text, readers)
         select uri, uri, 'v0', '{${ROLE}}' from unnest($1::text[]) uri`,
        [URIS],
      );
      await admin.query(
        `insert into pgmcp.resources (uri, name, text, readers)
         values ('notes:///restore/busy', 'busy', '0', '{}')`,
      );
    });
    // A cold copy of the data directory (-a keeps the owner PostgreSQL runs as): the backup.
    await postgres.stop();
    execFileSync('cp', ['-a', data, copy]);
    postgres = await start(port);
    expect(postgres.port).toBe(port);

    const login = new URL(url);
    login.username = 'pgmcp_authenticator';
    login.password = LOGIN_PASSWORD;
    const asLogin = new pg.Client({ connectionString: login.toString() });
    await asLogin.connect();
    await expect(
      asLogin.query('select pg_control_system()'),
    ).rejects.toMatchObject({ code: '42501' });
    await asLogin.end();
    server = await startTestServer({
      databaseUrl: login.toString(),
      principal: { role: ROLE, claims: {} },
      live: {},
      logLines,
    });
    const subscription = {
      resourceSubscriptions: URIS,
      resourcesListChanged: true,
    };
    const before = await listenFresh(server, subscription);
    // 300 commits after the copy: the feed's horizon passes every transaction id the copy
    // will hand out again.
    await commitEach(
      url,
      `update pgmcp.resources set text = $1 where uri = 'notes:///restore/busy'`,
      Array.from({ length: 300 }, (_, index) => [String(index + 1)]),
    );
    await server.feed?.poll();
    expect(before.updated()).toEqual([]);

    // The restore: stop, put the copy in place, start.
    await postgres.stop();
    rmSync(data, { recursive: true, force: true });
    execFileSync('cp', ['-a', copy, data]);
    postgres = await start(port);
    expect(postgres.port).toBe(port);
    await until(
      async () => (await readiness(server as TestServer)) === 200,
      30_000,
      '/readyz after the restore',
    );
    const after = await listen(server.url, subscription);
    await after.waitFor((messages) => messages.length >= 1);
    // The first read of the restored log finds the history changed; the stream that was open
    // through it hears that everything it watches may have changed.
    await server.feed?.poll();
    await before.waitFor(
      () => before.listChanges() >= 1 && heardAll(before, 0),
      15_000,
    );
    expect(logLines.join('')).toContain("the database's history changed");
    const beforeSeen = before.updated().length;
    const afterSeen = after.updated().length;

    // 50 updates, one transaction each, all with transaction ids below the old horizon.
    await commitEach(
      url,
      `update pgmcp.resources set text = 'v1' where uri = $1`,
      URIS.map((uri) => [uri]),
    );
    await before.waitFor(() => heardAll(before, beforeSeen), 15_000);
    await after.waitFor(() => heardAll(after, afterSeen), 15_000);
    before.close();
    after.close();
  } finally {
    await server?.close();
    await postgres?.stop();
    rmSync(state, { recursive: true, force: true });
  }
}, 180_000);
